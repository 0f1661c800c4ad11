// run()'s body: its checks, shapes and storage, then each stage's code as the plan says.
#include "backend/CudaEmitter.h"
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

void Emitter::emitBody() {
  auto& b = body_;
  b << "  (void)sc;\n  (void)seed;\n  const coconet_rt::SizeMath S_{\"" << p_.name << "\"};\n  (void)S_;\n";
  emitArgumentChecks();
  emitGroupCoordinates();
  emitRequirementChecks();
  emitFallbackCall();
  emitUnevenFlag();
  emitStorage();
  // Stages in order, as the plan says (with --timeline, a mark on stream_ after each launch).
  if (o_.timeline) b << "  tl_.begin(stream_, comm_, rank_, \"" << p_.name << "\");\n";
  for (size_t i = 0; i < p_.stages.size(); ++i) emitPlanned(static_cast<int>(i));
  emitResults();
}

// run()'s checks of its sizes (positive, as compiled, the same on every rank) and scalars (in
// their types' ranges, dropout probabilities in [0, 1)).
void Emitter::emitArgumentChecks() {
  auto& b = body_;
  // Sizes must be positive, and one bound at compile time (folded into the shapes) must have
  // that value; requirements must hold.
  for (auto& prm : p_.params) {
    if (!prm.isSize) continue;
    b << "  if (sz.s_" << prm.name << " <= 0) throw coconet_rt::Error(\"" << p_.name << ": size " << prm.name
      << " is \" + std::to_string(sz.s_" << prm.name << ") + \"; sizes must be positive\");\n";
    if (prm.value)
      b << "  coconet_rt::checkBoundSize(sz.s_" << prm.name << ", " << prm.ivalue << "LL, \"" << p_.name << "\", \"" << prm.name
        << "\");\n";
  }
  // Every rank must pass the same sizes (compared over the communicator at the first call with new ones).
  {
    std::string values, names;
    int count = 0;
    for (auto& prm : p_.params)
      if (prm.isSize) {
        values += (count ? ", sz.s_" : "sz.s_") + prm.name;
        names += (count ? ", \"" : "\"") + prm.name + "\"";
        ++count;
      }
    if (count)
      b << "  {\n    const long long sizes[] = {" << values << "};\n    static const char* const names[] = {" << names
        << "};\n    agree_.check(comm_, stream_, P_, sizes, names, " << count << ", \"" << p_.name << "\");\n  }\n";
  }
  // Integer scalar parameters narrower than i64 must lie in their type's range.
  for (auto& prm : p_.params) {
    if (prm.isSize || !ast::isInteger(prm.dtype) || prm.dtype == DType::I64) continue;
    const char *lo = prm.dtype == DType::I8   ? "-128LL"
                     : prm.dtype == DType::U8 ? "0LL"
                                              : "-2147483648LL",
               *hi = prm.dtype == DType::I8   ? "127LL"
                     : prm.dtype == DType::U8 ? "255LL"
                                              : "2147483647LL";
    b << "  coconet_rt::checkIntegerScalar(sc." << ident(prm.name) << ", " << lo << ", " << hi << ", \"" << p_.name << "\", \"" << prm.name
      << "\", \"" << ast::dtypeName(prm.dtype) << "\");\n";
  }
  // A dropout probability from scalar parameters must lie in [0, 1) (the compiler checked the
  // defaults; a run may pass others): a parameter itself, or arithmetic on parameters and
  // constants that run() can compute as the kernels do (hostScalar), each checked once.
  std::set<std::string> probabilities;
  for (auto& s : p_.stages)
    for (auto& n : s.expr.nodes) {
      if (n.op != EOp::Dropout || n.args.size() < 2) continue;
      const ENode* q = &s.expr.nodes[n.args[1]];
      while (q->op == EOp::Cast && !q->args.empty()) q = &s.expr.nodes[q->args[0]];
      if (q->op == EOp::Param) {
        if (probabilities.insert(q->name).second)
          b << "  coconet_rt::checkProbability(" << paramValue(q->name) << ", \"" << p_.name << "\", \"" << s.name << "\", \"" << q->name
            << "\");\n";
        continue;
      }
      bool params = false;
      std::vector<char> reach(s.expr.nodes.size(), 0);
      reach[static_cast<size_t>(n.args[1])] = 1;
      Expr sub;  // the probability's own nodes, for its text
      std::map<int, int> at;
      for (int i = n.args[1]; i >= 0; --i)
        if (reach[static_cast<size_t>(i)])
          for (int a : s.expr.nodes[static_cast<size_t>(i)].args) reach[static_cast<size_t>(a)] = 1;
      for (int i = 0; i <= n.args[1]; ++i) {
        if (!reach[static_cast<size_t>(i)]) continue;
        ENode c = s.expr.nodes[static_cast<size_t>(i)];
        params = params || c.op == EOp::Param;
        for (int& a : c.args) a = at.at(a);
        at[i] = sub.add(std::move(c));
      }
      auto value = hostScalar(s.expr, n.args[1]);
      const std::string text = sub.str({});
      if (!params || !value || !probabilities.insert(text).second) continue;
      b << "  coconet_rt::checkProbabilityOf(static_cast<double>(static_cast<float>(" << *value << ")), \"" << p_.name << "\", \"" << s.name
        << "\", \"" << jsonEscape(text) << "\");\n";
    }
}

