// CUDA code generation for a scheduled IR program (see CudaEmitter.h): emission as a whole
// (Emitter.h says which file defines what).
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
  planDeviceExchanges(StageKind::Send, devSend_);
  planDeviceExchanges(StageKind::AllToAll, devA2A_);
  assemblePlan();
  warnUnfusedRowGroups();
  warnKnobsWithoutDevice();
}

void Emitter::findFallback() {
  for (auto& r : p_.requirements)
    if (scheduleOwn(r)) fallbackWhenNot_.push_back(&r);
  if (o_.unscheduled)
    for (auto& [cond, why] : unprofitable()) {
      fallbackWhen_.push_back(cond);
      fallbackWhy_.push_back(why);
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
  std::string text = plan::print(p_, plan_, "plan of " + p_.name + (o_.embedded ? " without its schedule" : "") +
                                                 (o_.deviceCollectives ? "" : " (--no-device-collectives)"));
  if (o_.embedded) return text;
  findFallback();
  if (fallbackWhenNot_.empty() && fallbackWhen_.empty()) return text;
  text += "run() takes the program without its schedule (" + cls_ + "_unscheduled) where\n";
  for (const ir::Requirement* r : fallbackWhenNot_) text += "  the schedule's requirement " + r->str() + " does not hold\n";
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
  write("coconet_env.h", kEnvHeader, files);
  write("coconet_runtime.cuh", kRuntimeHeader, files);
  if (usesDeviceHeader()) write("coconet_device.cuh", kDeviceHeader, files);
  std::string header = headerText(), source = sourceText(), driver = driverText();
  write(cls_ + ".h", header, files);
  write(cls_ + ".cu", source, files);
  write(cls_ + "_main.cu", driver, files);
  write("CMakeLists.txt", cmakeText(), files);
  write("manifest.json",
        manifestText(header + source + driver + fallbackText_ + kEnvHeader + kRuntimeHeader + (usesDeviceHeader() ? kDeviceHeader : "")),
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
        throw std::runtime_error("stage '" + s.name + "': the CUDA backend multiplies matrices of one type only (" +
                                 ast::dtypeName(a) + " x " + ast::dtypeName(b) + " -> " + ast::dtypeName(s.type.dtype) + ")");
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

std::string Emitter::headerText() {
  std::ostringstream h;
  h << "// " << cls_ << ".h: generated by coconetc " << COCONETC_VERSION << " from " << commentText(o_.sourcePath)
    << (o_.schedulePath.empty() ? "" : " with schedule " + commentText(o_.schedulePath)) << ". Do not edit.\n"
    << (o_.embedded ? "// The program without its schedule: the scheduled class runs it for sizes that meet the\n"
                      "// program's requirements but not the schedule's, or where the schedule does not pay.\n" : "")
    << "#pragma once\n\n#include <cublas_v2.h>\n#include <cuda_runtime.h>\n#include <nccl.h>\n" << (hasExchangePipeline() ? "\n#include <vector>\n" : "") << "\n"
    << "#include \"coconet_runtime.cuh\"\n\nnamespace coconet_gen {\n\n";
  if (!fallbackCls_.empty())
    h << "// The program without its schedule (" << fallbackCls_ << ".h), for sizes the schedule's own requirements\n"
      << "// exclude or where the schedule does not pay.\nclass " << fallbackCls_ << ";\n\n";
  h << "// The program's size parameters, bound at run time.\nstruct " << cls_ << "_sizes {\n";
  for (auto& prm : p_.params)
    if (prm.isSize) h << "  long long s_" << prm.name << " = " << (prm.value ? std::to_string(prm.ivalue) : "0") << ";\n";
  h << "};\n\n// Its scalar parameters (defaults from the program): integers as long long, exactly.\nstruct " << cls_
    << "_scalars {\n";
  for (auto& prm : p_.params)
    if (!prm.isSize)
      h << "  " << (ast::isInteger(prm.dtype) ? "long long " : "double ") << ident(prm.name) << " = "
        << (prm.value ? (ast::isInteger(prm.dtype) ? std::to_string(prm.ivalue) : num(*prm.value)) : "0") << ";  // "
        << ast::dtypeName(prm.dtype) << "\n";
  h << "};\n\n// Device pointers to this rank's storage of each tensor (a sliced tensor: its slice).\n"
    << "struct " << cls_ << "_tensors {\n";
  for (auto& s : p_.stages)
    if (s.kind == StageKind::Input) h << "  const void* " << ident(s.name) << " = nullptr;  // in " << s.type.str() << "\n";
  for (size_t i = 0; i < p_.outputs.size(); ++i)
    h << "  void* " << ident(p_.outputNames[i]) << " = nullptr;  // out " << p_.stages[p_.outputs[i]].type.str() << "\n";
  for (auto& st : p_.states)
    h << "  void* " << ident(st.name) << " = nullptr;  // state (read, then updated in place) " << st.type.str() << "\n";
  h << "};\n\n";
  h << "// Made from an NCCL communicator (one rank per GPU) and a stream; no global state, one per\n"
    << "// communicator. run() checks the sizes (positive, their counts within 64 bits, the same on\n"
    << "// every rank: one all-reduce at the first call with new sizes) and that each tensor lies in\n"
    << "// one device allocation that holds it, then enqueues the program on the stream; finish()\n"
    << "// waits for it with a time limit (seconds, 0 or more; infinity: none) and reports\n"
    << "// device-side errors. Errors are coconet_rt::Error naming the stage.\n"
    << "class " << cls_ << " {\npublic:\n"
    << "  " << cls_ << "(ncclComm_t comm, cudaStream_t stream);\n  ~" << cls_ << "();\n"
    << "  " << cls_ << "(const " << cls_ << "&) = delete;\n  " << cls_ << "& operator=(const " << cls_ << "&) = delete;\n"
    << "  void run(const " << cls_ << "_sizes& sizes, const " << cls_ << "_scalars& scalars, const " << cls_
    << "_tensors& tensors, unsigned long long seed);\n"
    << "  void finish(double timeoutSeconds);\n"
    << "  // Elements of a tensor's storage on this rank (for allocation); -1 for an unknown name.\n"
    << "  long long localElements(const char* tensor, const " << cls_ << "_sizes& sizes) const;\n"
    << "  // Its shape (this rank's storage): returns the rank and fills shape; -1 for an unknown name.\n"
    << "  int localShape(const char* tensor, const " << cls_ << "_sizes& sizes, long long shape[8]) const;\n"
    << "  int rank() const { return rank_; }\n  int worldSize() const { return P_; }\n\n"
    << "private:\n  ncclComm_t comm_;\n  cudaStream_t stream_;\n  cublasHandle_t blas_ = nullptr;\n"
    << "  int rank_ = 0, P_ = 1;\n  ncclComm_t gcomm_[" << std::max<size_t>(p_.groups.size(), 1) << "] = {};\n"
    << "  long long gcommSize_[" << std::max<size_t>(p_.groups.size(), 1) << "] = {};\n"
    << "  int* errorFlag_ = nullptr;\n"
    << "  coconet_rt::SizeAgreement agree_;  // the sizes every rank passed at the last check\n";
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (p_.stages[i].kind != StageKind::Input && p_.stages[i].kind != StageKind::State)
      h << "  coconet_rt::Buffer buf" << i << "_;  // " << p_.stages[i].name << "\n";
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (p_.stages[i].kind == StageKind::Reduce)
      h << "  coconet_rt::Buffer red" << i << "_;  // partial results of " << p_.stages[i].name << "\n";
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (isNormalizationKind(p_.stages[i].kind))
      h << "  coconet_rt::Buffer rows" << i << "_;  // statistics of " << p_.stages[i].name << "'s row parts (rows split over blocks)\n";
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (p_.stages[i].kind == StageKind::Matmul)
      h << "  coconet_rt::Buffer bmm" << i << "_[2];  // " << p_.stages[i].name << "'s rows gathered by weight (gatherBatchedRows)\n";
  h << "  coconet_rt::Buffer gatherTmp_;\n";
  if (usesDevice())
    h << "  // Collectives over NCCL's device API: device communicator and windows.\n"
      << "  struct Dev_;\n  Dev_* dev_ = nullptr;\n  bool devReady(const char* stage, bool solo = false);\n";
  if (!chunked_.empty())
    h << "  // Overlapped stages: the GEMM's chunks on stream_, their collectives and epilogue on comm2_.\n"
      << "  cudaStream_t comm2_ = nullptr;\n  cudaEvent_t ovStart_ = nullptr, ovDone_ = nullptr, ovGemm_[2] = {}, ovFree_[2] = {};\n"
      << "  coconet_rt::Buffer stage_[2], gath_[2];\n";
  if (hasExchangePipeline())
    h << "  // An all_to_all pipeline: one event per rank block (its arrival), made as needed.\n"
      << "  std::vector<cudaEvent_t> ovSteps_;\n";
  if (usesCopyEngineStream())
    h << "  // Copy engines for an allreduce or a device group: their stream and its events (input ready,\n"
      << "  // a round's pushes arrived, rounds computed everywhere (two, in turn), pulls done).\n"
      << "  cudaStream_t ceCopy_ = nullptr;\n  cudaEvent_t ceEv_[6] = {};\n";
  if (gatherMayPipe())
    h << "  // An overlap's all-gather by copy engines, chunk by chunk (comm3_), after each chunk's epilogue (ovRed_).\n"
      << "  cudaStream_t comm3_ = nullptr;\n  cudaEvent_t ovRed_ = nullptr;\n";
  if (o_.timeline) h << "  // coconetc compile --timeline: events of one call, printed when it ends.\n  coconet_rt::Timeline tl_;\n";
  if (!fallbackCls_.empty())
    h << "  // The program without its schedule, made at the first run that takes it (every rank makes it\n"
      << "  // at that run: the sizes agree).\n"
      << "  " << fallbackCls_ << "* unscheduled_ = nullptr;\n";
  h << "};\n\n}  // namespace coconet_gen\n" << (o_.embedded ? "" : "\n" + cInterfaceDecls());
  return h.str();
}

std::string Emitter::sourceText() {
  std::ostringstream s;
  s << "// " << cls_ << ".cu: generated by coconetc " << COCONETC_VERSION << " from " << commentText(o_.sourcePath)
    << (o_.schedulePath.empty() ? " (no schedule)" : " with schedule " + commentText(o_.schedulePath)) << ". Do not edit.\n";
  if (!o_.scheduleText.empty()) {
    s << "//\n// Schedule applied:\n";
    std::istringstream in(o_.scheduleText);
    for (std::string line; std::getline(in, line);) s << "//   " << commentText(line) << "\n";
  }
  s << "#include \"" << cls_ << ".h\"\n" << (fallbackCls_.empty() ? "" : "#include \"" + fallbackCls_ + ".h\"\n")
    << "\n#include <chrono>\n#include <cmath>\n#include <cstring>\n#include <mutex>\n#include <set>\n#include <string>\n#include <thread>\n\n";
  if (usesDevice()) s << "#include \"coconet_device.cuh\"\n\n";
  emitBody();
  s << "namespace {\n\nusing coconet_rt::OperandMap;\nusing coconet_rt::OutputMap;\n\n" << kernels_.str()
    << "}  // namespace\n\nnamespace coconet_gen {\n\n";
  const char* P = "\"";
  s << "#define CHECK(call, stage) coconet_rt::check((call), " << P << p_.name << P << ", stage, #call)\n\n";
  if (usesDevice()) {
    const int k = devIndices_;
    s << "// The device communicator (created at the first run: it is a collective call) and, per\n"
      << "// collective on the device path, a symmetric staging window (the reduce-scatter's slots) and\n"
      << "// a slice window (what the all-gather pulls); a one-shot allreduce has a window of its own\n"
      << "// and alternates between its two halves (parity), its LL and LL128 forms one each (ll, ll128,\n"
      << "// zeroed); a scalar chain computed at the start of a group's kernel and an LL allreduce count\n"
      << "// their calls (epoch: what their exchange slots and lines hold beside the values).\n"
      << "struct " << cls_ << "::Dev_ {\n  coconet_rt::DevComm dc;\n"
      << "  coconet_rt::Window stage[" << k << "], slice[" << k << "], oneShot[" << k << "], ll[" << k << "], ll128[" << k << "];\n  int parity[" << k << "] = {};\n"
      << "  unsigned epoch[" << k << "] = {};\n"
      << "  coconet_rt::Window flags[" << k << "];  // an all-gather tail's chunk counts (flagsPulls)\n"
      << "  unsigned flagEpoch[" << k << "] = {};\n"
      << "  coconet_rt::RoleFlags roles;  // the hand-off counters of kernels whose blocks take roles\n};\n\n"
      << "// The device path needs every rank of the communicator load/store reachable (one NVLink domain);\n"
      << "// otherwise (several nodes, or NCCL told each rank is its own host) the NCCL calls run. On one\n"
      << "// rank only the stages that move nothing there take it (`solo`: fused groups' kernels, scalar\n"
      << "// chains); the others' NCCL calls are copies at most.\n"
      << "bool " << cls_ << "::devReady(const char* stage, bool solo) {\n"
      << "  return (P_ > 1 || solo) && dev_->dc.ready(comm_, stream_, rank_, P_, \"" << p_.name << "\", stage);\n}\n\n";
  }
  s << cls_ << "::" << cls_ << "(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {\n"
    << "  CHECK(ncclCommUserRank(comm_, &rank_), \"setup\");\n  CHECK(ncclCommCount(comm_, &P_), \"setup\");\n"
    << "  CHECK(cublasCreate(&blas_), \"setup\");\n  CHECK(cublasSetStream(blas_, stream_), \"setup\");\n"
    << "  CHECK(cudaMalloc(&errorFlag_, sizeof(int)), \"setup\");\n"
    << "  CHECK(cudaMemset(errorFlag_, 0, sizeof(int)), \"setup\");\n"
    << (chunked_.empty() ? "" :
        "  CHECK(cudaStreamCreateWithFlags(&comm2_, cudaStreamNonBlocking), \"setup\");\n"
        "  for (cudaEvent_t* e : {&ovStart_, &ovDone_, &ovGemm_[0], &ovGemm_[1], &ovFree_[0], &ovFree_[1]})\n"
        "    CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming), \"setup\");\n")
    << (!gatherMayPipe() ? "" :
        "  CHECK(cudaStreamCreateWithFlags(&comm3_, cudaStreamNonBlocking), \"setup\");\n"
        "  CHECK(cudaEventCreateWithFlags(&ovRed_, cudaEventDisableTiming), \"setup\");\n")
    << (!usesCopyEngineStream() ? "" :
        "  CHECK(cudaStreamCreateWithFlags(&ceCopy_, cudaStreamNonBlocking), \"setup\");\n"
        "  for (cudaEvent_t& e : ceEv_) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), \"setup\");\n")
    << (usesDevice() ? "  dev_ = new Dev_;\n" : "")
    << "}\n\n";
  s << cls_ << "::~" << cls_ << "() {\n"
    << (fallbackCls_.empty() ? "" : "  delete unscheduled_;\n")
    << (!usesDevice() ? "" :
        // Teardown in the order of NCCL's device-API examples: this rank's calls finished, then
        // the device communicator, then the windows it knew (deregistered, then freed).
        "  if (dev_) {\n    cudaStreamSynchronize(stream_);\n    dev_->dc.destroy(comm_);\n"
        "    for (auto* ws : {dev_->stage, dev_->slice, dev_->oneShot, dev_->ll, dev_->ll128, dev_->flags})\n      for (size_t k = 0; k < std::size(dev_->stage); ++k) ws[k].release(comm_);\n"
        "    dev_->roles.release();\n    delete dev_;\n  }\n")
    << "  for (auto& c : gcomm_)\n    if (c) ncclCommDestroy(c);\n"
    << (chunked_.empty() ? "" :
        "  for (cudaEvent_t e : {ovStart_, ovDone_, ovGemm_[0], ovGemm_[1], ovFree_[0], ovFree_[1]})\n    if (e) cudaEventDestroy(e);\n"
        "  if (comm2_) cudaStreamDestroy(comm2_);\n")
    << (!gatherMayPipe() ? "" : "  if (ovRed_) cudaEventDestroy(ovRed_);\n  if (comm3_) cudaStreamDestroy(comm3_);\n")
    << (!hasExchangePipeline() ? "" : "  for (cudaEvent_t e : ovSteps_) cudaEventDestroy(e);\n")
    << (!usesCopyEngineStream() ? "" :
        "  for (cudaEvent_t e : ceEv_)\n    if (e) cudaEventDestroy(e);\n  if (ceCopy_) cudaStreamDestroy(ceCopy_);\n")
    << "  if (blas_) cublasDestroy(blas_);\n  if (errorFlag_) cudaFree(errorFlag_);\n}\n\n";
  // localElements
  s << "long long " << cls_ << "::localElements(const char* tensor, const " << cls_ << "_sizes& sz) const {\n"
    << "  const std::string t = tensor;\n  const coconet_rt::SizeMath S_{\"" << p_.name << "\"};\n";
  auto elems = [&](const TensorType& t) {
    std::string e;
    for (int k = 0; k < t.rank(); ++k) {
      std::string d = cxx(t.shape[k]);
      if (t.group && t.layout.kind == Layout::Sliced && t.layout.dim == k) d = "(" + d + " / " + cxx(t.group->size) + ")";
      e = e.empty() ? d : "S_.mul(" + e + ", " + d + ")";
    }
    return e.empty() ? std::string("1LL") : e;
  };
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) s << "  if (t == \"" << st.name << "\") return " << elems(st.type) << ";\n";
  for (size_t i = 0; i < p_.outputs.size(); ++i)
    s << "  if (t == \"" << p_.outputNames[i] << "\") return " << elems(p_.stages[p_.outputs[i]].type) << ";\n";
  for (auto& st : p_.states) s << "  if (t == \"" << st.name << "\") return " << elems(st.type) << ";\n";
  s << "  return -1;\n}\n\n";
  // localShape
  s << "int " << cls_ << "::localShape(const char* tensor, const " << cls_ << "_sizes& sz, long long shape[8]) const {\n"
    << "  const std::string t = tensor;\n  const coconet_rt::SizeMath S_{\"" << p_.name << "\"};\n";
  auto shape = [&](const std::string& name, const TensorType& t) {
    s << "  if (t == \"" << name << "\") {\n";
    for (int k = 0; k < t.rank(); ++k) {
      std::string d = cxx(t.shape[k]);
      if (t.group && t.layout.kind == Layout::Sliced && t.layout.dim == k) d = "(" + d + " / " + cxx(t.group->size) + ")";
      s << "    shape[" << k << "] = " << d << ";\n";
    }
    s << "    return " << t.rank() << ";\n  }\n";
  };
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) shape(st.name, st.type);
  for (size_t i = 0; i < p_.outputs.size(); ++i) shape(p_.outputNames[i], p_.stages[p_.outputs[i]].type);
  for (auto& st : p_.states) shape(st.name, st.type);
  s << "  (void)sz;\n  (void)shape;\n  return -1;\n}\n\n";
  // finish
  s << "void " << cls_ << "::finish(double timeoutSeconds) {\n"
    << "  if (std::isnan(timeoutSeconds) || timeoutSeconds < 0)\n"
    << "    throw coconet_rt::Error(\"" << p_.name << ": finish's time limit is \" + std::to_string(timeoutSeconds) +\n"
    << "                            \" s; it must be 0 or more seconds (infinity: no limit)\");\n"
    << "  const auto start = std::chrono::steady_clock::now();\n"
    << "  for (;;) {\n    cudaError_t e = cudaStreamQuery(stream_);\n    if (e == cudaSuccess) break;\n"
    << "    if (e != cudaErrorNotReady) CHECK(e, \"finish\");\n"
    << "    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeoutSeconds) {\n"
    << "      ncclCommAbort(comm_);\n"
    << "      throw coconet_rt::Error(\"" << p_.name << ": the run did not finish within \" + std::to_string(timeoutSeconds) +\n"
    << "                              \" s; a collective may be waiting for a rank that is not running\");\n    }\n"
    << "    std::this_thread::sleep_for(std::chrono::microseconds(50));\n  }\n"
    << "  int flag = 0;\n  CHECK(cudaMemcpy(&flag, errorFlag_, sizeof(int), cudaMemcpyDeviceToHost), \"finish\");\n"
    << "  if (flag) {\n    cudaMemset(errorFlag_, 0, sizeof(int));\n"
    << "    throw coconet_rt::Error(\"" << p_.name << ": an embedding index was out of range of its table\");\n  }\n"
    << (fallbackCls_.empty() ? "" : "  if (unscheduled_) unscheduled_->finish(timeoutSeconds);  // on the same stream: done\n")
    << "}\n\n";
  s << "void " << cls_ << "::run(const " << cls_ << "_sizes& sz, const " << cls_ << "_scalars& sc, const " << cls_
    << "_tensors& t, unsigned long long seed) {\n" << body_.str() << "}\n\n}  // namespace coconet_gen\n"
    << (o_.embedded ? "" : "\n" + cInterfaceSource());
  return s.str();
}

std::vector<std::pair<std::string, std::string>> Emitter::unprofitable() const {
  std::vector<std::pair<std::string, std::string>> conds;
  for (auto& [prod, ch] : chunked_) {
    if (ch.back < 0) continue;
    const TensorType& xt = p_.stages[prod].type;
    for (int id : ir::exchangeChain(p_, prod, ch.back).stages) {
      const Stage& s = p_.stages[id];
      if (s.kind != StageKind::Matmul) continue;
      const TensorType &at = p_.stages[s.operands[0]].type, &bt = p_.stages[s.operands[1]].type;
      if (at.rank() < 3 || bt.rank() < 2) continue;
      // one rank block's GEMM: A's rows but dimension 0 (the ranks), per weight of B's batch
      SizeExpr rows = SizeExpr::constant(1), batchB = SizeExpr::constant(1);
      for (int k = 1; k < at.rank() - 1; ++k) rows = rows * at.shape[k];
      for (int k = 0; k < bt.rank() - 2; ++k) batchB = batchB * bt.shape[k];
      conds.emplace_back("coconet_rt::gatherBatchedRows(" + cxx(SizeExpr::div(rows, batchB)) + ", " + cxx(at.shape[at.rank() - 1]) +
                             ", " + cxx(bt.shape[bt.rank() - 1]) + ", " + g(xt.group, "size") + ")",
                         "the pipeline's GEMMs of '" + s.name + "' would be read-bound (coconet_rt::gatherBatchedRows: " +
                             SizeExpr::div(rows, batchB).str() + " rows a weight, K = " + at.shape[at.rank() - 1].str() +
                             ", N = " + bt.shape[bt.rank() - 1].str() + ")");
    }
  }
  return conds;
}

void Emitter::emitFallbackCall() {
  if (fallbackCls_.empty()) return;
  const auto& own = fallbackWhenNot_;
  const auto& slow = fallbackWhen_;
  auto& b = body_;
  if (!own.empty()) b << "  // Where one of the schedule's own requirements does not hold" << (slow.empty() ? "" : ", or");
  if (!slow.empty())
    b << (own.empty() ? "  // Where" : "") << " the schedule's all_to_all pipeline's GEMMs would be read-bound\n"
      << "  // (each weight read once per rank block; the program unscheduled reads it once)";
  b << ", the\n  // program runs without its schedule (" << fallbackCls_ << ": the same values; the caller's tensors are stored\n"
    << "  // alike).\n  if (";
  bool first = true;
  for (auto* r : own) {
    b << (first ? "" : " ||\n      ") << "!(" << cxx(r->lhs) << " " << ast::binaryOpSpelling(r->op) << " " << cxx(r->rhs) << ")";
    first = false;
  }
  for (auto& c : slow) {
    b << (first ? "" : " ||\n      ") << c;
    first = false;
  }
  b << ") {" << (own.empty() ? "" : "  // " + own[0]->str() + (own.size() > 1 ? ", ..." : "")) << "\n"
    << "    if (!unscheduled_) unscheduled_ = new " << fallbackCls_ << "(comm_, stream_);\n"
    << "    " << fallbackCls_ << "_sizes usz;\n    " << fallbackCls_ << "_scalars usc;\n    " << fallbackCls_
    << "_tensors ut;\n";
  for (auto& prm : p_.params)
    if (prm.isSize) b << "    usz.s_" << prm.name << " = sz.s_" << prm.name << ";\n";
    else b << "    usc." << ident(prm.name) << " = sc." << ident(prm.name) << ";\n";
  for (auto& s : p_.stages)
    if (s.kind == StageKind::Input) b << "    ut." << ident(s.name) << " = t." << ident(s.name) << ";\n";
  for (auto& n : p_.outputNames) b << "    ut." << ident(n) << " = t." << ident(n) << ";\n";
  for (auto& st : p_.states) b << "    ut." << ident(st.name) << " = t." << ident(st.name) << ";\n";
  b << "    unscheduled_->run(usz, usc, ut, seed);\n    return;\n  }\n";
}

std::string Emitter::cInterfaceDecls() const {
  std::ostringstream h;
  h << "// C interface: the same program for callers without C++ (Python's ctypes, other languages).\n"
    << "// Each function returns 0 on success and 1 on failure; " << cfn("last_error") << "() says why.\n"
    << "// " << cfn("interface") << "() is JSON naming the order of sizes[], scalars[] and tensors[] and each\n"
    << "// scalar's dtype: an integer scalar's value is scalars[k].i, a float or bool one's scalars[k].f.\n"
    << "extern \"C\" {\n"
    << "#ifndef COCONET_SCALAR_DEFINED\n#define COCONET_SCALAR_DEFINED\n"
    << "typedef union coconet_scalar {\n  double f;\n  long long i;\n} coconet_scalar;\n#endif\n"
    << "const char* " << cfn("interface") << "(void);\n"
    << "const char* " << cfn("last_error") << "(void);\n"
    << "int " << cfn("unique_id") << "(char id[128]);\n"
    << "int " << cfn("create") << "(const char id[128], int rank, int nranks, void* stream, void** handle);\n"
    << "int " << cfn("run") << "(void* handle, const long long* sizes, const coconet_scalar* scalars, void* const* tensors,\n"
    << "    unsigned long long seed);\n"
    << "int " << cfn("finish") << "(void* handle, double timeout_seconds);\n"
    << "int " << cfn("local_shape") << "(void* handle, const char* tensor, const long long* sizes, long long shape[8], int* rank);\n"
    << "int " << cfn("destroy") << "(void* handle);\n"
    << "}\n";
  return h.str();
}

std::string Emitter::interfaceJson() const {
  nlohmann::json j;
  j["program"] = p_.name;
  j["sizes"] = nlohmann::json::array();
  j["scalars"] = nlohmann::json::array();
  for (auto& prm : p_.params) {
    if (prm.isSize) {
      j["sizes"].push_back(prm.name);
    } else {
      nlohmann::json d = nullptr;
      if (prm.value) d = ast::isInteger(prm.dtype) ? nlohmann::json(prm.ivalue) : nlohmann::json(*prm.value);
      j["scalars"].push_back({{"name", prm.name}, {"dtype", ast::dtypeName(prm.dtype)}, {"default", d}});
    }
  }
  auto entry = [&](const char* role, const std::string& name, const TensorType& t) {
    std::vector<std::string> shape;
    for (auto& d : t.shape) shape.push_back(d.str());
    const char* layout = t.layout.kind == Layout::Sliced ? "sliced" : t.layout.kind == Layout::Local ? "local" : "replicated";
    return nlohmann::json{{"name", name}, {"role", role}, {"dtype", ast::dtypeName(t.dtype)}, {"shape", shape}, {"layout", layout},
                          {"dim", t.layout.kind == Layout::Sliced ? nlohmann::json(t.layout.dim) : nlohmann::json(nullptr)},
                          {"group", t.group ? t.group->name : "world"}};
  };
  j["tensors"] = nlohmann::json::array();
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) j["tensors"].push_back(entry("in", st.name, st.type));
  for (size_t i = 0; i < p_.outputs.size(); ++i) j["tensors"].push_back(entry("out", p_.outputNames[i], p_.stages[p_.outputs[i]].type));
  for (auto& st : p_.states) j["tensors"].push_back(entry("state", st.name, st.type));
  return j.dump();
}

