// The backend plan's bookkeeping: claims and the printed form.
#include "backend/plan/Plan.h"

#include <sstream>

#include "support/Diagnostics.h"

namespace coconet::backend::plan {

const char* stepName(Step s) {
  switch (s) {
    case Step::Stage: return "stage";
    case Step::DeviceGroup: return "device-group";
    case Step::RowGroup: return "row-group";
    case Step::ScalarChain: return "scalar-chain";
    case Step::Overlap: return "overlap";
    case Step::DeviceAllReduce: return "device-allreduce";
    case Step::AllReducePair: return "allreduce-pair";
    case Step::InDeviceGroup: return "in device-group";
    case Step::InRowGroup: return "in row-group";
    case Step::InScalarChain: return "in scalar-chain";
    case Step::InReduction: return "in reduction";
    case Step::InBag: return "in bag";
    case Step::InRun: return "in run";
    case Step::OverlapProducer: return "overlap producer";
    case Step::InOverlap: return "in overlap";
    case Step::InAllReducePair: return "in allreduce-pair";
    case Step::Given: return "given";
  }
  return "?";
}

const char* storageName(Storage s) {
  switch (s) {
    case Storage::Input: return "input";
    case Storage::State: return "state";
    case Storage::Buffer: return "buffer";
    case Storage::Direct: return "direct";
    case Storage::BlockOnly: return "block-only";
    case Storage::NcclOnly: return "nccl-only";
    case Storage::FallbackOnly: return "fallback-only";
    case Storage::InBag: return "in-bag";
    case Storage::InKernel: return "in-kernel";
    case Storage::InChunks: return "in-chunks";
    case Storage::InReduction: return "in-reduction";
    case Storage::Alias: return "alias";
    case Storage::Transposed: return "transposed";
    case Storage::Permuted: return "permuted";
  }
  return "?";
}

Decision& Plan::claim(int id, Step step, int owner, const char* pass) {
  auto i = static_cast<size_t>(id);
  if (i >= d_.size()) throw InternalError("plan: " + std::string(pass) + " claims stage " + std::to_string(id) + ", which does not exist");
  if (claimed_[i])
    throw InternalError("plan: stage " + std::to_string(id) + " claimed twice, as " + stepName(d_[i].step) + " by " + claimed_[i] +
                        " and as " + stepName(step) + " by " + pass);
  claimed_[i] = pass;
  d_[i].step = step;
  d_[i].owner = owner;
  return d_[i];
}

void Plan::checkComplete(const ir::Program& p) const {
  for (size_t i = 0; i < d_.size(); ++i)
    if (!claimed_[i]) throw InternalError("plan: stage " + std::to_string(i) + " ('" + p.stages[i].name + "') has no owner");
}

namespace {

std::string stageRef(const ir::Program& p, int id) {
  if (id < 0 || static_cast<size_t>(id) >= p.stages.size()) return "?";
  return "%" + std::to_string(id) + " '" + p.stages[static_cast<size_t>(id)].name + "'";
}

// A reason as one line: newlines become "; ".
std::string oneLine(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\n') {
      if (!r.empty() && r.back() != ' ') r += "; ";
    } else
      r += c;
  }
  while (!r.empty() && (r.back() == ' ' || r.back() == ';')) r.pop_back();
  return r;
}

}  // namespace

std::string print(const ir::Program& p, const Plan& plan, const std::string& header) {
  std::ostringstream os;
  os << header << "\n";
  int launches = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Decision& d = plan.at(static_cast<int>(i));
    const int id = static_cast<int>(i);
    os << "  " << stageRef(p, id) << ": ";
    if (isLaunch(d.step)) {
      launches += d.foldedInto < 0;
      os << (d.foldedInto < 0 ? "launch " : "") << stepName(d.step);
      if (d.step == Step::Stage) os << " " << ir::stageKindName(p.stages[i].kind);
      if (!d.what.empty()) os << " '" << d.what << "'";
      if (d.owner != id && d.owner >= 0) os << " of " << stageRef(p, d.owner);
      if (d.foldedInto >= 0) os << " folded into " << stepName(plan.at(d.foldedInto).step) << " " << stageRef(p, d.foldedInto);
    } else if (d.step == Step::Given) {
      os << "given";
    } else {
      os << stepName(d.step) << " of " << stageRef(p, d.owner);
    }
    os << "; storage " << storageName(d.storage);
    if (d.storage == Storage::Direct) os << " into " << d.intoWhat;
    if (d.storage == Storage::BlockOnly) os << " (1 / " << d.intoWhat << " of it)";
    if (d.from >= 0) os << " of " << stageRef(p, d.from);
    os << "\n";
    if (!d.why.empty()) os << "      why: " << oneLine(d.why) << "\n";
    if (!d.unchunked.empty()) os << "      overlap unchunked: " << oneLine(d.unchunked) << "\n";
  }
  os << "  " << launches << (launches == 1 ? " launch\n" : " launches\n");
  return os.str();
}

}  // namespace coconet::backend::plan