// Group coordinates: consecutive blocks of ranks, as the language defines.
std::string Emitter::groupCoordinateText() const {
  std::ostringstream b;
  b << "  const long long g0_inst = 0, g0_pos = rank_, g0_size = P_;\n";
  for (size_t gi = 1; gi < p_.groups.size(); ++gi) {
    const GroupInfo* gr = p_.groups[gi].get();
    int pi = groupIndex(gr->parent);
    std::string k = "k" + std::to_string(gi), pp = "g" + std::to_string(pi);
    b << "  const long long " << k << " = " << cxx(gr->count) << ";\n"
      << "  if (" << k << " <= 0 || " << pp << "_size % " << k << " != 0) throw coconet_rt::Error(\"" << p_.name << ": group '" << gr->name
      << "' splits \" + std::to_string(" << pp << "_size) + \" ranks into \" + std::to_string(" << k << ") + \" parts\");\n"
      << "  const long long g" << gi << "_size = " << pp << "_size / " << k << ";\n"
      << "  const long long g" << gi << "_inst = " << pp << "_inst * " << k << " + " << pp << "_pos / g" << gi << "_size;\n"
      << "  const long long g" << gi << "_pos = " << pp << "_pos % g" << gi << "_size;\n";
  }
  for (size_t gi = 0; gi < p_.groups.size(); ++gi) b << "  (void)g" << gi << "_inst; (void)g" << gi << "_pos; (void)g" << gi << "_size;\n";
  return b.str();
}

// Where the device forms' slices would be uneven, devReady says no for this run: every fused
// group and collective runs its NCCL calls (the plan has no form that takes even slices only,
// evenNeed_, or its even requirements held above).
void Emitter::emitUnevenFlag() {
  if (!usesDevice()) return;
  std::string cond;
  for (auto& r : p_.requirements)
    if (r.even) cond += (cond.empty() ? "" : " &&\n                ") + cxx(r.lhs) + " == " + cxx(r.rhs);
  if (!cond.empty()) body_ << "  uneven_ = !(" << cond << ");\n";
}

std::string Emitter::localDim(const TensorType& t, int k) const {
  if (!t.group || t.layout.kind != Layout::Sliced || t.layout.dim != k) return cxx(t.shape[static_cast<size_t>(k)]);
  return "S_.blockLen(" + cxx(t.shape[static_cast<size_t>(k)]) + ", " + g(t.group, "size") + ", " + g(t.group, "pos") + ")";
}

std::string Emitter::sliceStart(const TensorType& t) const {
  if (!t.group || t.layout.kind != Layout::Sliced) return "";
  return "S_.blockStart(" + cxx(t.shape[static_cast<size_t>(t.layout.dim)]) + ", " + g(t.group, "size") + ", " + g(t.group, "pos") + ")";
}

// Group coordinates and communicators.
void Emitter::emitGroupCoordinates() {
  auto& b = body_;
  b << groupCoordinateText();
  for (size_t gi = 1; gi < p_.groups.size(); ++gi) {
    const GroupInfo* gr = p_.groups[gi].get();
    b << "  if (!gcomm_[" << gi << "] || gcommSize_[" << gi << "] != g" << gi << "_size) {\n"
      << "    if (gcomm_[" << gi << "]) CHECK(ncclCommDestroy(gcomm_[" << gi << "]), \"group " << gr->name << "\");\n"
      << "    CHECK(ncclCommSplit(comm_, static_cast<int>(g" << gi << "_inst), static_cast<int>(g" << gi << "_pos), &gcomm_[" << gi
      << "], nullptr), \"group " << gr->name << "\");\n"
      << "    gcommSize_[" << gi << "] = g" << gi << "_size;\n  }\n";
  }
}