std::string Emitter::cInterfaceSource() const {
  std::ostringstream s;
  std::string C = "coconet_gen::" + cls_;
  int nSizes = 0, nScalars = 0, nTensors = static_cast<int>(p_.outputs.size() + p_.states.size());
  for (auto& prm : p_.params) (prm.isSize ? nSizes : nScalars)++;
  for (auto& st : p_.stages) nTensors += st.kind == StageKind::Input;
  // Every argument is checked: a handle must be one create() made and destroy() has not ended
  // (a registry of live handles), pointers the call reads must not be null.
  s << "// ---- C interface ----\nnamespace {\nthread_local std::string lastError_;\n"
    << "struct Handle_ {\n  ncclComm_t comm = nullptr;\n  " << C << "* program = nullptr;\n};\n"
    << "std::mutex handlesMutex_;\nstd::set<Handle_*> handles_;  // created and not destroyed\n"
    << "template <class F> int guarded_(F&& f) {\n  try {\n    f();\n    return 0;\n"
    << "  } catch (const std::exception& e) {\n    lastError_ = e.what();\n    return 1;\n  }\n}\n"
    << "void need_(const void* p, const char* what) {\n"
    << "  if (!p) throw coconet_rt::Error(std::string(\"" << p_.name << ": \") + what + \" is null\");\n}\n"
    << "// The live handle `handle` is (taken out of the registry with `take`: destroy's).\n"
    << "Handle_* live_(void* handle, bool take = false) {\n  std::lock_guard<std::mutex> lock(handlesMutex_);\n"
    << "  auto it = handles_.find(static_cast<Handle_*>(handle));\n"
    << "  if (it == handles_.end()) throw coconet_rt::Error(\"" << p_.name
    << ": not a live handle (null, never made by create, or destroyed)\");\n"
    << "  Handle_* h = *it;\n  if (take) handles_.erase(it);\n  return h;\n}\n"
    << C << "_sizes sizesFrom_(const long long* v) {\n  " << C << "_sizes sz;\n";
  if (nSizes) s << "  need_(v, \"sizes\");\n";
  int k = 0;
  for (auto& prm : p_.params)
    if (prm.isSize) s << "  sz.s_" << prm.name << " = v[" << k++ << "];\n";
  s << "  (void)v;\n  return sz;\n}\n}  // namespace\n\n";
  s << "extern \"C\" {\nconst char* " << cfn("interface") << "(void) {\n  return R\"coconet(" << interfaceJson()
    << ")coconet\";\n}\n\n";
  s << "const char* " << cfn("last_error") << "(void) { return lastError_.c_str(); }\n\n";
  s << "int " << cfn("unique_id") << "(char id[128]) {\n  return guarded_([&] {\n    need_(id, \"id\");\n    ncclUniqueId u;\n"
    << "    CHECK(ncclGetUniqueId(&u), \"unique_id\");\n    static_assert(sizeof u == 128, \"ncclUniqueId is 128 bytes\");\n"
    << "    std::memcpy(id, &u, sizeof u);\n  });\n}\n\n";
  s << "int " << cfn("create") << "(const char id[128], int rank, int nranks, void* stream, void** handle) {\n"
    << "  return guarded_([&] {\n    need_(id, \"id\");\n    need_(handle, \"handle\");\n"
    << "    if (nranks < 1 || rank < 0 || rank >= nranks)\n      throw coconet_rt::Error(\"" << p_.name
    << ": rank \" + std::to_string(rank) + \" of \" + std::to_string(nranks) + \" ranks\");\n"
    << "    ncclUniqueId u;\n    std::memcpy(&u, id, sizeof u);\n    auto* h = new Handle_;\n"
    << "    try {\n      CHECK(ncclCommInitRank(&h->comm, nranks, u, rank), \"create\");\n"
    << "      h->program = new " << C << "(h->comm, static_cast<cudaStream_t>(stream));\n"
    << "    } catch (...) {\n      if (h->comm) ncclCommDestroy(h->comm);\n      delete h;\n      throw;\n    }\n"
    << "    std::lock_guard<std::mutex> lock(handlesMutex_);\n    handles_.insert(h);\n    *handle = h;\n  });\n}\n\n";
  s << "int " << cfn("run") << "(void* handle, const long long* sizes, const coconet_scalar* scalars, void* const* tensors,\n"
    << "    unsigned long long seed) {\n  return guarded_([&] {\n    Handle_* h = live_(handle);\n";
  if (nScalars) s << "    need_(scalars, \"scalars\");\n";
  if (nTensors) s << "    need_(tensors, \"tensors\");\n";
  s << "    " << C << "_scalars sc;\n";
  k = 0;
  for (auto& prm : p_.params)
    if (!prm.isSize) s << "    sc." << ident(prm.name) << " = scalars[" << k++ << "]." << (ast::isInteger(prm.dtype) ? "i" : "f") << ";\n";
  s << "    (void)scalars;\n    " << C << "_tensors t;\n";
  k = 0;
  for (auto& st : p_.stages)
    if (st.kind == StageKind::Input) s << "    t." << ident(st.name) << " = tensors[" << k++ << "];\n";
  for (size_t i = 0; i < p_.outputs.size(); ++i) s << "    t." << ident(p_.outputNames[i]) << " = tensors[" << k++ << "];\n";
  for (auto& st : p_.states) s << "    t." << ident(st.name) << " = tensors[" << k++ << "];\n";
  s << "    (void)tensors;\n    h->program->run(sizesFrom_(sizes), sc, t, seed);\n  });\n}\n\n";
  s << "int " << cfn("finish") << "(void* handle, double timeout_seconds) {\n"
    << "  return guarded_([&] { live_(handle)->program->finish(timeout_seconds); });\n}\n\n";
  s << "int " << cfn("local_shape") << "(void* handle, const char* tensor, const long long* sizes, long long shape[8], int* rank) {\n"
    << "  return guarded_([&] {\n    Handle_* h = live_(handle);\n    need_(tensor, \"tensor\");\n    need_(shape, \"shape\");\n"
    << "    need_(rank, \"rank\");\n    int r = h->program->localShape(tensor, sizesFrom_(sizes), shape);\n"
    << "    if (r < 0) throw coconet_rt::Error(std::string(\"" << p_.name << ": no tensor named '\") + tensor + \"'\");\n"
    << "    *rank = r;\n  });\n}\n\n";
  s << "int " << cfn("destroy") << "(void* handle) {\n  return guarded_([&] {\n    Handle_* h = live_(handle, true);\n"
    << "    delete h->program;\n    ncclComm_t c = h->comm;\n    delete h;\n    CHECK(ncclCommDestroy(c), \"destroy\");\n  });\n}\n}  // extern \"C\"\n";
  return s.str();
}

