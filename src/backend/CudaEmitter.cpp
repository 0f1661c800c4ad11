// CUDA code generation for a scheduled IR program (see CudaEmitter.h): emission as a whole
// (Emitter.h says which file defines what).
#include "backend/CudaEmitter.h"
#include "ir/Fallback.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "backend/Emitter.h"
#include "support/Files.h"

namespace coconet::backend::detail {

using plan::Step;
using plan::Storage;

namespace {
const char* kEnvHeader =
#include "coconet_env_text.inc"
    ;
const char* kRuntimeHeader =
#include "coconet_runtime_text.inc"
    ;
const char* kDeviceHeader =
#include "coconet_device_text.inc"
    ;
}  // namespace

void Emitter::makePlan() {
  if (!o_.embedded) warnUnreadKnobs();
  checkSupported();
  planBags();
  planAllReducePairs();
  planRowGroups();
  planRuns();
  planOverlaps();
  planDirect();
  planDeviceGroups();
  planDeviceAllReduces();
  planDeviceChunked();
  planInlinedReductions();
  planFoldedReductions();
  planScalarChains();
  planChainPrologues();
  planDeviceExchanges(StageKind::Send, plan_.devSend);
  planDeviceExchanges(StageKind::AllToAll, plan_.devA2A);
  assemblePlan();
  warnUnfusedRowGroups();
  warnKnobsWithoutDevice();
  findEvenNeed();
}

void Emitter::findEvenNeed() {
  evenNeed_.clear();
  auto sliced = [&](int id) {
    const TensorType& t = p_.stages[static_cast<size_t>(id)].type;
    return t.group && t.layout.kind == Layout::Sliced;
  };
  for (size_t i = 0; i < p_.stages.size() && evenNeed_.empty(); ++i) {
    const Stage& s = p_.stages[i];
    const plan::Decision& d = plan_.at(static_cast<int>(i));
    bool touches = sliced(static_cast<int>(i));
    for (int o : s.operands) touches = touches || sliced(o);
    if (!touches) continue;
    const std::string owner = d.owner >= 0 ? p_.stages[static_cast<size_t>(d.owner)].name : s.name;
    switch (d.step) {
      case Step::Overlap:
      case Step::OverlapProducer:
      case Step::InOverlap: evenNeed_ = "the overlap of '" + owner + "'"; break;
      default: break;  // (a send of a sliced value goes to the next group's rank at its place: the same block)
    }
  }
}

void Emitter::warnEvenSizes() const {
  if (!o_.diags) return;
  for (auto& r : p_.requirements) {
    if (!r.even || fallbackRuns(r) || evenUnneeded(r)) continue;
    // The rank counts of one node (2, 4, 8) it rules out, and those up to 64 it admits, where
    // the sizes are known (the requirement depends on world.size alone).
    std::vector<int> fails, runs;
    bool known = true;
    for (int P = 1; P <= 64 && known; ++P) {
      const std::map<std::string, int64_t> env{{"world.size", P}};
      std::optional<int64_t> l, rr;
      try {
        l = r.lhs.evaluate(env), rr = r.rhs.evaluate(env);
      } catch (const ast::SizeOverflow&) {
        known = false;
      }
      if (!l || !rr) known = false;
      if (!known) break;
      const bool holds = *l == *rr;  // (an even requirement is a remainder equal to 0)
      if (holds) runs.push_back(P);
      if (!holds && (P == 2 || P == 4 || P == 8)) fails.push_back(P);
    }
    if (!known || fails.empty()) continue;
    std::string failList, runList;
    for (size_t i = 0; i < fails.size(); ++i) failList += (i ? (i + 1 == fails.size() ? " or " : ", ") : "") + std::to_string(fails[i]);
    for (size_t i = 0; i < runs.size(); ++i) runList += (i ? ", " : "") + std::to_string(runs[i]);
    o_.diags->warning(r.loc, "with these sizes the CUDA code cannot run on " + failList + " ranks: " + r.str() + " (" + r.reason +
                                 "; the CUDA code's slices are even in " + evenNeed_ + "); of 1 to 64 ranks it runs on " + runList);
  }
}

bool Emitter::fallbackTakesUneven() const {
  CompileOptions fo = fallbackOptions();
  fo.diags = nullptr;  // (a probe: the fallback's own emitter warns where it is written)
  Emitter probe(*o_.unscheduled, fo);
  probe.makePlan();
  return probe.evenNeed_.empty();
}

void Emitter::findFallback() {
  for (auto& r : p_.requirements)
    if (scheduleOwn(r) && !evenUnneeded(r)) fallbackWhenNot_.push_back(&r);
  // Uneven slices that only this plan's forms cannot take: the program without its schedule
  // runs them where its plan takes them.
  const bool evenOwn =
      std::any_of(p_.requirements.begin(), p_.requirements.end(), [&](const ir::Requirement& r) { return r.even && !scheduleOwn(r); });
  if (o_.unscheduled && !evenNeed_.empty() && evenOwn && fallbackTakesUneven())
    for (auto& r : p_.requirements)
      if (r.even && !scheduleOwn(r)) fallbackWhenNot_.push_back(&r);
  if (o_.unscheduled)
    for (auto& [cond, why] : unprofitable()) {
      fallbackWhen_.push_back(cond);
      fallbackWhy_.push_back(why);
    }
  // A tuning file's rule: below so many bytes of inputs (the same on every rank) the program
  // without its schedule was measured faster.
  if (o_.unscheduled && o_.tuning && o_.tuning->unscheduledBelowBytes > 0) {
    const ir::SizeExpr bytes = ir::inputBytes(p_);
    fallbackWhen_.push_back("(" + cxx(bytes) + ") < " + std::to_string(o_.tuning->unscheduledBelowBytes) + "LL");
    fallbackWhy_.push_back("the inputs hold fewer than " + std::to_string(o_.tuning->unscheduledBelowBytes) + " bytes (" + bytes.str() +
                           "; the tuning file " + o_.tuning->tunedBy + ": " + o_.tuning->unscheduledWhy + ")");
  }
}

CompileOptions Emitter::fallbackOptions() const {
  CompileOptions fo = o_;
  fo.unscheduled = nullptr;
  fo.embedded = true;
  fo.className = cls_ + "_unscheduled";
  fo.schedulePath.clear();
  fo.scheduleText.clear();
  return fo;
}

std::string Emitter::planText() {
  makePlan();
  std::string text = plan::print(
      p_, plan_,
      "plan of " + p_.name + (o_.embedded ? " without its schedule" : "") + (o_.deviceCollectives ? "" : " (--no-device-collectives)"));
  if (std::any_of(p_.stages.begin(), p_.stages.end(), [](const Stage& s) { return s.type.group && s.type.layout.kind == Layout::Sliced; }))
    text += !evenNeed_.empty() ? "  slices: even only (" + evenNeed_ + ")\n"
            : usesDevice()     ? "  slices: uneven blocks taken everywhere (by the device-API forms' NCCL calls)\n"
                               : "  slices: uneven blocks taken everywhere\n";
  if (o_.embedded) return text;
  findFallback();
  if (fallbackWhenNot_.empty() && fallbackWhen_.empty()) return text;
  text += "run() takes the program without its schedule (" + cls_ + "_unscheduled) where\n";
  for (const ir::Requirement* r : fallbackWhenNot_)
    text += (scheduleOwn(*r) ? "  the schedule's requirement " : "  the even requirement ") + r->str() + " does not hold" +
            (scheduleOwn(*r) ? "" : " (uneven slices: " + evenNeed_ + " takes even ones only)") + "\n";
  for (const std::string& c : fallbackWhy_) text += "  " + c + ": the schedule does not pay\n";
  const CompileOptions fo = fallbackOptions();
  return text + Emitter(*o_.unscheduled, fo).planText();
}

void Emitter::run(std::vector<std::string>& files) {
  makePlan();
  makeDirectories(o_.outDir);
  if (o_.embedded) {  // the fallback of a scheduled program: its class only
    write(cls_ + ".h", headerText(), files);
    write(cls_ + ".cu", sourceText(), files);
    return;
  }
  findFallback();
  warnEvenSizes();
  if (!fallbackWhenNot_.empty() || !fallbackWhen_.empty()) {
    const CompileOptions fo = fallbackOptions();
    Emitter fallback(*o_.unscheduled, fo);
    std::vector<std::string> written;
    fallback.run(written);
    for (auto& f : written) {
      std::ifstream in(f);
      fallbackText_ += std::string(std::istreambuf_iterator<char>(in), {});
    }
    files.insert(files.end(), written.begin(), written.end());
    fallbackCls_ = fo.className;
    fallbackDevice_ = fallback.usesDevice();
  }
  const std::string tuningHeader = tuning::header(tuning_, o_.arch, tuningMeasured_);
  write("coconet_env.h", kEnvHeader, files);
  write("coconet_tuning.h", tuningHeader, files);
  write("coconet_runtime.cuh", kRuntimeHeader, files);
  if (usesDeviceHeader()) write("coconet_device.cuh", kDeviceHeader, files);
  std::string header = headerText(), source = sourceText(), driver = driverText();
  write(cls_ + ".h", header, files);
  write(cls_ + ".cu", source, files);
  write(cls_ + "_main.cu", driver, files);
  write("CMakeLists.txt", cmakeText(), files);
  if (o_.torch) writeTorchPackage(files);
  write("manifest.json",
        manifestText(header + source + driver + fallbackText_ + kEnvHeader + tuningHeader + kRuntimeHeader +
                     (usesDeviceHeader() ? kDeviceHeader : "")),
        files);
}

void Emitter::write(const std::string& name, const std::string& text, std::vector<std::string>& files) {
  auto path = (std::filesystem::path(o_.outDir) / name).string();
  writeFile(path, text);
  files.push_back(path);
}

void Emitter::checkSupported() {
  for (auto& s : p_.stages) {
    if (s.type.rank() > 8) throw std::runtime_error("stage '" + s.name + "' has rank > 8, which the CUDA backend does not support");
    if (s.kind == StageKind::Matmul) {
      DType a = p_.stages[s.operands[0]].type.dtype, b = p_.stages[s.operands[1]].type.dtype;
      if (a != b || a != s.type.dtype)
        throw std::runtime_error("stage '" + s.name + "': the CUDA backend multiplies matrices of one type only (" + ast::dtypeName(a) +
                                 " x " + ast::dtypeName(b) + " -> " + ast::dtypeName(s.type.dtype) + ")");
      if (a != DType::F16 && a != DType::BF16 && a != DType::F32 && a != DType::F64)
        throw std::runtime_error("stage '" + s.name + "': matmul of " + ast::dtypeName(a));
    }
  }
}

std::string Emitter::stageComment(const Stage& s) const {
  std::string c = "// " + s.name + ": " + stageKindName(s.kind) + " -> " + s.type.str();
  if (!s.fusedInto.empty()) c += " (fused group '" + s.fusedInto + "')";
  return c;
}

std::string Emitter::commOf(const GroupInfo* g) const {
  if (!g || g->depth == 0) return "comm_";
  return "gcomm_[" + std::to_string(groupIndex(g)) + "]";
}

int Emitter::groupIndex(const GroupInfo* g) const {
  for (size_t i = 0; i < p_.groups.size(); ++i)
    if (p_.groups[i].get() == g) return static_cast<int>(i);
  return 0;
}

}  // namespace coconet::backend::detail

namespace coconet::backend {

std::vector<std::string> emitCuda(const ir::Program& p, const CompileOptions& o) {
  std::vector<std::string> files;
  detail::Emitter(p, o).run(files);
  return files;
}

std::string planText(const ir::Program& p, const CompileOptions& o) { return detail::Emitter(p, o).planText(); }

}  // namespace coconet::backend