// The program's requirements on its sizes, each a message naming the sizes where it fails (the
// schedule's own ones are emitFallbackCall's).
void Emitter::emitRequirementChecks() {
  auto& b = body_;
  for (auto& r : p_.requirements) {
    if (fallbackRuns(r) || evenUnneeded(r)) continue;  // (emitFallbackCall; the uneven blocks every launch takes)
    std::string op = ast::binaryOpSpelling(r.op);
    b << "  if (!(" << cxx(r.lhs) << " " << op << " " << cxx(r.rhs) << ")) throw coconet_rt::Error(\"" << p_.name << ": requirement "
      << r.str() << " does not hold (" << jsonEscape(r.reason)
      << (r.even ? "; the CUDA code's slices are even in " + jsonEscape(evenNeed_) : "") << "): \"";
    // A divisibility requirement (a % b == 0) says which sizes: "H = 4097 is not a multiple of world.size = 4".
    const auto rem = r.op == ast::BinaryOp::Eq && r.rhs.constantValue() == std::optional<int64_t>(0) ? r.lhs.asRemainder() : std::nullopt;
    if (rem) {
      b << " \"" << jsonEscape(rem->first.str()) << " = \" + std::to_string(" << cxx(rem->first) << ") + \" is not a multiple of "
        << jsonEscape(rem->second.str());
      if (rem->second.isConstant())
        b << "\");\n";  // (a constant divisor without its value again)
      else
        b << " = \" + std::to_string(" << cxx(rem->second) << "));\n";
    } else
      b << " + std::to_string(" << cxx(r.lhs) << ") + \" " << op << " \" + std::to_string(" << cxx(r.rhs) << ") + \" is false\");\n";
  }
}

std::string Emitter::partsKernel(const std::string& kname, const std::string& T, int d, bool toParts) {
  // Part q of dimension d (N elements, blocks of `block`, the last ones shorter) holds
  // min(block, N - q * block) indices of it and starts at q * block * other in tmp: the parts
  // before it are whole blocks.
  const char* at = toParts ? "dst" : "src";  // the element's place in its part
  std::ostringstream k;
  k << "__global__ void " << kname << "(const " << T << "* __restrict__ " << (toParts ? "x" : "tmp") << ", " << T << "* __restrict__ "
    << (toParts ? "tmp" : "out") << ", OutputMap om, long long other, long long block, long long N) {\n"
    << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < om.n; i += (long long)gridDim.x * blockDim.x) {\n"
    << "    long long rem = i, " << at << " = 0, mul = 1, part = 0;\n"
    << "    for (int k = om.rank - 1; k >= 0; --k) {\n      long long c = rem % om.shape[k];\n      rem /= om.shape[k];\n"
    << "      long long ext = om.shape[k];\n"
    << "      if (k == " << d << ") { part = c / block; c %= block; ext = N - part * block < block ? N - part * block : block; }\n"
    << "      " << at << " += c * mul;\n      mul *= ext;\n    }\n"
    << (toParts ? "    tmp[part * block * other + dst] = x[i];\n" : "    out[i] = tmp[part * block * other + src];\n") << "  }\n}\n\n";
  return k.str();
}