void Emitter::emitBody() {
  auto& b = body_;
  b << "  (void)sc;\n  (void)seed;\n  const coconet_rt::SizeMath S_{\"" << p_.name << "\"};\n  (void)S_;\n";
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
    const char *lo = prm.dtype == DType::I8 ? "-128LL" : prm.dtype == DType::U8 ? "0LL" : "-2147483648LL",
               *hi = prm.dtype == DType::I8 ? "127LL" : prm.dtype == DType::U8 ? "255LL" : "2147483647LL";
    b << "  coconet_rt::checkIntegerScalar(sc." << ident(prm.name) << ", " << lo << ", " << hi << ", \"" << p_.name << "\", \""
      << prm.name << "\", \"" << ast::dtypeName(prm.dtype) << "\");\n";
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
          b << "  coconet_rt::checkProbability(" << paramValue(q->name) << ", \"" << p_.name << "\", \"" << s.name << "\", \""
            << q->name << "\");\n";
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
      b << "  coconet_rt::checkProbabilityOf(static_cast<double>(static_cast<float>(" << *value << ")), \"" << p_.name << "\", \""
        << s.name << "\", \"" << jsonEscape(text) << "\");\n";
    }
  // Group coordinates (consecutive blocks of ranks, as the language defines).
  b << "  const long long g0_inst = 0, g0_pos = rank_, g0_size = P_;\n";
  for (size_t gi = 1; gi < p_.groups.size(); ++gi) {
    const GroupInfo* gr = p_.groups[gi].get();
    int pi = groupIndex(gr->parent);
    std::string k = "k" + std::to_string(gi), pp = "g" + std::to_string(pi);
    b << "  const long long " << k << " = " << cxx(gr->count) << ";\n"
      << "  if (" << k << " <= 0 || " << pp << "_size % " << k << " != 0) throw coconet_rt::Error(\"" << p_.name
      << ": group '" << gr->name << "' splits \" + std::to_string(" << pp << "_size) + \" ranks into \" + std::to_string("
      << k << ") + \" parts\");\n"
      << "  const long long g" << gi << "_size = " << pp << "_size / " << k << ";\n"
      << "  const long long g" << gi << "_inst = " << pp << "_inst * " << k << " + " << pp << "_pos / g" << gi << "_size;\n"
      << "  const long long g" << gi << "_pos = " << pp << "_pos % g" << gi << "_size;\n"
      << "  if (!gcomm_[" << gi << "] || gcommSize_[" << gi << "] != g" << gi << "_size) {\n"
      << "    if (gcomm_[" << gi << "]) CHECK(ncclCommDestroy(gcomm_[" << gi << "]), \"group " << gr->name << "\");\n"
      << "    CHECK(ncclCommSplit(comm_, static_cast<int>(g" << gi << "_inst), static_cast<int>(g" << gi
      << "_pos), &gcomm_[" << gi << "], nullptr), \"group " << gr->name << "\");\n"
      << "    gcommSize_[" << gi << "] = g" << gi << "_size;\n  }\n";
  }
  for (size_t gi = 0; gi < p_.groups.size(); ++gi)
    b << "  (void)g" << gi << "_inst; (void)g" << gi << "_pos; (void)g" << gi << "_size;\n";
  for (auto& r : p_.requirements) {
    if (scheduleOwn(r)) continue;  // emitFallbackCall
    std::string op = ast::binaryOpSpelling(r.op);
    b << "  if (!(" << cxx(r.lhs) << " " << op << " " << cxx(r.rhs) << ")) throw coconet_rt::Error(\"" << p_.name
      << ": requirement " << r.str() << " does not hold (" << jsonEscape(r.reason) << "): \"";
    // A divisibility requirement (a % b == 0) says which sizes: "H = 4097 is not a multiple of world.size = 4".
    const auto rem = r.op == ast::BinaryOp::Eq && r.rhs.constantValue() == std::optional<int64_t>(0) ? r.lhs.asRemainder() : std::nullopt;
    if (rem) {
      b << " \"" << jsonEscape(rem->first.str()) << " = \" + std::to_string(" << cxx(rem->first) << ") + \" is not a multiple of "
        << jsonEscape(rem->second.str());
      if (rem->second.isConstant()) b << "\");\n";  // (a constant divisor without its value again)
      else b << " = \" + std::to_string(" << cxx(rem->second) << "));\n";
    } else
      b << " + std::to_string(" << cxx(r.lhs) << ") + \" " << op << " \" + std::to_string(" << cxx(r.rhs) << ") + \" is false\");\n";
  }
  emitFallbackCall();
  // Local shapes and element counts of every value.
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    b << "  const long long " << shapeVar(static_cast<int>(i)) << "[" << std::max(1, s.type.rank()) << "] = {";
    for (int k = 0; k < s.type.rank(); ++k) {
      std::string d = cxx(s.type.shape[k]);
      if (s.type.group && s.type.layout.kind == Layout::Sliced && s.type.layout.dim == k)
        d = "(" + d + " / " + g(s.type.group, "size") + ")";
      b << (k ? ", " : "") << d;
    }
    if (s.type.rank() == 0) b << "1";
    b << "};\n  const long long " << countVar(static_cast<int>(i)) << " = S_.count(" << shapeVar(static_cast<int>(i)) << ", "
      << s.type.rank() << ", " << dtypeBytes(s.type.dtype) << ", \"" << s.name << "\");\n  (void)"
      << countVar(static_cast<int>(i)) << ";\n  (void)" << shapeVar(static_cast<int>(i)) << ";\n";
  }
  // Every tensor given must lie in device memory, its whole storage inside one allocation.
  auto span = [&](const std::string& field, int id, const char* role, const std::string& name) {
    b << "  coconet_rt::checkDeviceSpan(t." << field << ", " << countVar(id) << " * " << dtypeBytes(p_.stages[id].type.dtype)
      << "LL, \"" << p_.name << "\", \"" << role << "\", \"" << name << "\");\n";
  };
  for (size_t i = 0; i < p_.outputNames.size(); ++i) {
    const std::string& o = p_.outputNames[i];
    b << "  if (!t." << ident(o) << ") throw coconet_rt::Error(\"" << p_.name << ": output '" << o << "' is not given\");\n";
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
        b << "  if (!t." << ident(s.name) << ") throw coconet_rt::Error(\"" << p_.name << ": tensor '" << s.name << "' is not given\");\n";
        span(ident(s.name), id, "tensor", s.name);
        b << "  const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.name) << ");\n";
        break;
      case Storage::State:
        b << "  if (!t." << ident(s.state) << ") throw coconet_rt::Error(\"" << p_.name << ": state '" << s.state << "' is not given\");\n";
        span(ident(s.state), id, "state", s.state);
        b << "  [[maybe_unused]] const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.state) << ");\n";
        break;
      case Storage::InBag:
        b << "  // " << s.name << ": gathered inside the reduction '" << p_.stages[d.from].name << "', never stored\n";
        break;
      case Storage::InKernel:
        b << "  // " << s.name << ": computed and used inside fused group '" << s.fusedInto << "' only\n";
        break;
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
        b << "  " << T << "* " << var(id) << " = nullptr;  // " << s.name << ": stored only where its all_to_all pipeline runs as NCCL pairs\n";
        break;
      case Storage::BlockOnly:
        b << "  // " << s.name << ": one rank block at a time (the all_to_all pipeline's steps)\n"
          << "  " << bufferEnsure(id, countVar(id) + " / " + d.into) << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(buf" << i
          << "_.ptr);\n";
        break;
      case Storage::FallbackOnly:
        b << "  " << T << "* " << var(id) << " = nullptr;  // " << s.name << ": stored only where fused group '" << s.fusedInto
          << "' runs as NCCL calls\n";
        break;
      case Storage::Buffer:
        b << "  " << bufferEnsure(id) << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(buf" << i << "_.ptr);\n";
        break;
    }
  }
  // Stages in order, as the plan says (with --timeline, a mark on stream_ after each launch).
  if (o_.timeline) b << "  tl_.begin(stream_, comm_, rank_, \"" << p_.name << "\");\n";
  for (size_t i = 0; i < p_.stages.size(); ++i) emitPlanned(static_cast<int>(i));
  // Outputs and new states.
  b << "\n  // Outputs and the states' new values.\n";
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    int id = p_.outputs[i];
    if (auto d = direct_.find(id); d != direct_.end() && d->second.first == p_.outputNames[i]) continue;
    b << "  CHECK(cudaMemcpyAsync(t." << ident(p_.outputNames[i]) << ", " << var(id) << ", " << countVar(id) << " * sizeof("
      << storageType(p_.stages[id].type.dtype) << "), cudaMemcpyDeviceToDevice, stream_), \"" << p_.outputNames[i] << "\");\n";
  }
  for (auto& st : p_.states) {
    if (st.exit == st.entry) continue;
    if (auto d = direct_.find(st.exit); d != direct_.end() && d->second.first == st.name) continue;
    const Stage& ex = p_.stages[st.exit];
    std::string T = storageType(st.type.dtype);
    std::string src = var(st.exit);
    std::string n = countVar(st.exit);
    if (st.type.layout.kind == Layout::Sliced && ex.type.layout.kind != Layout::Sliced) {
      // A whole value kept as this rank's slice of dimension 0: a contiguous block.
      n = countVar(st.entry);
      src = var(st.exit) + " + " + g(st.type.group, "pos") + " * " + countVar(st.entry);
    }
    b << "  CHECK(cudaMemcpyAsync(t." << ident(st.name) << ", " << src << ", " << n << " * sizeof(" << T
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
      emitDeviceGroup(devGroups_.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::RowGroup:
      emitRowGroup(rowGroups_.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InRowGroup:
      b << "\n  " << stageComment(s) << ": in the row kernel of fused group '" << rowGroups_.at(own).name << "' above\n";
      return;
    case Step::ScalarChain:
      emitScalarChain(scalarChains_.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InScalarChain:
      b << "\n  " << stageComment(s) << ": in the kernel of " << scalarChains_.at(own).name << " above\n";
      return;
    case Step::InDeviceGroup:
      b << "\n  " << stageComment(s) << ": in the fused group's kernel above\n";
      return;
    case Step::InReduction:
      b << "\n  " << stageComment(s) << ": computed inside the reduction '" << p_.stages[own].name << "'\n";
      return;
    case Step::OverlapProducer:
      if (chunked_.at(i).back >= 0)  // at the returning all_to_all: the stages between may read values computed before it
        b << "\n  " << stageComment(s) << ": exchanged block by block in the pipeline at '" << p_.stages[own].name << "' below\n";
      else
        b << "\n  " << stageComment(s) << ": computed in the overlapped chunks below\n";
      return;
    case Step::Overlap:
      emitChunked(chunked_.at(own));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::DeviceAllReduce:
      emitDeviceAllReduce(devAR_.at(i));
      b << tlMark("  ", "stream_", d.what);
      return;
    case Step::InAllReducePair:
      b << "\n  " << stageComment(s) << ": one allreduce with the all_gather after it\n";
      return;
    case Step::AllReducePair: {
      const Stage& r = p_.stages[arPair_.at(i)];
      const GroupInfo* gr = r.type.group ? r.type.group : p_.world();
      b << "\n  " << stageComment(s) << ": with '" << r.name << "', one allreduce\n  if (" << countVar(i) << " > 0) {\n"
        << "    CHECK(ncclAllReduce(" << var(r.operands[0]) << ", " << var(i) << ", " << countVar(i) << ", " << ncclType(s.type.dtype)
        << ", " << ncclOp(r.op) << ", " << commOf(gr) << ", stream_), \"" << s.fusedInto << "\");\n  }\n"
        << tlMark("  ", "stream_", s.fusedInto);
      return;
    }
    case Step::InBag:
      b << "\n  " << stageComment(s) << ": gathered inside the reduction '" << p_.stages[own].name << "'\n";
      return;
    case Step::InOverlap: {
      bool below = false;  // in an all_to_all pipeline, emitted at its returning all_to_all
      for (auto& [prod, ch] : chunked_) below = below || (ch.back > i && prod < i);
      b << "\n  " << stageComment(s) << ": computed in the overlapped chunks " << (below ? "below" : "above") << "\n";
      return;
    }
    case Step::InRun:
    case Step::Stage:
      break;
  }
  if (!d.unchunked.empty()) b << "\n  // overlap of '" << s.name << "' runs unchunked: " << d.unchunked;
  if (d.step == Step::InRun) {
    b << "\n  " << stageComment(s) << ": computed by the kernel of '" << p_.stages[own].name << "'\n";
    return;
  }
  b << "\n  " << stageComment(s) << "\n  if (" << countVar(i) << " > 0) {\n";
  emitStage(i);
  b << "  }\n" << tlMark("  ", "stream_", s.name);
}

std::string Emitter::tlMark(const std::string& ind, const std::string& stream, const std::string& label,
                            const std::string& index) const {
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
  auto nIn = [&](int k) { return countVar(s.operands[k]); };
  auto inT = [&](int k) { return p_.stages[s.operands[k]].type; };
  const GroupInfo* gr = s.type.group ? s.type.group : p_.world();
  switch (s.kind) {
    case StageKind::Compute:
      if (auto it = runOf_.find(id); it != runOf_.end()) {
        if (it->second.front() == id) emitComputeRun(it->second);
      } else {
        emitComputeRun({id});
      }
      break;
    case StageKind::Reduce: emitReduce(id); break;
    case StageKind::Softmax: case StageKind::Layernorm: case StageKind::Rmsnorm: emitRowwise(id); break;
    case StageKind::Matmul: case StageKind::Gemv: emitGemm(id); break;
    case StageKind::Embedding: emitEmbedding(id); break;
    case StageKind::AllReduce:
      b << "    CHECK(ncclAllReduce(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype)
        << ", " << ncclOp(s.op) << ", " << commOf(gr) << ", stream_), " << name << ");\n";
      break;
    case StageKind::ReduceScatter:
      b << "    CHECK(ncclReduceScatter(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", "
        << ncclType(s.type.dtype) << ", " << ncclOp(s.op) << ", " << commOf(gr) << ", stream_), " << name << ");\n";
      break;
    case StageKind::AllGather: {
      int d = inT(0).layout.dim;
      if (d == 0) {
        b << "    CHECK(ncclAllGather(" << in(0) << ", " << var(id) << ", " << nIn(0) << ", " << ncclType(s.type.dtype)
          << ", " << commOf(gr) << ", stream_), " << name << ");\n";
      } else {
        // Gather the slices one after another, then put each where dimension d says.
        std::string kname = "k_unslice_" + std::to_string(id);
        kernels_ << "// " << s.name << ": places the gathered slices along dimension " << d << ".\n"
                 << "__global__ void " << kname << "(const " << T << "* __restrict__ tmp, " << T
                 << "* __restrict__ out, OutputMap om, long long slice, long long localExtent) {\n"
                 << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < om.n; i += (long long)gridDim.x * blockDim.x) {\n"
                 << "    long long rem = i, src = 0, mul = 1, part = 0;\n"
                 << "    for (int k = om.rank - 1; k >= 0; --k) {\n      long long c = rem % om.shape[k];\n      rem /= om.shape[k];\n"
                 << "      long long ext = om.shape[k];\n      if (k == " << d << ") { part = c / localExtent; c %= localExtent; ext = localExtent; }\n"
                 << "      src += c * mul;\n      mul *= ext;\n    }\n    out[i] = tmp[part * slice + src];\n  }\n}\n\n";
        b << "    gatherTmp_.ensure(static_cast<size_t>(" << countVar(id) << ") * sizeof(" << T << "), \"" << p_.name << "\", " << name << ");\n"
          << "    CHECK(ncclAllGather(" << in(0) << ", gatherTmp_.ptr, " << nIn(0) << ", " << ncclType(s.type.dtype) << ", "
          << commOf(gr) << ", stream_), " << name << ");\n"
          << "    OutputMap om{};\n    om.rank = " << s.type.rank() << ";\n    om.n = " << countVar(id) << ";\n"
          << "    for (int k = 0; k < om.rank; ++k) om.shape[k] = " << shapeVar(id) << "[k];\n"
          << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(static_cast<const " << T << "*>(gatherTmp_.ptr), " << var(id)
          << ", om, " << nIn(0) << ", " << shapeVar(s.operands[0]) << "[" << d << "]);\n"
          << "    CHECK(cudaGetLastError(), " << name << ");\n";
      }
      break;
    }
    case StageKind::Broadcast: case StageKind::Reduce1: {
      std::string root = s.root.param.empty() ? std::to_string(static_cast<long long>(s.root.value))
                                              : "static_cast<long long>(" + paramValue(s.root.param) + ")";
      b << "    const long long root = " << root << ";\n"
        << "    if (root < 0 || root >= " << g(gr, "size") << ") throw coconet_rt::Error(\"" << p_.name << ": stage '"
        << s.name << "': root \" + std::to_string(root) + \" is not a rank of group '" << gr->name << "'\");\n";
      if (s.kind == StageKind::Broadcast) {
        b << "    CHECK(ncclBroadcast(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype)
          << ", static_cast<int>(root), " << commOf(gr) << ", stream_), " << name << ");\n";
      } else {
        b << "    CHECK(ncclReduce(" << in(0) << ", " << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype)
          << ", " << ncclOp(s.op) << ", static_cast<int>(root), " << commOf(gr) << ", stream_), " << name << ");\n"
          << "    if (" << g(gr, "pos") << " != root) CHECK(cudaMemsetAsync(" << var(id) << ", 0, " << countVar(id)
          << " * sizeof(" << T << "), stream_), " << name << ");\n";
      }
      break;
    }
    case StageKind::AllToAll: {
      b << "    const long long chunk = " << countVar(id) << " / " << g(gr, "size") << ";\n";
      std::string ind = "    ";
      if (auto da = devA2A_.find(id); da != devA2A_.end()) {
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
          << "      const bool vec = chunk % " << V << " == 0 && coconet_rt::aligned16(" << in(0) << ", 0) && coconet_rt::aligned16("
          << var(id) << ", 0);\n"
          << "      coconet_rt::dev_all_to_all<" << T << ", " << V << "><<<coconet_rt::devBlocks(chunk / " << V
          << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in(0)
          << ", " << var(id) << ", chunk, static_cast<int>(" << g(gr, "inst") << " * " << g(gr, "size") << "), static_cast<int>("
          << g(gr, "size") << "), static_cast<int>(" << g(gr, "pos") << "), vec);\n"
          << "      CHECK(cudaGetLastError(), " << name << ");\n"
          << "      dev_->parity[" << gi << "] ^= 1;\n"
          << "    } else {\n";
        ind = "      ";
      }
      b << ind << "CHECK(ncclGroupStart(), " << name << ");\n"
        << ind << "for (long long j = 0; j < " << g(gr, "size") << "; ++j) {\n"
        << ind << "  CHECK(ncclSend(" << in(0) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), "
        << commOf(gr) << ", stream_), " << name << ");\n"
        << ind << "  CHECK(ncclRecv(" << var(id) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), "
        << commOf(gr) << ", stream_), " << name << ");\n" << ind << "}\n"
        << ind << "CHECK(ncclGroupEnd(), " << name << ");\n";
      if (devA2A_.count(id)) b << "    }\n";
      break;
    }
    case StageKind::Send: {
      bool ranks = s.peer == Peer::NextRank || s.peer == Peer::PrevRank;
      bool next = s.peer == Peer::NextRank || s.peer == Peer::NextGroup;
      std::string comm = ranks ? commOf(gr) : "comm_";
      if (ranks) {
        b << "    const long long size = " << g(gr, "size") << ", pos = " << g(gr, "pos") << ";\n"
          << "    const int to = static_cast<int>((pos + " << (next ? "1" : "size - 1") << ") % size);\n"
          << "    const int from = static_cast<int>((pos + " << (next ? "size - 1" : "1") << ") % size);\n";
      } else {
        b << "    const long long size = " << g(gr, "size") << ", count = P_ / size, inst = " << g(gr, "inst")
          << ", pos = " << g(gr, "pos") << ";\n"
          << "    const int to = static_cast<int>(((inst + " << (next ? "1" : "count - 1") << ") % count) * size + pos);\n"
          << "    const int from = static_cast<int>(((inst + " << (next ? "count - 1" : "1") << ") % count) * size + pos);\n";
      }
      std::string ind = "    ";
      if (auto ds = devSend_.find(id); ds != devSend_.end()) {
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
          << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, w.win, dev_->parity[" << gi
          << "] * (w.bytes / 2), " << in(0) << ", " << var(id) << ", " << countVar(id) << ", "
          << (ranks ? "static_cast<int>(" + g(gr, "inst") + " * size) + to" : std::string("to")) << ", vec);\n"
          << "      CHECK(cudaGetLastError(), " << name << ");\n"
          << "      dev_->parity[" << gi << "] ^= 1;\n"
          << "    } else {\n";
        ind = "      ";
      }
      b << ind << "CHECK(ncclGroupStart(), " << name << ");\n"
        << ind << "CHECK(ncclSend(" << in(0) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", to, " << comm
        << ", stream_), " << name << ");\n"
        << ind << "CHECK(ncclRecv(" << var(id) << ", " << countVar(id) << ", " << ncclType(s.type.dtype) << ", from, " << comm
        << ", stream_), " << name << ");\n" << ind << "CHECK(ncclGroupEnd(), " << name << ");\n";
      if (devSend_.count(id)) b << "    }\n";
      break;
    }
    default:
      break;
  }
}

void Emitter::emitMaps(int id, const std::vector<int>& operands) {
  const Stage& s = p_.stages[id];
  auto& b = body_;
  int R = s.type.rank();
  int sd = s.type.group && s.type.layout.kind == Layout::Sliced ? s.type.layout.dim : -1;
  b << "    OutputMap om{};\n    om.rank = " << R << ";\n    om.n = " << countVar(id) << ";\n";
  b << "    long long gshape[" << std::max(R, 1) << "] = {";
  for (int k = 0; k < R; ++k) b << (k ? ", " : "") << cxx(s.type.shape[k]);
  if (R == 0) b << "1";
  b << "};\n    const long long off = " << (sd >= 0 ? g(s.type.group, "pos") + " * " + shapeVar(id) + "[" + std::to_string(sd) + "]" : "0")
    << ";\n    (void)off;\n";
  b << "    { long long st = 1;\n      for (int k = om.rank - 1; k >= 0; --k) { om.shape[k] = " << shapeVar(id)
    << "[k]; om.gstride[k] = st; st *= gshape[k]; } }\n";
  b << "    om.gbase = " << (sd >= 0 ? "off * om.gstride[" + std::to_string(sd) + "]" : "0") << ";\n";
  bool local = s.type.group && s.type.layout.kind == Layout::Local;
  b << "    om.keyXor = (static_cast<unsigned long long>(" << g(s.type.group, "inst") << ") << 48)"
    << (local ? " ^ (static_cast<unsigned long long>(rank_ + 1) << 40)" : "") << ";\n";
  for (size_t k = 0; k < operands.size(); ++k) {
    const Stage& os = p_.stages[operands[k]];
    int orank = os.type.rank();
    int osd = os.type.group && os.type.layout.kind == Layout::Sliced ? os.type.layout.dim : -1;
    b << "    [[maybe_unused]] OperandMap m" << k << "{};  // the coordinate path's map (fast paths use bases)\n";
    if (orank == 0) continue;
    b << "    { [[maybe_unused]] long long st = 1;\n";
    for (int j = orank - 1; j >= 0; --j) {
      int outDim = j + R - orank;
      // Broadcast along this dimension exactly when the types say so (a constant 1 against
      // something else): a slice of extent 1 is not a broadcast.
      bool bcast = os.type.shape[j].constantValue() == 1 && s.type.shape[outDim].constantValue() != 1;
      b << "      m" << k << ".stride[" << outDim << "] = " << (bcast ? "0" : "st") << ";\n";
      if (j > 0) b << "      st *= " << shapeVar(operands[k]) << "[" << j << "];\n";
      // The output is sliced along this dimension, the operand holds it whole: start at the slice.
      if (outDim == sd && osd != j)
        b << "      m" << k << ".base += (m" << k << ".stride[" << outDim << "] ? off * m" << k << ".stride[" << outDim << "] : 0);\n";
    }
    b << "    }\n";
  }
}

std::string Emitter::storeValue(DType t, const ENode& last, const std::string& v) {
  if (t == DType::Bool) return "static_cast<uint8_t>((" + v + ") ? 1 : 0)";
  return "coconet_rt::Store<" + std::string(storageType(t)) + ">::from(static_cast<" +
         (last.integerValued() && last.dtype != DType::Bool ? "long long" : "double") + ">(" + v + "))";
}

std::string Emitter::nodeCode(const Expr& x, const ENode& n, const std::string& v, const std::vector<std::string>& args,
                     const std::string& operand, const std::string& scalar, const std::string& ind) {
  std::string CT = n.integerConst() ? "long long" : computeType(n.dtype);
  auto a = [&](int k) { return "static_cast<" + CT + ">(" + args[k] + ")"; };
  bool fl = std::string(CT) == "float", db = std::string(CT) == "double", in = CT == "long long";
  // Comparisons, min and max of two integer values compare them as integers (as long long),
  // the others as doubles.
  const bool ints = n.args.size() >= 2 && x.nodes[n.args[0]].integerValued() && x.nodes[n.args[1]].integerValued();
  auto cmp = [&](int k) { return (ints ? "static_cast<long long>(" : "(double)(") + args[k] + ")"; };
  auto call = [&](const char* f, int count) {
    std::string s = std::string("coconet_rt::") + f + "(";
    for (int k = 0; k < count; ++k) s += (k ? ", " : "") + a(k);
    return s + ")";
  };
  std::string e;
  switch (n.op) {
    case EOp::Operand: e = operand; break;
    case EOp::Const: e = n.integerConst() ? std::to_string(n.ivalue) + "LL" : num(n.value); break;
    case EOp::Param: e = "prm_" + ident(n.name); break;
    case EOp::Rank: case EOp::GroupIndex: case EOp::GroupSize: e = scalar; break;
    case EOp::Neg: e = in ? call("ineg", 1) : "-" + a(0); break;
    case EOp::Not: e = "!(" + args[0] + ")"; break;
    case EOp::Add: e = fl ? "__fadd_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dadd_rn(" + a(0) + ", " + a(1) + ")" : in ? call("iadd", 2) : a(0) + " + " + a(1); break;
    case EOp::Sub: e = fl ? "__fsub_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dsub_rn(" + a(0) + ", " + a(1) + ")" : in ? call("isub", 2) : a(0) + " - " + a(1); break;
    case EOp::Mul: e = fl ? "__fmul_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dmul_rn(" + a(0) + ", " + a(1) + ")" : in ? call("imul", 2) : a(0) + " * " + a(1); break;
    case EOp::Div:
      e = fl ? "__fdiv_rn(" + a(0) + ", " + a(1) + ")" : db ? "__ddiv_rn(" + a(0) + ", " + a(1) + ")"
             : in ? call("idiv", 2) : "(" + a(1) + " == 0 ? 0 : " + a(0) + " / " + a(1) + ")";
      break;
    case EOp::Mod: e = fl ? "fmodf(" + a(0) + ", " + a(1) + ")" : db ? "fmod(" + a(0) + ", " + a(1) + ")"
                          : in ? call("imod", 2) : "(" + a(1) + " == 0 ? 0 : " + a(0) + " % " + a(1) + ")"; break;
    case EOp::Lt: e = cmp(0) + " < " + cmp(1); break;
    case EOp::Le: e = cmp(0) + " <= " + cmp(1); break;
    case EOp::Gt: e = cmp(0) + " > " + cmp(1); break;
    case EOp::Ge: e = cmp(0) + " >= " + cmp(1); break;
    case EOp::Eq: e = cmp(0) + " == " + cmp(1); break;
    case EOp::Ne: e = cmp(0) + " != " + cmp(1); break;
    case EOp::And: e = "(" + args[0] + ") && (" + args[1] + ")"; break;
    case EOp::Or: e = "(" + args[0] + ") || (" + args[1] + ")"; break;
    case EOp::Sqrt: e = (fl ? "sqrtf(" : "sqrt(") + a(0) + ")"; break;
    case EOp::Rsqrt: e = fl ? "__fdiv_rn(1.0f, sqrtf(" + a(0) + "))" : "1.0 / sqrt(" + a(0) + ")"; break;
    case EOp::Exp: e = (fl ? "expf(" : "exp(") + a(0) + ")"; break;
    case EOp::Log: e = (fl ? "logf(" : "log(") + a(0) + ")"; break;
    case EOp::Tanh: e = (fl ? "tanhf(" : "tanh(") + a(0) + ")"; break;
    case EOp::Sigmoid: e = fl ? "__fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-" + a(0) + ")))" : "1.0 / (1.0 + exp(-" + a(0) + "))"; break;
    case EOp::Abs: e = in ? call("iabs", 1) : (fl ? "fabsf(" : db ? "fabs(" : "llabs(") + a(0) + ")"; break;
    case EOp::Relu: e = "(" + a(0) + " > 0 ? " + a(0) + " : static_cast<" + CT + ">(0))"; break;
    case EOp::Gelu: e = "coconet_rt::gelu(" + a(0) + ")"; break;
    case EOp::Pow: e = fl ? "powf(" + a(0) + ", " + a(1) + ")" : in ? call("ipow", 2) : "pow((double)" + args[0] + ", (double)" + args[1] + ")"; break;
    case EOp::Min: e = "(" + cmp(1) + " < " + cmp(0) + " ? " + a(1) + " : " + a(0) + ")"; break;
    case EOp::Max: e = "(" + cmp(0) + " < " + cmp(1) + " ? " + a(1) + " : " + a(0) + ")"; break;
    case EOp::Select: e = "((" + args[0] + ") ? " + a(1) + " : " + a(2) + ")"; break;
    case EOp::Cast:
      switch (n.dtype) {
        case DType::F16: e = "coconet_rt::round_f16(static_cast<float>(" + args[0] + "))"; break;
        case DType::BF16: e = "coconet_rt::round_bf16(static_cast<float>(" + args[0] + "))"; break;
        case DType::Bool: e = "((" + args[0] + ") != 0)"; break;
        case DType::I8: case DType::U8: case DType::I32: case DType::I64: {
          // from an integer exactly (saturated to the type), from a float truncated and saturated
          const std::string I = n.dtype == DType::I8 ? "int8_t" : n.dtype == DType::U8 ? "uint8_t" : n.dtype == DType::I32 ? "int" : "long long";
          e = x.nodes[n.args[0]].integerValued() ? "coconet_rt::saturateInteger<" + I + ">(static_cast<long long>(" + args[0] + "))"
                                                 : "coconet_rt::saturate<" + I + ">((double)(" + args[0] + "))";
          break;
        }
        default: e = a(0);
      }
      break;
    case EOp::Dropout: {
      std::string seed = n.args.size() > 2 ? "static_cast<unsigned long long>(static_cast<long long>(" + args[2] + "))" : "seed";
      std::string p = "static_cast<float>(" + args[1] + ")";
      // The kept value first, as its own statement: inside the select, nvcc turned the select
      // into a branch around a division per element (the division's operand is the same for
      // every element, and out of the select it is hoisted from the loop).
      const std::string kept = fl ? "__fmul_rn(" + a(0) + ", __fdiv_rn(1.0f, __fsub_rn(1.0f, " + p + ")))"
                                  : a(0) + " / (1.0 - (double)(" + args[1] + "))";
      return ind + "const " + CT + " " + v + "_kept = " + kept + ";\n" +
             ind + "const " + CT + " " + v + " = (coconet_rt::dropout_uniform(" + seed + ", " + std::to_string(n.salt) + "ULL, key) < " + p +
             " ? " + std::string(fl ? "0.0f" : "0.0") + " : " + v + "_kept);\n";
    }
  }
  return ind + "const " + CT + " " + v + " = " + e + ";\n";
}

std::string Emitter::fastIndex(Access a, size_t k, const std::string& i, const std::string& iMod) {
  const std::string kk = std::to_string(k);
  return a == Access::Linear ? "b" + kk + " + " + i : a == Access::Modulo ? iMod + " % b" + kk
                              : a == Access::Row      ? "b" + kk + " + " + i + " / rl"
                                                      : "b" + kk;
}

bool Emitter::rowBroadcast(const TensorType& ot, const TensorType& t) {
  const int r = t.rank();
  if (r < 2 || ot.rank() != r || ot.shape.back().constantValue() != 1 || t.shape.back().constantValue() == 1) return false;
  for (int k = 0; k + 1 < r; ++k)
    if (ot.shape[k] != t.shape[k]) return false;
  const bool outSliced = t.group && t.layout.kind == Layout::Sliced, opSliced = ot.group && ot.layout.kind == Layout::Sliced;
  if (outSliced && t.layout.dim != 0) return false;
  return !opSliced || (outSliced && ot.layout == t.layout && ot.group == t.group);  // as Linear's rule: whole, or the same slice
}

Emitter::Access Emitter::accessOf(int operand, const Stage& out) const {
  const TensorType& ot = p_.stages[operand].type;
  const TensorType& t = out.type;
  bool allOne = true;
  for (auto& d : ot.shape) allOne = allOne && d.constantValue() == 1;
  if (allOne) return Access::Scalar;
  bool outSliced = t.group && t.layout.kind == Layout::Sliced;
  bool opSliced = ot.group && ot.layout.kind == Layout::Sliced;
  if (outSliced && t.layout.dim != 0) return Access::Mapped;
  if (ot.shape == t.shape) {
    if (!opSliced) return Access::Linear;  // whole: its block of dimension 0 when the output is a slice
    if (outSliced && ot.layout == t.layout && ot.group == t.group) return Access::Linear;
    return Access::Mapped;
  }
  // Trailing dimensions of the output (after leading constant 1s), held whole.
  if (opSliced) return Access::Mapped;
  int lead = 0;
  while (lead < ot.rank() && ot.shape[lead].constantValue() == 1) ++lead;
  int r = ot.rank() - lead, R = t.rank();
  if (r <= 0 || r >= R) return Access::Mapped;
  for (int k = 0; k < r; ++k)
    if (ot.shape[lead + k] != t.shape[R - r + k]) return Access::Mapped;
  return Access::Modulo;  // output dims < R - r vary slowest; a slice of dim 0 keeps whole rows
}

std::string Emitter::paramValue(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name && prm.isSize) return "static_cast<double>(sz.s_" + name + ")";
  return "sc." + ident(name);
}

std::string Emitter::scalarValue(const ScalarRef& r) const { return r.param.empty() ? num(r.value) : paramValue(r.param); }

bool Emitter::integerParam(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name) return prm.isSize || ast::isInteger(prm.dtype);
  return false;
}

std::string Emitter::paramInteger(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name && prm.isSize) return "sz.s_" + name;
  return "sc." + ident(name);
}

std::optional<std::string> Emitter::hostScalar(const Expr& e, int i) const {
  const ENode& n = e.nodes[static_cast<size_t>(i)];
  const std::string CT = n.integerConst() ? "long long" : computeType(n.dtype);
  const bool flt = CT == "float" || CT == "double", fl = CT == "float";
  std::vector<std::string> args;
  for (int a : n.args) {
    auto t = hostScalar(e, a);
    if (!t) return std::nullopt;
    args.push_back(*t);
  }
  auto a = [&](size_t k) { return "static_cast<" + CT + ">(" + args[k] + ")"; };
  const bool in = CT == "long long";  // integers: coconet_rt's wrapping arithmetic, as the kernels
  switch (n.op) {
    case EOp::Const: return n.integerConst() ? "static_cast<" + CT + ">(" + std::to_string(n.ivalue) + "LL)"
                                             : "static_cast<" + CT + ">(" + num(n.value) + ")";
    case EOp::Param:
      return "static_cast<" + CT + ">(" + (integerParam(n.name) ? paramInteger(n.name) : paramValue(n.name)) + ")";
    case EOp::Cast:
      if (n.dtype != DType::F32 && n.dtype != DType::F64) return std::nullopt;
      return a(0);
    case EOp::Neg: return in ? "coconet_rt::ineg(" + a(0) + ")" : "(-" + a(0) + ")";
    case EOp::Add: return in ? "coconet_rt::iadd(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " + " + a(1) + ")";
    case EOp::Sub: return in ? "coconet_rt::isub(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " - " + a(1) + ")";
    case EOp::Mul: return in ? "coconet_rt::imul(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " * " + a(1) + ")";
    case EOp::Div:
      if (!flt) return std::nullopt;
      return "(" + a(0) + " / " + a(1) + ")";
    case EOp::Min: return "(" + a(1) + " < " + a(0) + " ? " + a(1) + " : " + a(0) + ")";
    case EOp::Max: return "(" + a(0) + " < " + a(1) + " ? " + a(1) + " : " + a(0) + ")";
    case EOp::Sqrt: if (!flt) return std::nullopt; return std::string(fl ? "sqrtf(" : "sqrt(") + a(0) + ")";
    case EOp::Exp: if (!flt) return std::nullopt; return std::string(fl ? "expf(" : "exp(") + a(0) + ")";
    case EOp::Log: if (!flt) return std::nullopt; return std::string(fl ? "logf(" : "log(") + a(0) + ")";
    default: return std::nullopt;
  }
}