// Every value's local shape and element count, the caller's tensors checked, and each value's
// storage as the plan decided.
void Emitter::emitStorage() {
  auto& b = body_;
  // Local shapes and element counts of every value.
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    b << "  const long long " << shapeVar(static_cast<int>(i)) << "[" << std::max(1, s.type.rank()) << "] = {";
    for (int k = 0; k < s.type.rank(); ++k) b << (k ? ", " : "") << localDim(s.type, k);
    if (s.type.rank() == 0) b << "1";
    b << "};\n  const long long " << countVar(static_cast<int>(i)) << " = S_.count(" << shapeVar(static_cast<int>(i)) << ", "
      << s.type.rank() << ", " << dtypeBytes(s.type.dtype) << ", \"" << s.name << "\");\n  (void)" << countVar(static_cast<int>(i))
      << ";\n  (void)" << shapeVar(static_cast<int>(i)) << ";\n";
  }
  // Every tensor given must lie in device memory, its whole storage inside one allocation.
  auto span = [&](const std::string& field, int id, const char* role, const std::string& name) {
    b << "  coconet_rt::checkDeviceSpan(t." << field << ", " << countVar(id) << " * " << dtypeBytes(p_.stages[id].type.dtype) << "LL, \""
      << p_.name << "\", \"" << role << "\", \"" << name << "\");\n";
  };
  for (size_t i = 0; i < p_.outputNames.size(); ++i) {
    const std::string& o = p_.outputNames[i];
    b << "  if (!t." << ident(o) << " && " << countVar(p_.outputs[i]) << " > 0) throw coconet_rt::Error(\"" << p_.name << ": output '" << o
      << "' is not given\");\n";
    span(ident(o), p_.outputs[i], "output", o);
  }
  // Storage of every value (the plan's decisions).
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    std::string T = storageType(s.type.dtype);
    int id = static_cast<int>(i);
    const plan::Decision& d = plan_.at(id);
    switch (d.storage) {
      case Storage::Input:
        b << "  if (!t." << ident(s.name) << " && " << countVar(id) << " > 0) throw coconet_rt::Error(\"" << p_.name << ": tensor '"
          << s.name << "' is not given\");\n";
        span(ident(s.name), id, "tensor", s.name);
        b << "  const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.name) << ");\n";
        break;
      case Storage::State:
        b << "  if (!t." << ident(s.state) << " && " << countVar(id) << " > 0) throw coconet_rt::Error(\"" << p_.name << ": state '"
          << s.state << "' is not given\");\n";
        span(ident(s.state), id, "state", s.state);
        b << "  [[maybe_unused]] const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.state) << ");\n";
        break;
      case Storage::InBag:
        b << "  // " << s.name << ": gathered inside the reduction '" << p_.stages[d.from].name << "', never stored\n";
        break;
      case Storage::InKernel: b << "  // " << s.name << ": computed and used inside fused group '" << s.fusedInto << "' only\n"; break;
      case Storage::Direct:
        b << "  // " << s.name << ": written straight into " << d.intoWhat << "\n"
          << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(t." << ident(d.into) << ");\n";
        break;
      case Storage::InChunks:
        b << "  // " << s.name << ": computed chunk by chunk into the overlap's staging buffers, never stored whole\n";
        break;
      case Storage::InReduction:
        b << "  // " << s.name << ": computed inside the reduction '" << p_.stages[d.from].name << "' at each element, never stored\n";
        break;
      case Storage::NcclOnly:
        b << "  " << T << "* " << var(id) << " = nullptr;  // " << s.name
          << ": stored only where its all_to_all pipeline runs as NCCL pairs\n";
        break;
      case Storage::BlockOnly:
        b << "  // " << s.name << ": one rank block at a time (the all_to_all pipeline's steps)\n"
          << "  " << bufferEnsure(id, countVar(id) + " / " + d.into) << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(buf"
          << i << "_.ptr);\n";
        break;
      case Storage::FallbackOnly:
        b << "  " << T << "* " << var(id) << " = nullptr;  // " << s.name << ": stored only where fused group '" << s.fusedInto
          << "' runs as NCCL calls\n";
        break;
      case Storage::Buffer:
        b << "  " << bufferEnsure(id) << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(buf" << i << "_.ptr);\n";
        break;
      case Storage::Alias:
        b << "  " << T << "* " << var(id) << " = const_cast<" << T << "*>(" << var(d.from) << ");  // " << s.name
          << ": the same elements as '" << p_.stages[d.from].name << "', in a new shape\n";
        break;
      case Storage::Permuted:
        b << "  " << T << "* " << var(id) << " = const_cast<" << T << "*>(" << var(d.from) << ");  // " << s.name << ": '"
          << p_.stages[d.from].name << "', which its element-wise readers read through the permutation\n";
        break;
      case Storage::Transposed:
        b << "  " << T << "* " << var(id) << " = const_cast<" << T << "*>(" << var(d.from) << ");  // " << s.name << ": '"
          << p_.stages[d.from].name << "', which its products read transposed\n";
        break;
    }
  }
}

// Outputs and the states' new values copied where the caller keeps them (unless written there
// directly).
void Emitter::emitResults() {
  auto& b = body_;
  b << "\n  // Outputs and the states' new values.\n";
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    int id = p_.outputs[i];
    if (const plan::Decision& d = plan_.at(id); d.storage == Storage::Direct && d.into == p_.outputNames[i]) continue;
    b << "  CHECK(cudaMemcpyAsync(t." << ident(p_.outputNames[i]) << ", " << var(id) << ", " << countVar(id) << " * sizeof("
      << storageType(p_.stages[id].type.dtype) << "), cudaMemcpyDeviceToDevice, stream_), \"" << p_.outputNames[i] << "\");\n";
  }
  for (auto& st : p_.states) {
    if (st.exit == st.entry) continue;
    if (const plan::Decision& d = plan_.at(st.exit); d.storage == Storage::Direct && d.into == st.name) continue;
    const Stage& ex = p_.stages[st.exit];
    std::string T = storageType(st.type.dtype);
    if (st.type.layout.kind == Layout::Sliced && ex.type.layout.kind != Layout::Sliced) {
      // A whole value kept as this rank's block of dimension d: `outer` rows (the dimensions
      // before d) of len * inner elements each, from `start` of every row of the whole.
      const int d = st.type.layout.dim;
      std::string outer = "1LL", inner = "1LL";
      for (int k = 0; k < st.type.rank(); ++k)
        if (k != d) (k < d ? outer : inner) += " * " + shapeVar(st.entry) + "[" + std::to_string(k) + "]";
      b << "  {\n    const size_t inner = static_cast<size_t>(" << inner << "), outer = static_cast<size_t>(" << outer << ");\n"
        << "    const size_t width = static_cast<size_t>(" << shapeVar(st.entry) << "[" << d << "]) * inner * sizeof(" << T << ");\n"
        << "    const size_t pitch = static_cast<size_t>(" << shapeVar(st.exit) << "[" << d << "]) * inner * sizeof(" << T << ");\n"
        << "    if (width > 0)\n      CHECK(cudaMemcpy2DAsync(t." << ident(st.name) << ", width, " << var(st.exit) << " + "
        << sliceStart(st.type) << " * inner, pitch, width, outer, cudaMemcpyDeviceToDevice, stream_), \"update " << st.name
        << "\");\n  }\n";
      continue;
    }
    b << "  CHECK(cudaMemcpyAsync(t." << ident(st.name) << ", " << var(st.exit) << ", " << countVar(st.exit) << " * sizeof(" << T
      << "), cudaMemcpyDeviceToDevice, stream_), \"update " << st.name << "\");\n";
  }
  if (o_.timeline) b << tlMark("  ", "stream_", "outputs") << "  tl_.end();\n";
}