void Emitter::runParams(const std::vector<int>& run, std::vector<std::string>& params, std::vector<std::string>& hostArgs) const {
  std::set<std::string> prms;
  for (int id : run) {
    const Stage& s = p_.stages[id];
    for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
      const ENode& n = s.expr.nodes[i];
      if (n.op == EOp::Param && prms.insert(n.name).second) {
        const bool integer = integerParam(n.name);
        params.push_back(std::string(integer ? "long long" : "double") + " prm_" + ident(n.name));
        hostArgs.push_back(integer ? paramInteger(n.name) : paramValue(n.name));
      }
      if (n.op == EOp::Rank || n.op == EOp::GroupIndex || n.op == EOp::GroupSize) {
        params.push_back("long long gv" + std::to_string(id) + "_" + std::to_string(i));
        hostArgs.push_back(g(n.group, n.op == EOp::Rank ? "pos" : n.op == EOp::GroupIndex ? "inst" : "size"));
      }
    }
  }
}

std::string Emitter::runMembers(const std::vector<int>& run, const std::map<int, int>& extIndex, const std::vector<int>& written,
                       const std::string& ind, const std::function<std::string(int)>& operand,
                       const std::function<std::string(int)>& store, bool uniqueNames) {
  std::set<int> inRun(run.begin(), run.end());
  std::ostringstream m;
  for (int id : run) {
    const Stage& s = p_.stages[id];
    std::string pre = run.size() > 1 || uniqueNames ? "v" + std::to_string(id) + "_" : "v";
    std::vector<char> uniform(s.expr.nodes.size(), 0);  // the same for every element (hoist_)
    for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
      const ENode& n = s.expr.nodes[i];
      std::vector<std::string> args;
      for (int a : n.args) args.push_back(pre + std::to_string(a));
      const std::string name = pre + std::to_string(i), scalar = "gv" + std::to_string(id) + "_" + std::to_string(i);
      if (hoist_) {
        bool u = n.op == EOp::Const || n.op == EOp::Param || n.op == EOp::Rank || n.op == EOp::GroupIndex || n.op == EOp::GroupSize;
        if (!u && n.op != EOp::Operand && n.op != EOp::Dropout && !n.args.empty()) {
          u = true;
          for (int a : n.args) u = u && uniform[static_cast<size_t>(a)];
        }
        uniform[i] = u;
        if (u) {
          if (hoist_->names.insert(name).second) hoist_->code << nodeCode(s.expr, n, name, args, "", scalar, "  ");
          continue;
        }
      }
      std::string opnd;
      if (n.op == EOp::Operand) {
        int o = s.operands[n.index];
        opnd = inRun.count(o) ? "r" + std::to_string(o) : operand(extIndex.at(o));
      }
      m << nodeCode(s.expr, n, name, args, opnd, scalar, ind);
    }
    std::string last = pre + std::to_string(s.expr.nodes.size() - 1);
    std::string T = storageType(s.type.dtype);
    std::string stored = storeValue(s.type.dtype, s.expr.nodes.back(), last);
    m << ind << "const " << T << " s" << id << " = " << stored << ";\n"
      << ind << "const auto r" << id << " = coconet_rt::to_f(s" << id << ");\n" << ind << "(void)r" << id << ";\n";
  }
  for (int id : written) m << ind << store(id) << "\n";
  return m.str();
}

void Emitter::emitComputeRun(const std::vector<int>& run, const std::string& stream, const std::string& first,
                    const std::string& count) {
  int ref = run.front();
  const Stage& r0 = p_.stages[ref];
  std::set<int> inRun(run.begin(), run.end());
  std::vector<int> ext;
  std::map<int, int> extIndex;
  for (int id : run)
    for (int o : p_.stages[id].operands)
      if (!inRun.count(o) && !extIndex.count(o)) {
        extIndex[o] = static_cast<int>(ext.size());
        ext.push_back(o);
      }
  std::vector<int> written;
  for (int id : run)
    if (neededOutside(id, inRun)) written.push_back(id);
  // Vector width: 16 bytes of the narrowest array, at most 8 elements.
  std::vector<Access> acc;
  bool fast = true;
  int minBytes = 16;
  bool rows = false;  // an operand of one value a row (a keepdim reduction's result): the kernel takes the row length
  for (int o : ext) {
    Access a = accessOf(o, r0);
    if (a == Access::Mapped && rowBroadcast(p_.stages[o].type, r0.type)) a = Access::Row;
    rows = rows || a == Access::Row;
    acc.push_back(a);
    fast = fast && acc.back() != Access::Mapped;
    if (acc.back() == Access::Linear || acc.back() == Access::Modulo) minBytes = std::min(minBytes, dtypeBytes(p_.stages[o].type.dtype));
  }
  for (int id : written) minBytes = std::min(minBytes, dtypeBytes(p_.stages[id].type.dtype));
  if (r0.type.group && r0.type.layout.kind == Layout::Sliced && r0.type.layout.dim != 0) fast = false;
  const int V = std::min(8, 16 / minBytes);
  auto isAliasedOut = [&](int id) {
    for (auto& st : p_.states)
      if (st.exit == id && aliased_.count(st.entry)) return true;
    return false;
  };
  std::string kname = "k_" + std::to_string(ref) + "_" + ident(run.size() > 1 ? r0.fusedInto : r0.name);
  std::vector<std::string> params, hostArgs;
  for (int id : written) {
    params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + (isAliasedOut(id) ? "* out" : "* __restrict__ out") +
                     std::to_string(id));
    hostArgs.push_back(var(id));
  }
  for (size_t k = 0; k < ext.size(); ++k) {
    params.push_back("const " + std::string(storageType(p_.stages[ext[k]].type.dtype)) +
                     (aliased_.count(ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
    hostArgs.push_back(var(ext[k]));
  }
  params.push_back("OutputMap om");
  hostArgs.push_back("om");
  for (size_t k = 0; k < ext.size(); ++k) {
    params.push_back(fast ? "long long b" + std::to_string(k) : "OperandMap m" + std::to_string(k));
    hostArgs.push_back(fast ? (acc[k] == Access::Modulo ? countVar(ext[k]) : "m" + std::to_string(k) + ".base")
                            : "m" + std::to_string(k));
  }
  runParams(run, params, hostArgs);
  params.push_back("unsigned long long seed");
  hostArgs.push_back("seed");
  if (fast) {
    params.push_back("int vec");
    hostArgs.push_back("vec");
  }
  const std::string rowLength = shapeVar(ref) + "[" + std::to_string(std::max(0, r0.type.rank() - 1)) + "]";
  if (fast && rows) {
    params.push_back("long long rl");  // the row length (the output's last dimension), for the one-value-a-row operands
    hostArgs.push_back(rowLength);
  }
  for (int id : run) kernels_ << "// " << p_.stages[id].name << " = " << exprTextFor(p_.stages[id]) << "\n";
  if (run.size() > 1) kernels_ << "// (fused group '" << r0.fusedInto << "': one pass over the elements)\n";
  if (fast) kernels_ << "// Linear accesses: " << V << " elements per step with vector loads and stores where aligned.\n";
  kernels_ << "__global__ void " << kname << "(";
  for (size_t k = 0; k < params.size(); ++k) kernels_ << (k ? ", " : "") << params[k];
  kernels_ << ") {\n  (void)seed;\n";
  // The kernel's loops go to `loops`, after the values they hoist (hoist_).
  Hoisted hoisted;
  HoistScope hoisting(hoist_, hoisted);
  std::ostringstream loops;
  // The members of one element: operand(k) reads external operand k, store(id) writes member id.
  auto members = [&](const std::string& ind, const std::function<std::string(int)>& operand,
                     const std::function<std::string(int)>& store) {
    return runMembers(run, extIndex, written, ind, operand, store);
  };
  if (!fast) {
    loops << "  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < om.n; j += (long long)gridDim.x * blockDim.x) {\n"
          << "    const long long i = j + om.first;\n"
          << "    long long c[coconet_rt::kMaxRank];\n    long long rem = i, gidx = om.gbase;\n"
          << "    for (int k = om.rank - 1; k >= 0; --k) { c[k] = rem % om.shape[k]; rem /= om.shape[k]; gidx += c[k] * om.gstride[k]; }\n"
          << "    const unsigned long long key = static_cast<unsigned long long>(gidx) ^ om.keyXor;\n    (void)key;\n";
    for (size_t k = 0; k < ext.size(); ++k)
      loops << "    long long i" << k << " = m" << k << ".base;\n    for (int k = 0; k < om.rank; ++k) i" << k << " += c[k] * m" << k << ".stride[k];\n";
    loops << members("    ", [](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[i" + std::to_string(k) + "])"; },
                     [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
    loops << "  }\n}\n\n";
  } else {
    auto scalarIndex = [&](size_t k, const std::string& i) { return fastIndex(acc[k], k, i, i); };
    loops << "  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;\n"
          << "  long long start = 0;\n  if (vec) {\n    constexpr int V = " << V << ";\n    const long long nv = om.n / V;\n"
          << "    for (long long jv = tid; jv < nv; jv += nth) {\n      const long long i0 = om.first + jv * V;\n";
    for (size_t k = 0; k < ext.size(); ++k) {
      std::string kk = std::to_string(k), T = storageType(p_.stages[ext[k]].type.dtype);
      if (acc[k] == Access::Scalar || acc[k] == Access::Row) {  // (a row's V elements share its value: rl % V == 0)
        loops << "      const " << T << " x" << kk << " = a" << kk << "[" << scalarIndex(k, "i0") << "];\n";
      } else {
        loops << "      coconet_rt::Vec<" << T << ", V> x" << kk << ";\n      coconet_rt::load_vec" << (aliased_.count(ext[k]) ? "_rw" : "")
              << "(x" << kk << ", a" << kk << " + " << scalarIndex(k, "i0") << ");\n";
      }
    }
    for (int id : written)
      loops << "      coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
    loops << "#pragma unroll\n      for (int e = 0; e < V; ++e) {\n        const long long i = i0 + e;\n"
          << "        const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n        (void)key;\n";
    loops << members("        ",
                     [&](int k) {
                       std::string kk = std::to_string(k);
                       return acc[k] == Access::Scalar || acc[k] == Access::Row ? "coconet_rt::to_f(x" + kk + ")"
                                                                                : "coconet_rt::to_f(x" + kk + ".v[e])";
                     },
                     [](int id) { return "o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";"; });
    loops << "      }\n";
    for (int id : written) loops << "      coconet_rt::store_vec(out" << id << " + i0, o" << id << ");\n";
    loops << "    }\n    start = nv * V;\n  }\n"
          << "  for (long long j = start + tid; j < om.n; j += nth) {\n    const long long i = om.first + j;\n"
          << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n    (void)key;\n";
    loops << members("    ", [&](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[" + scalarIndex(k, "i") + "])"; },
                     [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
    loops << "  }\n}\n\n";
  }
  hoisting.end();
  kernels_ << hoisted.prologue() << loops.str();
  emitMaps(ref, ext);
  std::string n = countVar(ref);
  if (!first.empty()) {
    body_ << "    om.first = " << first << ";\n    om.n = " << count << ";\n";
    n = count;
  }
  std::string grid = "coconet_rt::gridFor(" + n + ")";
  if (fast) {
    // Vector accesses need every array 16-byte aligned where the launch starts, and each
    // modulo operand's period a multiple of V.
    body_ << "    const bool vec = om.first % " << V << " == 0";
    for (int id : written) body_ << " &&\n        coconet_rt::aligned16(" << var(id) << ", om.first)";
    for (size_t k = 0; k < ext.size(); ++k) {
      if (acc[k] == Access::Linear) body_ << " &&\n        coconet_rt::aligned16(" << var(ext[k]) << ", m" << k << ".base + om.first)";
      if (acc[k] == Access::Modulo)
        body_ << " &&\n        " << countVar(ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(ext[k]) << ", 0)";
    }
    if (rows) body_ << " &&\n        " << rowLength << " % " << V << " == 0";
    body_ << ";\n";
    grid = "coconet_rt::gridFor(vec ? " + n + " / " + std::to_string(V) + " + 1 : " + n + ")";
  }
  body_ << "    " << kname << "<<<" << grid << ", 256, 0, " << stream << ">>>(";
  for (size_t k = 0; k < hostArgs.size(); ++k) body_ << (k ? ", " : "") << hostArgs[k];
  body_ << ");\n    CHECK(cudaGetLastError(), \"" << (run.size() > 1 ? r0.fusedInto : r0.name) << "\");\n";
}

void Emitter::planRuns() {
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    if (s.kind != StageKind::Compute || s.fusedInto.empty() || runOf_.count(static_cast<int>(i)) || rowGroupOf_.count(static_cast<int>(i)))
      continue;
    std::vector<int> run{static_cast<int>(i)};
    for (size_t j = i + 1; j < p_.stages.size(); ++j) {
      const Stage& t = p_.stages[j];
      if (t.kind != StageKind::Compute || t.fusedInto != s.fusedInto || t.type.shape != s.type.shape || rowGroupOf_.count(static_cast<int>(j)) ||
          t.type.layout != s.type.layout || t.type.group != s.type.group)
        break;
      run.push_back(static_cast<int>(j));
    }
    if (run.size() < 2) continue;
    for (int id : run) runOf_[id] = run;
    std::set<int> inRun(run.begin(), run.end());
    for (int id : run)
      if (!neededOutside(id, inRun)) unstored_.insert(id);
  }
}

void Emitter::emitIndented(const std::string& ind, const std::function<void()>& emit) {
  std::ostringstream saved;
  saved << body_.str();
  body_.str("");
  body_.clear();
  emit();
  std::string text = body_.str();
  body_.str("");
  body_.clear();
  body_ << saved.str();
  std::istringstream ms(text);
  for (std::string line; std::getline(ms, line);) body_ << ind << line << "\n";
}

void Emitter::planDirect() {
  for (auto& st : p_.states) {
    int x = st.exit;
    if (x == st.entry || direct_.count(x) || unstored_.count(x)) continue;
    const Stage& ex = p_.stages[x];
    if (ex.kind == StageKind::Input || ex.kind == StageKind::State) continue;
    if (ex.type.shape != st.type.shape || ex.type.layout != st.type.layout || ex.type.group != st.type.group) continue;
    const std::vector<int>* run = nullptr;
    if (auto r = runOf_.find(x); r != runOf_.end()) run = &r->second;
    bool safe = true, sameKernel = false;
    for (size_t i = 0; i < p_.stages.size() && safe; ++i)
      for (int o : p_.stages[i].operands) {
        if (o != st.entry) continue;
        int ri = static_cast<int>(i);
        bool inKernel = ri == x || (run && std::find(run->begin(), run->end(), ri) != run->end());
        if (inKernel && ex.kind == StageKind::Compute) {
          // Same element only: the entry has the exit's type, so its index map is the identity.
          if (p_.stages[st.entry].type.shape != ex.type.shape) safe = false;
          sameKernel = true;
        } else if (ri >= x || (run && ri >= run->front())) {
          safe = false;
        }
      }
    if (!safe) continue;
    direct_[x] = {st.name, "the storage of state '" + st.name + "'"};
    if (sameKernel) aliased_.insert(st.entry);
  }
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    int x = p_.outputs[i];
    const Stage& ex = p_.stages[x];
    if (direct_.count(x) || unstored_.count(x) || ex.kind == StageKind::Input || ex.kind == StageKind::State) continue;
    direct_[x] = {p_.outputNames[i], "output '" + p_.outputNames[i] + "'"};
  }
}

std::string Emitter::exprTextFor(const Stage& s) const {
  std::vector<std::string> names;
  for (int o : s.operands) names.push_back(p_.stages[o].name);
  return s.expr.str(names);
}

void Emitter::emitGemm(int id) {
  const Stage& s = p_.stages[id];
  DType dt = s.type.dtype;
  bool f64 = dt == DType::F64;
  int a = s.operands[0], bop = s.operands[1];
  int ra = p_.stages[a].type.rank();
  auto& b = body_;
  if (s.kind == StageKind::Gemv) {
    b << "    const long long M = " << shapeVar(a) << "[0], K = " << shapeVar(a) << "[1], N = 1, batch = 1;\n"
      << "    const long long strideA = 0, strideB = 0, strideC = 0, reps = 1, stepA = 0, stepB = 0, stepC = 0, baseA = 0, baseB = 0;\n";
    if (!f64) {
      // Memory-bound: the runtime's warp-per-row kernel where there are rows enough to keep every
      // SM's loads in flight; cuBLAS below that (its m = 1 GEMM splits K as well).
      b << "    if (M >= coconet_rt::kGemvMinRows) {\n"
        << "      coconet_rt::gemv(" << var(a) << ", " << var(bop) << ", " << var(id) << ", M, K, stream_);\n"
        << "      CHECK(cudaGetLastError(), \"" << s.name << "\");\n"
        << "    } else {\n";
    }
  } else {
    int rb = p_.stages[bop].type.rank();
    const std::string rows = shapeVar(a) + "[" + std::to_string(ra - 2) + "]";
    b << "    const long long M = " << rows << ", K = " << shapeVar(a) << "[" << ra - 1 << "], N = "
      << shapeVar(bop) << "[" << rb - 1 << "];\n"
      << "    const long long batchA = " << countVar(a) << " / (M * K), batchB = " << countVar(bop) << " / (K * N), batchC = "
      << countVar(id) << " / (M * N);\n"
      << "    long long Mx = M, batch = batchC, strideA = M * K, strideB = K * N, strideC = M * N;\n"
      << "    long long reps = 1, stepA = 0, stepB = 0, stepC = 0, baseA = 0, baseB = 0;\n"
      << "    long long batchA_ = batchA, batchB_ = batchB;\n";
    // The result sliced along batch dimension 0 while an operand holds that dimension whole:
    // the operand starts at this rank's slice.
    const TensorType& ct = s.type;
    if (ct.group && ct.layout.kind == Layout::Sliced && ct.layout.dim == 0 && ct.rank() > 2) {
      for (int opi = 0; opi < 2; ++opi) {
        const TensorType& ot = p_.stages[s.operands[opi]].type;
        bool whole = ot.rank() == ct.rank() && !(ot.group && ot.layout.kind == Layout::Sliced && ot.layout.dim == 0);
        if (whole)
          b << "    if (batch" << (opi == 0 ? "A" : "B") << " > batchC) { base" << (opi == 0 ? "A" : "B") << " = " << g(ct.group, "pos")
            << " * batchC * " << (opi == 0 ? "M * K" : "K * N") << "; batch" << (opi == 0 ? "A" : "B") << "_ = batchC; }\n";
      }
    }
    // (batchA_/batchB_: the batch counts each GEMM sees after taking the rank's slice.)
    b << "    if (batchB_ == 1) { Mx = M * batchC; batch = 1; strideB = 0; }        // fold A's batches into its rows\n"
      << "    else if (batchA_ == 1) { strideA = 0; }\n"
      << "    else if (batchA_ == batchC && batchB_ < batchC && batchC % batchB_ == 0) {\n"
      << "      batch = batchB_; reps = batchC / batchB_; stepA = batchB_ * M * K; stepC = batchB_ * M * N;  // B repeats over A's leading batches\n"
      << "    } else if (batchB_ == batchC && batchA_ < batchC && batchC % batchA_ == 0) {\n"
      << "      batch = batchA_; reps = batchC / batchA_; stepB = batchA_ * K * N; stepC = batchA_ * M * N;\n"
      << "    } else if (batchA_ != batchC || batchB_ != batchC) throw coconet_rt::Error(\"" << p_.name << ": stage '" << s.name
      << "': batch dimensions that broadcast partially are not supported\");\n";
  }
  std::string M = s.kind == StageKind::Gemv ? "M" : "Mx";
  const std::string in = s.kind == StageKind::Gemv && !f64 ? "      " : "    ";  // inside the else of the gemv kernel
  const std::string stage = "\"" + s.name + "\"";
  b << in << "const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n";
  if (s.kind == StageKind::Matmul) {
    // B repeats over A's leading batches with few rows per GEMM: A's rows gathered B-major, one
    // GEMM per B, the result's rows put back (coconet_rt::gatherBatchedRows).
    const std::string T = storageType(dt), i = std::to_string(id);
    b << "    if (stepB == 0 && coconet_rt::gatherBatchedRows(M, K, N, reps)) {\n"
      << "      bmm" << i << "_[0].ensure(static_cast<size_t>(reps * batch * M * K) * sizeof(" << T << "), \"" << p_.name << "\", " << stage << ");\n"
      << "      bmm" << i << "_[1].ensure(static_cast<size_t>(reps * batch * M * N) * sizeof(" << T << "), \"" << p_.name << "\", " << stage << ");\n"
      << "      " << T << "* ga = static_cast<" << T << "*>(bmm" << i << "_[0].ptr);\n"
      << "      " << T << "* gc = static_cast<" << T << "*>(bmm" << i << "_[1].ptr);\n"
      << "      coconet_rt::swapLeadingDims(" << var(a) << " + baseA, ga, reps, batch, M * K, stream_);  // [reps][batch] -> [batch][reps]\n"
      << "      CHECK(cudaGetLastError(), " << stage << ");\n"
      << "      " << gemmCall(dt, "reps * M", var(bop) + " + baseB", "strideB", "ga", "reps * M * K", "gc", "reps * M * N", "batch", stage)
      << "      coconet_rt::swapLeadingDims(gc, " << var(id) << ", batch, reps, M * N, stream_);  // and back\n"
      << "      CHECK(cudaGetLastError(), " << stage << ");\n"
      << "    } else {\n";
  }
  const std::string in2 = s.kind == StageKind::Matmul ? "  " : "";
  b << in << in2 << "for (long long r = 0; r < reps; ++r)\n"
    << in << in2 << "  "
    << gemmCall(dt, M, var(bop) + " + baseB + r * stepB", "strideB", var(a) + " + baseA + r * stepA", "strideA", var(id) + " + r * stepC",
                "strideC", "batch", stage);
  if (s.kind == StageKind::Matmul) b << "    }\n";
  if (s.kind == StageKind::Gemv && !f64) b << "    }\n";
}

std::string Emitter::gemmCall(DType dt, const std::string& M, const std::string& B, const std::string& strideB, const std::string& A,
                              const std::string& strideA, const std::string& C, const std::string& strideC, const std::string& batch,
                              const std::string& stage) const {
  const std::string ty = cudaDataType(dt);
  return "CHECK(cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(" + M +
         "), static_cast<int>(K), &alpha, " + B + ", " + ty + ", static_cast<int>(N), " + strideB + ", " + A + ", " + ty +
         ", static_cast<int>(K), " + strideA + ", &beta, " + C + ", " + ty + ", static_cast<int>(N), " + strideC + ", static_cast<int>(" +
         batch + "), " + (dt == DType::F64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F") + ", CUBLAS_GEMM_DEFAULT), " + stage + ");\n";
}

void Emitter::emitEmbedding(int id) {
  const Stage& s = p_.stages[id];
  const Stage& tab = p_.stages[s.operands[0]];
  const Stage& idx = p_.stages[s.operands[1]];
  std::string T = storageType(s.type.dtype), IT = storageType(idx.type.dtype);
  std::string kname = "k_" + std::to_string(id) + "_" + ident(s.name);
  kernels_ << "// " << s.name << " = embedding(" << tab.name << ", " << idx.name << "): rows outside this rank's shard are zero\n"
           << "__global__ void " << kname << "(const " << T << "* __restrict__ table, const " << IT << "* __restrict__ idx, " << T
           << "* __restrict__ out, long long n, long long D, long long rows, long long firstRow, long long globalRows, int* error) {\n"
           << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n * D; i += (long long)gridDim.x * blockDim.x) {\n"
           << "    const long long v = static_cast<long long>(idx[i / D]);\n"
           << "    if (v < 0 || v >= globalRows) { atomicExch(error, 1); out[i] = coconet_rt::Store<" << T << ">::from(0.0); continue; }\n"
           << "    const long long r = v - firstRow;\n"
           << "    out[i] = (r >= 0 && r < rows) ? table[r * D + i % D] : coconet_rt::Store<" << T << ">::from(0.0);\n  }\n}\n\n";
  bool rowSliced = tab.type.group && tab.type.layout.kind == Layout::Sliced && tab.type.layout.dim == 0;
  body_ << "    const long long rows = " << shapeVar(s.operands[0]) << "[0], D = " << shapeVar(s.operands[0]) << "[1];\n"
        << "    const long long firstRow = " << (rowSliced ? g(tab.type.group, "pos") + " * rows" : "0") << ";\n"
        << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(" << var(s.operands[0]) << ", " << var(s.operands[1]) << ", "
        << var(id) << ", " << countVar(s.operands[1]) << ", D, rows, firstRow, " << cxx(tab.type.shape[0]) << ", errorFlag_);\n"
        << "    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
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