void Emitter::emitPlanned(int i) {
  auto& b = body_;
  const Stage& s = p_.stages[i];
  const plan::Decision& d = plan_.at(i);
  const int own = d.owner;
  switch (d.step) {
    case Step::Given: return;
    case Step::DeviceGroup:
      emitDeviceGroup(plan_.devGroups.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::RowGroup:
      emitRowGroup(plan_.rowGroups.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InRowGroup:
      b << "\n  " << stageComment(s) << ": in the row kernel of fused group '" << plan_.rowGroups.at(own).name << "' above\n";
      return;
    case Step::ScalarChain:
      emitScalarChain(plan_.scalarChains.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InScalarChain:
      b << "\n  " << stageComment(s) << ": in the kernel of " << plan_.scalarChains.at(own).name << " above\n";
      return;
    case Step::InDeviceGroup: b << "\n  " << stageComment(s) << ": in the fused group's kernel above\n"; return;
    case Step::InReduction: b << "\n  " << stageComment(s) << ": computed inside the reduction '" << p_.stages[own].name << "'\n"; return;
    case Step::OverlapProducer:
      if (plan_.chunked.at(i).back >= 0)  // at the returning all_to_all: the stages between may read values computed before it
        b << "\n  " << stageComment(s) << ": exchanged block by block in the pipeline at '" << p_.stages[own].name << "' below\n";
      else
        b << "\n  " << stageComment(s) << ": computed in the overlapped chunks below\n";
      return;
    case Step::Overlap:
      emitChunked(plan_.chunked.at(own));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::DeviceAllReduce:
      emitDeviceAllReduce(plan_.devAR.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InAllReducePair: b << "\n  " << stageComment(s) << ": one allreduce with the all_gather after it\n"; return;
    case Step::AllReducePair: {
      const Stage& r = p_.stages[plan_.arPair.at(i)];
      const GroupInfo* gr = r.type.group ? r.type.group : p_.world();
      b << "\n  " << stageComment(s) << ": with '" << r.name << "', one allreduce\n  if (" << countVar(i) << " > 0) {\n"
        << "    CHECK(ncclAllReduce(" << var(r.operands[0]) << ", " << var(i) << ", " << countVar(i) << ", " << ncclType(s.type.dtype)
        << ", " << ncclOp(r.op) << ", " << commOf(gr) << ", stream_), \"" << s.fusedInto << "\");\n  }\n"
        << tlMark("  ", "stream_", s.fusedInto);
      return;
    }
    case Step::InBag: b << "\n  " << stageComment(s) << ": gathered inside the reduction '" << p_.stages[own].name << "'\n"; return;
    case Step::InOverlap: {
      bool below = false;  // in an all_to_all pipeline, emitted at its returning all_to_all
      for (auto& [prod, ch] : plan_.chunked) below = below || (ch.back > i && prod < i);
      b << "\n  " << stageComment(s) << ": computed in the overlapped chunks " << (below ? "below" : "above") << "\n";
      return;
    }
    case Step::InRun:
    case Step::Stage: break;
  }
  if (!d.unchunked.empty()) b << "\n  // overlap of '" << s.name << "' runs unchunked: " << d.unchunked;
  if (d.step == Step::InRun) {
    b << "\n  " << stageComment(s) << ": computed by the kernel of '" << p_.stages[own].name << "'\n";
    return;
  }
  // (a reduce_scatter on every rank, its slice here empty or not: the whole is what it reduces)
  const int counted = s.kind == StageKind::ReduceScatter ? s.operands[0] : i;
  b << "\n  " << stageComment(s) << "\n  if (" << countVar(counted) << " > 0) {\n";
  emitStage(i);
  b << "  }\n" << tlMark("  ", "stream_", s.name);
}

std::string Emitter::tlMark(const std::string& ind, const std::string& stream, const std::string& label, const std::string& index) const {
  if (!o_.timeline) return "";
  return ind + "tl_.mark(" + stream + ", \"" + stream + "\", \"" + jsonEscape(label) + "\"" + (index.empty() ? "" : ", " + index) + ");\n";
}

std::string Emitter::bufferEnsure(int id, const std::string& count) const {
  return "buf" + std::to_string(id) + "_.ensure(static_cast<size_t>(" + (count.empty() ? countVar(id) : count) + ") * sizeof(" +
         storageType(p_.stages[id].type.dtype) + "), \"" + p_.name + "\", \"" + p_.stages[id].name + "\");\n";
}

void Emitter::emitStage(int id) {
  const Stage& s = p_.stages[id];
  auto& b = body_;
  std::string T = storageType(s.type.dtype);
  std::string name = "\"" + s.name + "\"";
  auto in = [&](int k) { return var(s.operands[k]); };
  auto inT = [&](int k) { return p_.stages[s.operands[k]].type; };
  const GroupInfo* gr = s.type.group ? s.type.group : p_.world();
  switch (s.kind) {
    case StageKind::Compute:
      if (auto it = plan_.runOf.find(id); it != plan_.runOf.end()) {
        if (it->second.front() == id) emitComputeRun(it->second);
      } else {
        emitComputeRun({id});
      }
      break;
    case StageKind::Reduce: emitReduce(id); break;
    case StageKind::Softmax:
    case StageKind::Layernorm:
    case StageKind::Rmsnorm: emitRowwise(id); break;
    case StageKind::Matmul:
    case StageKind::Gemv: emitGemm(id); break;
    case StageKind::Embedding: emitEmbedding(id); break;
    case StageKind::EmbeddingGrad: emitEmbeddingGrad(id); break;
    case StageKind::Permute:
      if (plan_.at(id).storage == Storage::Permuted) {
        b << "    // (no copy: the element-wise kernels that read '" << s.name << "' read '" << p_.stages[s.operands[0]].name
          << "' through the permutation)\n";
        break;
      }
      if (plan_.at(id).storage == Storage::Transposed) {
        b << "    // (no copy: the products that read '" << s.name << "' take '" << p_.stages[s.operands[0]].name << "' transposed)\n";
        break;
      }
      emitPermute(id);
      break;
    case StageKind::Concat: emitRowCopy(id, "concat"); break;
    case StageKind::Narrow: emitRowCopy(id, "narrow"); break;
    case StageKind::Reshape:  // the same elements: a copy unless the operand's storage serves
      if (plan_.at(id).storage == Storage::Alias) {
        b << "    // (no copy: '" << s.name << "' is '" << p_.stages[s.operands[0]].name << "''s storage)\n";
        break;
      }
      b << "    CHECK(cudaMemcpyAsync(" << var(id) << ", " << in(0) << ", static_cast<size_t>(" << countVar(id) << ") * sizeof(" << T
        << "), cudaMemcpyDeviceToDevice, stream_), " << name << ");\n";
      break;
    case StageKind::AllReduce:
      b << "    CHECK(ncclAllReduce(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", "
        << ncclOp(s.op) << ", " << commOf(gr) << ", stream_), " << name << ");\n";
      break;
    case StageKind::ReduceScatter:
    case StageKind::AllGather: {
      // Dimension d of N elements cut into the group's blocks (ir::sliceBlock): `block` each,
      // the last ones shorter or empty where N does not divide. Even blocks take NCCL's
      // reduce-scatter or all-gather; uneven ones a reduce to each block's rank (a broadcast
      // from it), grouped, as PyTorch's NCCL process group does for uneven sizes.
      const bool rs = s.kind == StageKind::ReduceScatter;
      const TensorType sl = rs ? s.type : inT(0);  // the sliced side
      const int d = sl.layout.dim;
      const int whole = rs ? s.operands[0] : id;
      std::string other = "1LL";  // the elements of one index of dimension d
      for (int k = 0; k < sl.rank(); ++k)
        if (k != d) other += " * " + shapeVar(whole) + "[" + std::to_string(k) + "]";
      b << "    const long long N = " << cxx(sl.shape[static_cast<size_t>(d)]) << ", G = " << g(gr, "size")
        << ", block = S_.blockLen(N, G, 0), other = " << other << ";\n"
        << "    const bool even = N % G == 0;\n";
      // The parts laid out one after another (part q at q * block * other) where d is not 0.
      std::string parts = rs ? in(0) : var(id);
      if (d != 0) {
        std::string kname = std::string(rs ? "k_slice_" : "k_unslice_") + std::to_string(id);
        kernels_ << "// " << s.name << (rs ? ": lays out the parts of dimension " : ": places the gathered parts along dimension ") << d
                 << (rs ? " one after another for the reduce-scatter.\n" : ".\n") << partsKernel(kname, T, d, /*toParts=*/rs);
        b << "    gatherTmp_.ensure(static_cast<size_t>(" << countVar(whole) << ") * sizeof(" << T << "), \"" << p_.name << "\", " << name
          << ");\n"
          << "    " << T << "* parts = static_cast<" << T << "*>(gatherTmp_.ptr);\n"
          << "    OutputMap om{};\n    om.rank = " << sl.rank() << ";\n    om.n = " << countVar(whole) << ";\n"
          << "    for (int k = 0; k < om.rank; ++k) om.shape[k] = " << shapeVar(whole) << "[k];\n";
        if (rs)
          b << "    " << kname << "<<<" << launch(countVar(whole)) << ">>>(" << in(0) << ", parts, om, other, block, N);\n"
            << "    CHECK(cudaGetLastError(), " << name << ");\n";
        parts = "parts";
      }
      const std::string type = ncclType(s.type.dtype), comm = commOf(gr);
      b << "    if (even) {\n";
      if (rs)
        b << "      CHECK(ncclReduceScatter(" << parts << ", " << var(id) << ", block * other, " << type << ", " << ncclOp(s.op) << ", "
          << comm << ", stream_), " << name << ");\n";
      else
        b << "      CHECK(ncclAllGather(" << in(0) << ", " << parts << ", block * other, " << type << ", " << comm << ", stream_), " << name
          << ");\n";
      b << "    } else {\n      CHECK(ncclGroupStart(), " << name << ");\n"
        << "      for (long long q = 0; q < G; ++q) {\n"
        << "        const long long len = S_.blockLen(N, G, q);\n        if (len == 0) break;  // (the empty blocks are the last)\n";
      if (rs)
        b << "        CHECK(ncclReduce(" << parts << " + q * block * other, q == " << g(gr, "pos") << " ? " << var(id) << " : const_cast<"
          << T << "*>(" << parts << "), static_cast<size_t>(len * other), " << type << ", " << ncclOp(s.op) << ", static_cast<int>(q), "
          << comm << ", stream_), " << name << ");\n";  // (NCCL writes the result on the root only; the others' buffer: one that exists)
      else
        b << "        CHECK(ncclBroadcast(q == " << g(gr, "pos") << " ? " << in(0) << " : " << parts << " + q * block * other, " << parts
          << " + q * block * other, static_cast<size_t>(len * other), " << type << ", static_cast<int>(q), " << comm << ", stream_), "
          << name << ");\n";  // (NCCL reads the root's block only)
      b << "      }\n      CHECK(ncclGroupEnd(), " << name << ");\n    }\n";
      if (!rs && d != 0) {
        std::string kname = "k_unslice_" + std::to_string(id);
        b << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(parts, " << var(id) << ", om, other, block, N);\n"
          << "    CHECK(cudaGetLastError(), " << name << ");\n";
      }
      break;
    }
    case StageKind::Broadcast:
    case StageKind::Reduce1: {
      std::string root = s.root.param.empty() ? std::to_string(static_cast<long long>(s.root.value))
                                              : "static_cast<long long>(" + paramValue(s.root.param) + ")";
      b << "    const long long root = " << root << ";\n"
        << "    if (root < 0 || root >= " << g(gr, "size") << ") throw coconet_rt::Error(\"" << p_.name << ": stage '" << s.name
        << "': root \" + std::to_string(root) + \" is not a rank of group '" << gr->name << "'\");\n";
      if (s.kind == StageKind::Broadcast) {
        b << "    CHECK(ncclBroadcast(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype)
          << ", static_cast<int>(root), " << commOf(gr) << ", stream_), " << name << ");\n";
      } else {
        b << "    CHECK(ncclReduce(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", "
          << ncclOp(s.op) << ", static_cast<int>(root), " << commOf(gr) << ", stream_), " << name << ");\n"
          << "    if (" << g(gr, "pos") << " != root) CHECK(cudaMemsetAsync(" << var(id) << ", 0, " << countVar(id) << " * sizeof(" << T
          << "), stream_), " << name << ");\n";
      }
      break;
    }
    case StageKind::AllToAll: emitAllToAll(id); break;
    case StageKind::Send: emitSend(id); break;
    default: break;
  }
}

// An all_to_all outside pipelines: over the device API up to kAllToAllDeviceMaxBytes per rank
// where the group is the world, else NCCL send/recv pairs.
void Emitter::emitAllToAll(int id) {
  const Stage& s = p_.stages[id];
  auto& b = body_;
  std::string T = storageType(s.type.dtype);
  std::string name = "\"" + s.name + "\"";
  auto in = [&](int k) { return var(s.operands[k]); };
  const GroupInfo* gr = s.type.group ? s.type.group : p_.world();
  b << "    const long long chunk = " << countVar(id) << " / " << g(gr, "size") << ";\n";
  std::string ind = "    ";
  if (auto da = plan_.devA2A.find(id); da != plan_.devA2A.end()) {
    // Over the device API, up to kAllToAllDeviceMaxBytes per rank: each rank pushes block j
    // of its input into slot `pos` of group rank j's window (two halves, used in turn), a
    // barrier, then copies its window out.
    // Group rank j is world rank inst * size + j (groups are consecutive blocks of ranks).
    const std::string gi = std::to_string(da->second), prog = "\"" + p_.name + "\"";
    const int V = 16 / dtypeBytes(s.type.dtype);
    // (bytes is the same on every rank, so all of them ask devReady, a collective, or none)
    b << "    const size_t bytes = (static_cast<size_t>(" << countVar(id) << ") * sizeof(" << T << ") + 255) / 256 * 256;\n"
      << "    if (bytes <= coconet_rt::kAllToAllDeviceMaxBytes && devReady(" << name << ")) {\n"
      << "      coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "      if (w.ensure(comm_, stream_, 2 * bytes, " << prog << ", " << name << "))\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = chunk % " << V << " == 0 && coconet_rt::aligned16(" << in(0) << ", 0) && coconet_rt::aligned16(" << var(id)
      << ", 0);\n"
      << "      coconet_rt::dev_all_to_all<" << T << ", " << V << "><<<coconet_rt::devBlocks(chunk / " << V
      << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in(0) << ", "
      << var(id) << ", chunk, static_cast<int>(" << g(gr, "inst") << " * " << g(gr, "size") << "), static_cast<int>(" << g(gr, "size")
      << "), static_cast<int>(" << g(gr, "pos") << "), vec);\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "      dev_->parity[" << gi << "] ^= 1;\n"
      << "    } else {\n";
    ind = "      ";
  }
  b << ind << "CHECK(ncclGroupStart(), " << name << ");\n"
    << ind << "for (long long j = 0; j < " << g(gr, "size") << "; ++j) {\n"
    << ind << "  CHECK(ncclSend(" << in(0) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", stream_), " << name << ");\n"
    << ind << "  CHECK(ncclRecv(" << var(id) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", stream_), " << name << ");\n"
    << ind << "}\n"
    << ind << "CHECK(ncclGroupEnd(), " << name << ");\n";
  if (plan_.devA2A.count(id)) b << "    }\n";
}

// A send to the next or previous rank or group (every rank sends and receives): over the device
// API where the plan says so, else an NCCL send/recv pair.
void Emitter::emitSend(int id) {
  const Stage& s = p_.stages[id];
  auto& b = body_;
  std::string T = storageType(s.type.dtype);
  std::string name = "\"" + s.name + "\"";
  auto in = [&](int k) { return var(s.operands[k]); };
  const GroupInfo* gr = s.type.group ? s.type.group : p_.world();
  bool ranks = s.peer == Peer::NextRank || s.peer == Peer::PrevRank;
  bool next = s.peer == Peer::NextRank || s.peer == Peer::NextGroup;
  std::string comm = ranks ? commOf(gr) : "comm_";
  if (ranks) {
    b << "    const long long size = " << g(gr, "size") << ", pos = " << g(gr, "pos") << ";\n"
      << "    const int to = static_cast<int>((pos + " << (next ? "1" : "size - 1") << ") % size);\n"
      << "    const int from = static_cast<int>((pos + " << (next ? "size - 1" : "1") << ") % size);\n";
  } else {
    b << "    const long long size = " << g(gr, "size") << ", count = P_ / size, inst = " << g(gr, "inst") << ", pos = " << g(gr, "pos")
      << ";\n"
      << "    const int to = static_cast<int>(((inst + " << (next ? "1" : "count - 1") << ") % count) * size + pos);\n"
      << "    const int from = static_cast<int>(((inst + " << (next ? "count - 1" : "1") << ") % count) * size + pos);\n";
  }
  std::string ind = "    ";
  if (auto ds = plan_.devSend.find(id); ds != plan_.devSend.end()) {
    // Over the device API: push into the receiver's window (two halves, used in turn), a
    // barrier, copy out. `to` is a rank of the world there.
    const std::string gi = std::to_string(ds->second), prog = "\"" + p_.name + "\"";
    const int V = 16 / dtypeBytes(s.type.dtype);
    b << "    if (devReady(" << name << ")) {\n"
      << "      const size_t bytes = (static_cast<size_t>(" << countVar(id) << ") * sizeof(" << T << ") + 255) / 256 * 256;\n"
      << "      coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "      if (w.ensure(comm_, stream_, 2 * bytes, " << prog << ", " << name << "))\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = " << countVar(id) << " % " << V << " == 0 && coconet_rt::aligned16(" << in(0)
      << ", 0) && coconet_rt::aligned16(" << var(id) << ", 0);\n"
      << "      coconet_rt::dev_send_recv<" << T << ", " << V << "><<<coconet_rt::devBlocks(" << countVar(id) << " / " << V
      << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in(0) << ", "
      << var(id) << ", " << countVar(id) << ", " << (ranks ? "static_cast<int>(" + g(gr, "inst") + " * size) + to" : std::string("to"))
      << ", vec);\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "      dev_->parity[" << gi << "] ^= 1;\n"
      << "    } else {\n";
    ind = "      ";
  }
  b << ind << "CHECK(ncclGroupStart(), " << name << ");\n"
    << ind << "CHECK(ncclSend(" << in(0) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", to, " << comm << ", stream_), "
    << name << ");\n"
    << ind << "CHECK(ncclRecv(" << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", from, " << comm << ", stream_), "
    << name << ");\n"
    << ind << "CHECK(ncclGroupEnd(), " << name << ");\n";
  if (plan_.devSend.count(id)) b << "    }\n";
}

}  // namespace coconet::backend::detail
