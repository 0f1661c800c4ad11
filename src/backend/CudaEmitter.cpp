// CUDA code generation for a scheduled IR program (see CudaEmitter.h).
#include "backend/CudaEmitter.h"

#include "ir/Rewrite.h"

#include <cctype>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace coconet::backend {

using namespace ir;

namespace {

const char* kRuntimeHeader =
#include "coconet_runtime_text.inc"
    ;
const char* kDriverTemplate =
#include "coconet_driver_text.inc"
    ;
const char* kDeviceHeader =
#include "coconet_device_text.inc"
    ;

// ---- Types ---------------------------------------------------------------------------------
const char* storageType(DType t) {
  switch (t) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I8: return "int8_t";
    case DType::U8: case DType::Bool: return "uint8_t";
    case DType::I32: return "int";
    default: return "long long";
  }
}

// The type an expression node is computed in (the interpreter's rules).
const char* computeType(DType t) {
  switch (t) {
    case DType::F16: case DType::BF16: case DType::F32: return "float";
    case DType::Bool: return "bool";
    case DType::I8: case DType::U8: case DType::I32: case DType::I64: return "long long";
    default: return "double";  // f64 and literals
  }
}

const char* ncclType(DType t) {
  switch (t) {
    case DType::F16: return "ncclHalf";
    case DType::BF16: return "ncclBfloat16";
    case DType::F32: return "ncclFloat";
    case DType::F64: return "ncclDouble";
    case DType::I8: return "ncclInt8";
    case DType::U8: case DType::Bool: return "ncclUint8";
    case DType::I32: return "ncclInt32";
    default: return "ncclInt64";
  }
}

const char* cudaDataType(DType t) {
  switch (t) {
    case DType::F16: return "CUDA_R_16F";
    case DType::BF16: return "CUDA_R_16BF";
    case DType::F64: return "CUDA_R_64F";
    default: return "CUDA_R_32F";
  }
}

const char* ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "ncclSum";
    case ReduceOp::Prod: return "ncclProd";
    case ReduceOp::Max: return "ncclMax";
    case ReduceOp::Min: return "ncclMin";
  }
  return "ncclSum";
}

std::string ident(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A size expression as C++ over the run's sizes (sz.NAME) and the world size (P_).
std::string cxx(const SizeExpr& e) {
  std::string s = e.str(), out;
  for (size_t i = 0; i < s.size();) {
    if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.')) ++j;
      std::string id = s.substr(i, j - i);
      out += id == "world.size" ? "P_" : "sz.s_" + id;
      i = j;
    } else {
      out += s[i++];
    }
  }
  return "(" + out + ")";
}

class Emitter {
public:
  Emitter(const Program& p, const CompileOptions& o) : p_(p), o_(o), cls_(ident(p.name)) {}

  void run(std::vector<std::string>& files) {
    checkSupported();
    planBags();
    planAllReducePairs();
    planRuns();
    planOverlaps();
    planDirect();
    planDeviceGroups();
    planDeviceAllReduces();
    planDeviceChunked();
    planInlinedReductions();
    planFoldedReductions();
    planScalarChains();
    planDeviceSends();
    std::filesystem::create_directories(o_.outDir);
    write("coconet_runtime.cuh", kRuntimeHeader, files);
    if (usesDevice()) write("coconet_device.cuh", kDeviceHeader, files);
    std::string header = headerText(), source = sourceText(), driver = driverText();
    write(cls_ + ".h", header, files);
    write(cls_ + ".cu", source, files);
    write(cls_ + "_main.cu", driver, files);
    write("CMakeLists.txt", cmakeText(), files);
    write("manifest.json", manifestText(header + source + driver + kRuntimeHeader + (usesDevice() ? kDeviceHeader : "")), files);
  }

private:
  const Program& p_;
  const CompileOptions& o_;
  std::string cls_;
  std::ostringstream kernels_, body_;

  void write(const std::string& name, const std::string& text, std::vector<std::string>& files) {
    auto path = std::filesystem::path(o_.outDir) / name;
    std::ofstream f(path);
    if (!f) throw std::runtime_error("cannot write " + path.string());
    f << text;
    files.push_back(path.string());
  }

  // What the backend does not lower yet is refused at compile time, naming the stage.
  void checkSupported() {
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

  std::string stageComment(const Stage& s) const {
    std::string c = "// " + s.name + ": " + stageKindName(s.kind) + " -> " + s.type.str();
    if (!s.fusedInto.empty()) c += " (fused group '" + s.fusedInto + "')";
    return c;
  }

  std::string var(int id) const { return "v" + std::to_string(id); }
  std::string shapeVar(int id) const { return "sh" + std::to_string(id); }
  std::string countVar(int id) const { return "n" + std::to_string(id); }

  std::string commOf(const GroupInfo* g) const {
    if (!g || g->depth == 0) return "comm_";
    return "gcomm_[" + std::to_string(groupIndex(g)) + "]";
  }
  int groupIndex(const GroupInfo* g) const {
    for (size_t i = 0; i < p_.groups.size(); ++i)
      if (p_.groups[i].get() == g) return static_cast<int>(i);
    return 0;
  }
  std::string g(const GroupInfo* gi, const char* field) const {
    return "g" + std::to_string(gi ? groupIndex(gi) : 0) + "_" + field;
  }

  // ---- The header: the C++ API ----
  std::string headerText() {
    std::ostringstream h;
    h << "// " << p_.name << ".h: generated by coconetc " << COCONETC_VERSION << " from " << o_.sourcePath
      << (o_.schedulePath.empty() ? "" : " with schedule " + o_.schedulePath) << ". Do not edit.\n"
      << "#pragma once\n\n#include <cublas_v2.h>\n#include <cuda_runtime.h>\n#include <nccl.h>\n\n"
      << "#include \"coconet_runtime.cuh\"\n\nnamespace coconet_gen {\n\n";
    h << "// The program's size parameters, bound at run time.\nstruct " << cls_ << "_sizes {\n";
    for (auto& prm : p_.params)
      if (prm.isSize) h << "  long long s_" << prm.name << " = " << (prm.value ? std::to_string(prm.ivalue) : "0") << ";\n";
    h << "};\n\n// Its scalar parameters (defaults from the program).\nstruct " << cls_ << "_scalars {\n";
    for (auto& prm : p_.params)
      if (!prm.isSize)
        h << "  double " << ident(prm.name) << " = "
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
      << "// communicator. run() enqueues the program on the stream; finish() waits for it with a time\n"
      << "// limit and reports device-side errors. Errors are coconet_rt::Error naming the stage.\n"
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
      << "  int* errorFlag_ = nullptr;\n";
    for (size_t i = 0; i < p_.stages.size(); ++i)
      if (p_.stages[i].kind != StageKind::Input && p_.stages[i].kind != StageKind::State)
        h << "  coconet_rt::Buffer buf" << i << "_;  // " << p_.stages[i].name << "\n";
    for (size_t i = 0; i < p_.stages.size(); ++i)
      if (p_.stages[i].kind == StageKind::Reduce)
        h << "  coconet_rt::Buffer red" << i << "_;  // partial results of " << p_.stages[i].name << "\n";
    h << "  coconet_rt::Buffer gatherTmp_;\n";
    if (usesDevice())
      h << "  // Collectives over NCCL's device API: device communicator and windows.\n"
        << "  struct Dev_;\n  Dev_* dev_ = nullptr;\n  bool devReady(const char* stage);\n";
    if (!chunked_.empty())
      h << "  // Overlapped stages: the GEMM's chunks on stream_, their collectives and epilogue on comm2_.\n"
        << "  cudaStream_t comm2_ = nullptr;\n  cudaEvent_t ovStart_ = nullptr, ovDone_ = nullptr, ovGemm_[2] = {}, ovFree_[2] = {};\n"
        << "  coconet_rt::Buffer stage_[2], gath_[2];\n";
    if (gatherMayPipe())
      h << "  // An overlap's all-gather by copy engines, chunk by chunk (comm3_), after each chunk's epilogue (ovRed_).\n"
        << "  cudaStream_t comm3_ = nullptr;\n  cudaEvent_t ovRed_ = nullptr;\n";
    h << "};\n\n}  // namespace coconet_gen\n\n" << cInterfaceDecls();
    return h.str();
  }

  // ---- The source ----
  std::string sourceText() {
    std::ostringstream s;
    s << "// " << p_.name << ".cu: generated by coconetc " << COCONETC_VERSION << " from " << o_.sourcePath
      << (o_.schedulePath.empty() ? " (no schedule)" : " with schedule " + o_.schedulePath) << ". Do not edit.\n";
    if (!o_.scheduleText.empty()) {
      s << "//\n// Schedule applied:\n";
      std::istringstream in(o_.scheduleText);
      for (std::string line; std::getline(in, line);) s << "//   " << line << "\n";
    }
    s << "#include \"" << cls_ << ".h\"\n\n#include <chrono>\n#include <cstring>\n#include <string>\n#include <thread>\n\n";
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
        << "// and alternates between its two halves (parity).\n"
        << "struct " << cls_ << "::Dev_ {\n  coconet_rt::DevComm dc;\n"
        << "  coconet_rt::Window stage[" << k << "], slice[" << k << "], oneShot[" << k << "];\n  int parity[" << k << "] = {};\n};\n\n"
        << "// The device path needs every rank of the communicator load/store reachable (one NVLink domain);\n"
        << "// otherwise (several nodes, or NCCL told each rank is its own host) the NCCL calls run.\n"
        << "bool " << cls_ << "::devReady(const char* stage) { return dev_->dc.ready(comm_, stream_, rank_, P_, \"" << p_.name << "\", stage); }\n\n";
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
      << (usesDevice() ? "  dev_ = new Dev_;\n" : "")
      << "}\n\n";
    s << cls_ << "::~" << cls_ << "() {\n"
      << (!usesDevice() ? "" :
          "  if (dev_) {\n    for (auto* ws : {dev_->stage, dev_->slice, dev_->oneShot})\n      for (size_t k = 0; k < std::size(dev_->stage); ++k) ws[k].release(comm_);\n"
          "    dev_->dc.destroy(comm_);\n    delete dev_;\n  }\n")
      << "  for (auto& c : gcomm_)\n    if (c) ncclCommDestroy(c);\n"
      << (chunked_.empty() ? "" :
          "  for (cudaEvent_t e : {ovStart_, ovDone_, ovGemm_[0], ovGemm_[1], ovFree_[0], ovFree_[1]})\n    if (e) cudaEventDestroy(e);\n"
          "  if (comm2_) cudaStreamDestroy(comm2_);\n")
      << (!gatherMayPipe() ? "" : "  if (ovRed_) cudaEventDestroy(ovRed_);\n  if (comm3_) cudaStreamDestroy(comm3_);\n")
      << "  if (blas_) cublasDestroy(blas_);\n  if (errorFlag_) cudaFree(errorFlag_);\n}\n\n";
    // localElements
    s << "long long " << cls_ << "::localElements(const char* tensor, const " << cls_ << "_sizes& sz) const {\n"
      << "  const std::string t = tensor;\n";
    auto elems = [&](const TensorType& t) {
      std::string e = "1LL";
      for (int k = 0; k < t.rank(); ++k) {
        std::string d = cxx(t.shape[k]);
        if (t.group && t.layout.kind == Layout::Sliced && t.layout.dim == k) d = "(" + d + " / " + cxx(t.group->size) + ")";
        e += " * " + d;
      }
      return e;
    };
    for (auto& st : p_.stages)
      if (st.kind == StageKind::Input) s << "  if (t == \"" << st.name << "\") return " << elems(st.type) << ";\n";
    for (size_t i = 0; i < p_.outputs.size(); ++i)
      s << "  if (t == \"" << p_.outputNames[i] << "\") return " << elems(p_.stages[p_.outputs[i]].type) << ";\n";
    for (auto& st : p_.states) s << "  if (t == \"" << st.name << "\") return " << elems(st.type) << ";\n";
    s << "  return -1;\n}\n\n";
    // localShape
    s << "int " << cls_ << "::localShape(const char* tensor, const " << cls_ << "_sizes& sz, long long shape[8]) const {\n"
      << "  const std::string t = tensor;\n";
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
      << "  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);\n"
      << "  for (;;) {\n    cudaError_t e = cudaStreamQuery(stream_);\n    if (e == cudaSuccess) break;\n"
      << "    if (e != cudaErrorNotReady) CHECK(e, \"finish\");\n"
      << "    if (std::chrono::steady_clock::now() > deadline) {\n      ncclCommAbort(comm_);\n"
      << "      throw coconet_rt::Error(\"" << p_.name << ": the run did not finish within \" + std::to_string(timeoutSeconds) +\n"
      << "                              \" s; a collective may be waiting for a rank that is not running\");\n    }\n"
      << "    std::this_thread::sleep_for(std::chrono::microseconds(50));\n  }\n"
      << "  int flag = 0;\n  CHECK(cudaMemcpy(&flag, errorFlag_, sizeof(int), cudaMemcpyDeviceToHost), \"finish\");\n"
      << "  if (flag) {\n    cudaMemset(errorFlag_, 0, sizeof(int));\n"
      << "    throw coconet_rt::Error(\"" << p_.name << ": an embedding index was out of range of its table\");\n  }\n}\n\n";
    s << "void " << cls_ << "::run(const " << cls_ << "_sizes& sz, const " << cls_ << "_scalars& sc, const " << cls_
      << "_tensors& t, unsigned long long seed) {\n" << body_.str() << "}\n\n}  // namespace coconet_gen\n\n"
      << cInterfaceSource();
    return s.str();
  }

  // ---- The C interface (for ctypes and other languages); see tools/bench/gpu/README.md ----
  std::string cfn(const std::string& f) const { return "coconet_" + cls_ + "_" + f; }

  std::string cInterfaceDecls() const {
    std::ostringstream h;
    h << "// C interface: the same program for callers without C++ (Python's ctypes, other languages).\n"
      << "// Each function returns 0 on success and 1 on failure; " << cfn("last_error") << "() says why.\n"
      << "// " << cfn("interface") << "() is JSON naming the order of sizes[], scalars[] and tensors[].\n"
      << "extern \"C\" {\n"
      << "const char* " << cfn("interface") << "(void);\n"
      << "const char* " << cfn("last_error") << "(void);\n"
      << "int " << cfn("unique_id") << "(char id[128]);\n"
      << "int " << cfn("create") << "(const char id[128], int rank, int nranks, void* stream, void** handle);\n"
      << "int " << cfn("run") << "(void* handle, const long long* sizes, const double* scalars, void* const* tensors,\n"
      << "    unsigned long long seed);\n"
      << "int " << cfn("finish") << "(void* handle, double timeout_seconds);\n"
      << "int " << cfn("local_shape") << "(void* handle, const char* tensor, const long long* sizes, long long shape[8], int* rank);\n"
      << "int " << cfn("destroy") << "(void* handle);\n"
      << "}\n";
    return h.str();
  }

  std::string interfaceJson() const {
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

  std::string cInterfaceSource() const {
    std::ostringstream s;
    std::string C = "coconet_gen::" + cls_;
    s << "// ---- C interface ----\nnamespace {\nthread_local std::string lastError_;\n"
      << "struct Handle_ {\n  ncclComm_t comm = nullptr;\n  " << C << "* program = nullptr;\n};\n"
      << "template <class F> int guarded_(F&& f) {\n  try {\n    f();\n    return 0;\n"
      << "  } catch (const std::exception& e) {\n    lastError_ = e.what();\n    return 1;\n  }\n}\n"
      << C << "_sizes sizesFrom_(const long long* v) {\n  " << C << "_sizes sz;\n";
    int k = 0;
    for (auto& prm : p_.params)
      if (prm.isSize) s << "  sz.s_" << prm.name << " = v[" << k++ << "];\n";
    s << "  (void)v;\n  return sz;\n}\n}  // namespace\n\n";
    s << "extern \"C\" {\nconst char* " << cfn("interface") << "(void) {\n  return R\"coconet(" << interfaceJson()
      << ")coconet\";\n}\n\n";
    s << "const char* " << cfn("last_error") << "(void) { return lastError_.c_str(); }\n\n";
    s << "int " << cfn("unique_id") << "(char id[128]) {\n  return guarded_([&] {\n    ncclUniqueId u;\n"
      << "    CHECK(ncclGetUniqueId(&u), \"unique_id\");\n    static_assert(sizeof u == 128, \"ncclUniqueId is 128 bytes\");\n"
      << "    std::memcpy(id, &u, sizeof u);\n  });\n}\n\n";
    s << "int " << cfn("create") << "(const char id[128], int rank, int nranks, void* stream, void** handle) {\n"
      << "  return guarded_([&] {\n    ncclUniqueId u;\n    std::memcpy(&u, id, sizeof u);\n    auto* h = new Handle_;\n"
      << "    try {\n      CHECK(ncclCommInitRank(&h->comm, nranks, u, rank), \"create\");\n"
      << "      h->program = new " << C << "(h->comm, static_cast<cudaStream_t>(stream));\n"
      << "    } catch (...) {\n      if (h->comm) ncclCommDestroy(h->comm);\n      delete h;\n      throw;\n    }\n"
      << "    *handle = h;\n  });\n}\n\n";
    s << "int " << cfn("run") << "(void* handle, const long long* sizes, const double* scalars, void* const* tensors,\n"
      << "    unsigned long long seed) {\n  return guarded_([&] {\n    auto* h = static_cast<Handle_*>(handle);\n"
      << "    " << C << "_scalars sc;\n";
    k = 0;
    for (auto& prm : p_.params)
      if (!prm.isSize) s << "    sc." << ident(prm.name) << " = scalars[" << k++ << "];\n";
    s << "    (void)scalars;\n    " << C << "_tensors t;\n";
    k = 0;
    for (auto& st : p_.stages)
      if (st.kind == StageKind::Input) s << "    t." << ident(st.name) << " = tensors[" << k++ << "];\n";
    for (size_t i = 0; i < p_.outputs.size(); ++i) s << "    t." << ident(p_.outputNames[i]) << " = tensors[" << k++ << "];\n";
    for (auto& st : p_.states) s << "    t." << ident(st.name) << " = tensors[" << k++ << "];\n";
    s << "    (void)tensors;\n    h->program->run(sizesFrom_(sizes), sc, t, seed);\n  });\n}\n\n";
    s << "int " << cfn("finish") << "(void* handle, double timeout_seconds) {\n"
      << "  return guarded_([&] { static_cast<Handle_*>(handle)->program->finish(timeout_seconds); });\n}\n\n";
    s << "int " << cfn("local_shape") << "(void* handle, const char* tensor, const long long* sizes, long long shape[8], int* rank) {\n"
      << "  return guarded_([&] {\n    int r = static_cast<Handle_*>(handle)->program->localShape(tensor, sizesFrom_(sizes), shape);\n"
      << "    if (r < 0) throw coconet_rt::Error(std::string(\"" << p_.name << ": no tensor named '\") + tensor + \"'\");\n"
      << "    *rank = r;\n  });\n}\n\n";
    s << "int " << cfn("destroy") << "(void* handle) {\n  return guarded_([&] {\n    auto* h = static_cast<Handle_*>(handle);\n"
      << "    delete h->program;\n    ncclComm_t c = h->comm;\n    delete h;\n    CHECK(ncclCommDestroy(c), \"destroy\");\n  });\n}\n}  // extern \"C\"\n";
    return s.str();
  }

  void emitBody() {
    auto& b = body_;
    b << "  (void)sc;\n  (void)seed;\n";
    // Sizes must be positive; requirements must hold.
    for (auto& prm : p_.params)
      if (prm.isSize)
        b << "  if (sz.s_" << prm.name << " <= 0) throw coconet_rt::Error(\"" << p_.name << ": size " << prm.name
          << " is \" + std::to_string(sz.s_" << prm.name << ") + \"; sizes must be positive\");\n";
    // Integer scalar parameters must be whole numbers in their type's range (they arrive as doubles).
    for (auto& prm : p_.params) {
      if (prm.isSize || !ast::isInteger(prm.dtype)) continue;
      const char *lo = "-9007199254740992.0", *hi = "9007199254740992.0", *range = "-2^53 to 2^53";
      if (prm.dtype == DType::I8) lo = "-128.0", hi = "127.0", range = "-128 to 127";
      if (prm.dtype == DType::U8) lo = "0.0", hi = "255.0", range = "0 to 255";
      if (prm.dtype == DType::I32) lo = "-2147483648.0", hi = "2147483647.0", range = "-2147483648 to 2147483647";
      b << "  coconet_rt::checkIntegerScalar(sc." << ident(prm.name) << ", " << lo << ", " << hi << ", \"" << p_.name << "\", \""
        << prm.name << "\", \"" << ast::dtypeName(prm.dtype) << "\", \"" << range << "\");\n";
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
      std::string op = ast::binaryOpSpelling(r.op);
      b << "  if (!(" << cxx(r.lhs) << " " << op << " " << cxx(r.rhs) << ")) throw coconet_rt::Error(\"" << p_.name
        << ": requirement " << r.str() << " does not hold (" << jsonEscape(r.reason) << "): \" + std::to_string("
        << cxx(r.lhs) << ") + \" " << op << " \" + std::to_string(" << cxx(r.rhs) << ") + \" is false\");\n";
    }
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
      b << "};\n  const long long " << countVar(static_cast<int>(i)) << " = 1";
      for (int k = 0; k < s.type.rank(); ++k) b << " * " << shapeVar(static_cast<int>(i)) << "[" << k << "]";
      b << ";\n  (void)" << countVar(static_cast<int>(i)) << ";\n  (void)" << shapeVar(static_cast<int>(i)) << ";\n";
    }
    for (auto& o : p_.outputNames)
      b << "  if (!t." << ident(o) << ") throw coconet_rt::Error(\"" << p_.name << ": output '" << o << "' is not given\");\n";
    // Storage of every value.
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& s = p_.stages[i];
      std::string T = storageType(s.type.dtype);
      int id = static_cast<int>(i);
      if (s.kind == StageKind::Input) {
        b << "  if (!t." << ident(s.name) << ") throw coconet_rt::Error(\"" << p_.name << ": tensor '" << s.name
          << "' is not given\");\n  const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.name) << ");\n";
      } else if (s.kind == StageKind::State) {
        b << "  if (!t." << ident(s.state) << ") throw coconet_rt::Error(\"" << p_.name << ": state '" << s.state
          << "' is not given\");\n  [[maybe_unused]] const " << T << "* " << var(id) << " = static_cast<const " << T << "*>(t." << ident(s.state)
          << ");\n";
      } else if (auto bag = bagOf_.find(id); bag != bagOf_.end()) {
        b << "  // " << s.name << ": gathered inside the reduction '" << p_.stages[bag->second].name << "', never stored\n";
      } else if (unstored_.count(id)) {
        b << "  // " << s.name << ": computed and used inside fused group '" << s.fusedInto << "' only\n";
      } else if (auto d = direct_.find(id); d != direct_.end()) {
        b << "  // " << s.name << ": written straight into " << d->second.second << "\n"
          << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(t." << ident(d->second.first) << ");\n";
      } else if (auto chp = chunked_.find(id); chp != chunked_.end() && chp->second.rs >= 0 && !isUsed(p_, id, {chp->second.rs})) {
        b << "  // " << s.name << ": computed chunk by chunk into the overlap's staging buffers, never stored whole\n";
      } else if (auto in = inlinedInto_.find(id); in != inlinedInto_.end()) {
        b << "  // " << s.name << ": computed inside the reduction '" << p_.stages[in->second].name << "' at each element, never stored\n";
      } else if (devFallbackOnly_.count(id)) {
        b << "  " << T << "* " << var(id) << " = nullptr;  // " << s.name << ": stored only where fused group '" << s.fusedInto
          << "' runs as NCCL calls\n";
      } else {
        b << "  " << bufferEnsure(id) << "  " << T << "* " << var(id) << " = static_cast<" << T << "*>(buf" << i << "_.ptr);\n";
      }
    }
    // Stages in order.
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& s = p_.stages[i];
      if (s.kind == StageKind::Input || s.kind == StageKind::State) continue;
      if (auto dg = devGroups_.find(static_cast<int>(i)); dg != devGroups_.end()) {
        emitDeviceGroup(dg->second);
        continue;
      }
      if (auto sc = scalarChains_.find(static_cast<int>(i)); sc != scalarChains_.end()) {
        emitScalarChain(sc->second);
        continue;
      }
      if (auto sc = scalarChainOf_.find(static_cast<int>(i)); sc != scalarChainOf_.end()) {
        b << "\n  " << stageComment(s) << ": in the kernel of " << scalarChains_.at(sc->second).name << " above\n";
        continue;
      }
      if (devMembers_.count(static_cast<int>(i))) {
        b << "\n  " << stageComment(s) << ": in the fused group's kernel above\n";
        continue;
      }
      if (auto in = inlinedInto_.find(static_cast<int>(i)); in != inlinedInto_.end()) {
        b << "\n  " << stageComment(s) << ": computed inside the reduction '" << p_.stages[in->second].name << "'\n";
        continue;
      }
      if (auto ch = chunked_.find(static_cast<int>(i)); ch != chunked_.end()) {
        if (i + 1 < p_.stages.size() && overlapped_.count(static_cast<int>(i + 1))) {
          emitChunked(ch->second);
        } else {
          b << "\n  " << stageComment(s) << ": computed in the overlapped chunks below\n";
          chunkedAt_[firstOverlapped(static_cast<int>(i))] = static_cast<int>(i);
        }
        continue;
      }
      if (auto at = chunkedAt_.find(static_cast<int>(i)); at != chunkedAt_.end()) {
        emitChunked(chunked_.at(at->second));
        continue;
      }
      if (auto da = devAR_.find(static_cast<int>(i)); da != devAR_.end()) {
        emitDeviceAllReduce(da->second);
        continue;
      }
      if (std::any_of(arPair_.begin(), arPair_.end(), [&](const auto& pr) { return pr.second == static_cast<int>(i); })) {
        b << "\n  " << stageComment(s) << ": one allreduce with the all_gather after it\n";
        continue;
      }
      if (auto pr = arPair_.find(static_cast<int>(i)); pr != arPair_.end()) {
        const Stage& r = p_.stages[pr->second];
        const GroupInfo* gr = r.type.group ? r.type.group : p_.world();
        b << "\n  " << stageComment(s) << ": with '" << r.name << "', one allreduce\n  if (" << countVar(static_cast<int>(i)) << " > 0) {\n"
          << "    CHECK(ncclAllReduce(" << var(r.operands[0]) << ", " << var(static_cast<int>(i)) << ", " << countVar(static_cast<int>(i))
          << ", " << ncclType(s.type.dtype) << ", " << ncclOp(r.op) << ", " << commOf(gr) << ", stream_), \"" << s.fusedInto << "\");\n  }\n";
        continue;
      }
      if (auto bag = bagOf_.find(static_cast<int>(i)); bag != bagOf_.end() && !chunked_.count(static_cast<int>(i))) {
        b << "\n  " << stageComment(s) << ": gathered inside the reduction '" << p_.stages[bag->second].name << "'\n";
        continue;
      }
      if (overlapped_.count(static_cast<int>(i))) {
        b << "\n  " << stageComment(s) << ": computed in the overlapped chunks above\n";
        continue;
      }
      if (auto note = overlapNotes_.find(static_cast<int>(i)); note != overlapNotes_.end())
        b << "\n  // overlap of '" << s.name << "' runs unchunked: " << note->second;
      if (auto it = runOf_.find(static_cast<int>(i)); it != runOf_.end() && it->second.front() != static_cast<int>(i)) {
        b << "\n  " << stageComment(s) << ": computed by the kernel of '" << p_.stages[it->second.front()].name << "'\n";
        continue;
      }
      b << "\n  " << stageComment(s) << "\n  if (" << countVar(static_cast<int>(i)) << " > 0) {\n";
      emitStage(static_cast<int>(i));
      b << "  }\n";
    }
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
  }

  static std::string jsonEscape(const std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == '"' || c == '\\') r += '\\';
      r += c;
    }
    return r;
  }

  std::string launch(const std::string& n) const {
    return "static_cast<int>(std::min<long long>((" + n + " + 255) / 256, 65535)), 256, 0, stream_";
  }

  std::string bufferEnsure(int id) const {
    return "buf" + std::to_string(id) + "_.ensure(static_cast<size_t>(" + countVar(id) + ") * sizeof(" +
           storageType(p_.stages[id].type.dtype) + "), \"" + p_.name + "\", \"" + p_.stages[id].name + "\");\n";
  }

  void emitStage(int id) {
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
      case StageKind::Softmax: case StageKind::Layernorm: emitRowwise(id); break;
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
                                                : "static_cast<long long>(sc." + ident(s.root.param) + ")";
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
      case StageKind::AllToAll:
        b << "    const long long chunk = " << countVar(id) << " / " << g(gr, "size") << ";\n"
          << "    CHECK(ncclGroupStart(), " << name << ");\n"
          << "    for (long long j = 0; j < " << g(gr, "size") << "; ++j) {\n"
          << "      CHECK(ncclSend(" << in(0) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), "
          << commOf(gr) << ", stream_), " << name << ");\n"
          << "      CHECK(ncclRecv(" << var(id) << " + j * chunk, chunk, " << ncclType(s.type.dtype) << ", static_cast<int>(j), "
          << commOf(gr) << ", stream_), " << name << ");\n    }\n"
          << "    CHECK(ncclGroupEnd(), " << name << ");\n";
        break;
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

  // Fills an OutputMap for stage `id` and an OperandMap per operand (host code).
  void emitMaps(int id) { emitMaps(id, p_.stages[id].operands); }
  void emitMaps(int id, const std::vector<int>& operands) {
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

  // One expression node as a C++ statement. `v` names the node's variable; `operand` gives the
  // expression of an Operand node, `scalar` the kernel parameter of a Rank/GroupIndex/GroupSize.
  std::string nodeCode(const ENode& n, const std::string& v, const std::vector<std::string>& args,
                       const std::string& operand, const std::string& scalar) {
    std::string CT = computeType(n.dtype);
    auto a = [&](int k) { return "static_cast<" + CT + ">(" + args[k] + ")"; };
    bool fl = std::string(CT) == "float", db = std::string(CT) == "double";
    std::string e;
    switch (n.op) {
      case EOp::Operand: e = operand; break;
      case EOp::Const: e = num(n.value); break;
      case EOp::Param: e = "prm_" + ident(n.name); break;
      case EOp::Rank: case EOp::GroupIndex: case EOp::GroupSize: e = scalar; break;
      case EOp::Neg: e = "-" + a(0); break;
      case EOp::Not: e = "!(" + args[0] + ")"; break;
      case EOp::Add: e = fl ? "__fadd_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dadd_rn(" + a(0) + ", " + a(1) + ")" : a(0) + " + " + a(1); break;
      case EOp::Sub: e = fl ? "__fsub_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dsub_rn(" + a(0) + ", " + a(1) + ")" : a(0) + " - " + a(1); break;
      case EOp::Mul: e = fl ? "__fmul_rn(" + a(0) + ", " + a(1) + ")" : db ? "__dmul_rn(" + a(0) + ", " + a(1) + ")" : a(0) + " * " + a(1); break;
      case EOp::Div:
        e = fl ? "__fdiv_rn(" + a(0) + ", " + a(1) + ")" : db ? "__ddiv_rn(" + a(0) + ", " + a(1) + ")"
               : "(" + a(1) + " == 0 ? 0 : " + a(0) + " / " + a(1) + ")";
        break;
      case EOp::Mod: e = fl ? "fmodf(" + a(0) + ", " + a(1) + ")" : db ? "fmod(" + a(0) + ", " + a(1) + ")"
                            : "(" + a(1) + " == 0 ? 0 : " + a(0) + " % " + a(1) + ")"; break;
      case EOp::Lt: e = "(double)(" + args[0] + ") < (double)(" + args[1] + ")"; break;
      case EOp::Le: e = "(double)(" + args[0] + ") <= (double)(" + args[1] + ")"; break;
      case EOp::Gt: e = "(double)(" + args[0] + ") > (double)(" + args[1] + ")"; break;
      case EOp::Ge: e = "(double)(" + args[0] + ") >= (double)(" + args[1] + ")"; break;
      case EOp::Eq: e = "(double)(" + args[0] + ") == (double)(" + args[1] + ")"; break;
      case EOp::Ne: e = "(double)(" + args[0] + ") != (double)(" + args[1] + ")"; break;
      case EOp::And: e = "(" + args[0] + ") && (" + args[1] + ")"; break;
      case EOp::Or: e = "(" + args[0] + ") || (" + args[1] + ")"; break;
      case EOp::Sqrt: e = (fl ? "sqrtf(" : "sqrt(") + a(0) + ")"; break;
      case EOp::Rsqrt: e = fl ? "__fdiv_rn(1.0f, sqrtf(" + a(0) + "))" : "1.0 / sqrt(" + a(0) + ")"; break;
      case EOp::Exp: e = (fl ? "expf(" : "exp(") + a(0) + ")"; break;
      case EOp::Log: e = (fl ? "logf(" : "log(") + a(0) + ")"; break;
      case EOp::Tanh: e = (fl ? "tanhf(" : "tanh(") + a(0) + ")"; break;
      case EOp::Sigmoid: e = fl ? "__fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-" + a(0) + ")))" : "1.0 / (1.0 + exp(-" + a(0) + "))"; break;
      case EOp::Abs: e = (fl ? "fabsf(" : db ? "fabs(" : "llabs(") + a(0) + ")"; break;
      case EOp::Relu: e = "(" + a(0) + " > 0 ? " + a(0) + " : static_cast<" + CT + ">(0))"; break;
      case EOp::Gelu: e = "coconet_rt::gelu(" + a(0) + ")"; break;
      case EOp::Pow: e = fl ? "powf(" + a(0) + ", " + a(1) + ")" : "pow((double)" + args[0] + ", (double)" + args[1] + ")"; break;
      case EOp::Min: e = "((double)(" + args[0] + ") < (double)(" + args[1] + ") ? " + a(0) + " : " + a(1) + ")"; break;
      case EOp::Max: e = "((double)(" + args[0] + ") > (double)(" + args[1] + ") ? " + a(0) + " : " + a(1) + ")"; break;
      case EOp::Select: e = "((" + args[0] + ") ? " + a(1) + " : " + a(2) + ")"; break;
      case EOp::Cast:
        switch (n.dtype) {
          case DType::F16: e = "coconet_rt::round_f16(static_cast<float>(" + args[0] + "))"; break;
          case DType::BF16: e = "coconet_rt::round_bf16(static_cast<float>(" + args[0] + "))"; break;
          case DType::Bool: e = "((" + args[0] + ") != 0)"; break;
          case DType::I8: e = "coconet_rt::saturate<int8_t>((double)(" + args[0] + "))"; break;
          case DType::U8: e = "coconet_rt::saturate<uint8_t>((double)(" + args[0] + "))"; break;
          case DType::I32: e = "coconet_rt::saturate<int>((double)(" + args[0] + "))"; break;
          case DType::I64: e = "coconet_rt::saturate<long long>((double)(" + args[0] + "))"; break;
          default: e = a(0);
        }
        break;
      case EOp::Dropout: {
        std::string seed = n.args.size() > 2 ? "static_cast<unsigned long long>(static_cast<long long>(" + args[2] + "))" : "seed";
        std::string p = "static_cast<float>(" + args[1] + ")";
        e = "(coconet_rt::dropout_uniform(" + seed + ", " + std::to_string(n.salt) + "ULL, key) < " + p + " ? " +
            std::string(fl ? "0.0f" : "0.0") + " : " +
            (fl ? "__fmul_rn(" + a(0) + ", __fdiv_rn(1.0f, __fsub_rn(1.0f, " + p + ")))"
                : a(0) + " / (1.0 - (double)(" + args[1] + "))") + ")";
        break;
      }
    }
    return "    const " + CT + " " + v + " = " + e + ";\n";
  }

  // Element-wise stages as one kernel: `run` is one compute stage, or consecutive compute
  // stages of a fused group with one shape, layout and group. Inside the kernel a member's
  // value is rounded to its dtype exactly as storing it would round it, so the result is the
  // same bits as running the members one by one; only values used outside the run are written,
  // after every member of the element is computed (so a state may be updated in place).
  //
  // Where every operand is read at a linear index (the output's own, a block of a whole tensor
  // for a slice of dimension 0, the output's index modulo a trailing-dimension operand such as a
  // bias, or one scalar element), the kernel takes V consecutive elements per step with 16-byte
  // loads and stores, and a scalar loop does the tail; otherwise (transposes, broadcasts inside
  // the shape, slices of other dimensions) it maps every element through its coordinates.
  enum class Access { Linear, Modulo, Scalar, Mapped };

  // Where element i reads external operand k on a fast path: at its base (parameter bk) plus
  // i, at `iMod` modulo its length (bk holds the length), or its one element bk.
  static std::string fastIndex(Access a, size_t k, const std::string& i, const std::string& iMod) {
    const std::string kk = std::to_string(k);
    return a == Access::Linear ? "b" + kk + " + " + i : a == Access::Modulo ? iMod + " % b" + kk : "b" + kk;
  }

  Access accessOf(int operand, const Stage& out) const {
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

  // The kernel parameters (and host arguments) for the program parameters and group
  // coordinates that a run's expressions use.
  void runParams(const std::vector<int>& run, std::vector<std::string>& params, std::vector<std::string>& hostArgs) const {
    std::set<std::string> prms;
    for (int id : run) {
      const Stage& s = p_.stages[id];
      for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
        const ENode& n = s.expr.nodes[i];
        if (n.op == EOp::Param && prms.insert(n.name).second) {
          params.push_back("double prm_" + ident(n.name));
          bool isSize = false;
          for (auto& prm : p_.params) isSize = isSize || (prm.name == n.name && prm.isSize);
          hostArgs.push_back(isSize ? "static_cast<double>(sz.s_" + n.name + ")" : "sc." + ident(n.name));
        }
        if (n.op == EOp::Rank || n.op == EOp::GroupIndex || n.op == EOp::GroupSize) {
          params.push_back("long long gv" + std::to_string(id) + "_" + std::to_string(i));
          hostArgs.push_back(g(n.group, n.op == EOp::Rank ? "pos" : n.op == EOp::GroupIndex ? "inst" : "size"));
        }
      }
    }
  }

  // The statements computing every member of a run for one element: operand(k) reads external
  // operand k (an index into extIndex's order), store(id) writes member id; members see each
  // other's values rounded to their dtypes (r<id>), and the stores come after all members.
  std::string runMembers(const std::vector<int>& run, const std::map<int, int>& extIndex, const std::vector<int>& written,
                         const std::string& ind, const std::function<std::string(int)>& operand,
                         const std::function<std::string(int)>& store, bool uniqueNames = false) {
    std::set<int> inRun(run.begin(), run.end());
    std::ostringstream m;
    for (int id : run) {
      const Stage& s = p_.stages[id];
      std::string pre = run.size() > 1 || uniqueNames ? "v" + std::to_string(id) + "_" : "v";
      for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
        const ENode& n = s.expr.nodes[i];
        std::vector<std::string> args;
        for (int a : n.args) args.push_back(pre + std::to_string(a));
        std::string opnd;
        if (n.op == EOp::Operand) {
          int o = s.operands[n.index];
          opnd = inRun.count(o) ? "r" + std::to_string(o) : operand(extIndex.at(o));
        }
        m << ind << nodeCode(n, pre + std::to_string(i), args, opnd, "gv" + std::to_string(id) + "_" + std::to_string(i)).substr(4);
      }
      std::string last = pre + std::to_string(s.expr.nodes.size() - 1);
      std::string T = storageType(s.type.dtype);
      std::string stored = s.type.dtype == DType::Bool ? "static_cast<uint8_t>((" + last + ") ? 1 : 0)"
                                                        : "coconet_rt::Store<" + T + ">::from(static_cast<double>(" + last + "))";
      m << ind << "const " << T << " s" << id << " = " << stored << ";\n"
        << ind << "const auto r" << id << " = coconet_rt::to_f(s" << id << ");\n" << ind << "(void)r" << id << ";\n";
    }
    for (int id : written) m << ind << store(id) << "\n";
    return m.str();
  }

  void emitComputeRun(const std::vector<int>& run, const std::string& stream = "stream_", const std::string& first = "",
                      const std::string& count = "") {
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
    for (int o : ext) {
      acc.push_back(accessOf(o, r0));
      fast = fast && acc.back() != Access::Mapped;
      if (acc.back() != Access::Scalar) minBytes = std::min(minBytes, dtypeBytes(p_.stages[o].type.dtype));
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
    for (int id : run) kernels_ << "// " << p_.stages[id].name << " = " << exprTextFor(p_.stages[id]) << "\n";
    if (run.size() > 1) kernels_ << "// (fused group '" << r0.fusedInto << "': one pass over the elements)\n";
    if (fast) kernels_ << "// Linear accesses: " << V << " elements per step with vector loads and stores where aligned.\n";
    kernels_ << "__global__ void " << kname << "(";
    for (size_t k = 0; k < params.size(); ++k) kernels_ << (k ? ", " : "") << params[k];
    kernels_ << ") {\n  (void)seed;\n";
    // The members of one element: operand(k) reads external operand k, store(id) writes member id.
    auto members = [&](const std::string& ind, const std::function<std::string(int)>& operand,
                       const std::function<std::string(int)>& store) {
      return runMembers(run, extIndex, written, ind, operand, store);
    };
    if (!fast) {
      kernels_ << "  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < om.n; j += (long long)gridDim.x * blockDim.x) {\n"
               << "    const long long i = j + om.first;\n"
               << "    long long c[coconet_rt::kMaxRank];\n    long long rem = i, gidx = om.gbase;\n"
               << "    for (int k = om.rank - 1; k >= 0; --k) { c[k] = rem % om.shape[k]; rem /= om.shape[k]; gidx += c[k] * om.gstride[k]; }\n"
               << "    const unsigned long long key = static_cast<unsigned long long>(gidx) ^ om.keyXor;\n    (void)key;\n";
      for (size_t k = 0; k < ext.size(); ++k)
        kernels_ << "    long long i" << k << " = m" << k << ".base;\n    for (int k = 0; k < om.rank; ++k) i" << k << " += c[k] * m" << k << ".stride[k];\n";
      kernels_ << members("    ", [](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[i" + std::to_string(k) + "])"; },
                          [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
      kernels_ << "  }\n}\n\n";
    } else {
      auto scalarIndex = [&](size_t k, const std::string& i) { return fastIndex(acc[k], k, i, i); };
      kernels_ << "  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;\n"
               << "  long long start = 0;\n  if (vec) {\n    constexpr int V = " << V << ";\n    const long long nv = om.n / V;\n"
               << "    for (long long jv = tid; jv < nv; jv += nth) {\n      const long long i0 = om.first + jv * V;\n";
      for (size_t k = 0; k < ext.size(); ++k) {
        std::string kk = std::to_string(k), T = storageType(p_.stages[ext[k]].type.dtype);
        if (acc[k] == Access::Scalar) {
          kernels_ << "      const " << T << " x" << kk << " = a" << kk << "[b" << kk << "];\n";
        } else {
          kernels_ << "      coconet_rt::Vec<" << T << ", V> x" << kk << ";\n      coconet_rt::load_vec" << (aliased_.count(ext[k]) ? "_rw" : "")
                   << "(x" << kk << ", a" << kk << " + " << scalarIndex(k, "i0") << ");\n";
        }
      }
      for (int id : written)
        kernels_ << "      coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
      kernels_ << "#pragma unroll\n      for (int e = 0; e < V; ++e) {\n        const long long i = i0 + e;\n"
               << "        const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n        (void)key;\n";
      kernels_ << members("        ",
                          [&](int k) {
                            std::string kk = std::to_string(k);
                            return acc[k] == Access::Scalar ? "coconet_rt::to_f(x" + kk + ")" : "coconet_rt::to_f(x" + kk + ".v[e])";
                          },
                          [](int id) { return "o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";"; });
      kernels_ << "      }\n";
      for (int id : written) kernels_ << "      coconet_rt::store_vec(out" << id << " + i0, o" << id << ");\n";
      kernels_ << "    }\n    start = nv * V;\n  }\n"
               << "  for (long long j = start + tid; j < om.n; j += nth) {\n    const long long i = om.first + j;\n"
               << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n    (void)key;\n";
      kernels_ << members("    ", [&](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[" + scalarIndex(k, "i") + "])"; },
                          [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
      kernels_ << "  }\n}\n\n";
    }
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
      body_ << ";\n";
      grid = "coconet_rt::gridFor(vec ? " + n + " / " + std::to_string(V) + " + 1 : " + n + ")";
    }
    body_ << "    " << kname << "<<<" << grid << ", 256, 0, " << stream << ">>>(";
    for (size_t k = 0; k < hostArgs.size(); ++k) body_ << (k ? ", " : "") << hostArgs[k];
    body_ << ");\n    CHECK(cudaGetLastError(), \"" << (run.size() > 1 ? r0.fusedInto : r0.name) << "\");\n";
  }

  bool neededOutside(int id, const std::set<int>& inside) const { return isUsed(p_, id, inside); }

  // Runs of a fused group's element-wise members that compile to one kernel.
  void planRuns() {
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& s = p_.stages[i];
      if (s.kind != StageKind::Compute || s.fusedInto.empty() || runOf_.count(static_cast<int>(i))) continue;
      std::vector<int> run{static_cast<int>(i)};
      for (size_t j = i + 1; j < p_.stages.size(); ++j) {
        const Stage& t = p_.stages[j];
        if (t.kind != StageKind::Compute || t.fusedInto != s.fusedInto || t.type.shape != s.type.shape ||
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
  // ---- Overlap: a matmul chunked along the rows of its product (dimension 0 and the batch
  // dimensions after it), pipelined with the reduce_scatter -> element-wise run -> all_gather
  // that consumes it. Chunk c holds sub-block c of every rank's block of rows, so each chunk
  // scatters and gathers like the whole.
  struct Chunked {
    int producer = -1, rs = -1, ag = -1, ar = -1;  // the reduce_scatter (and all_gather), or the allreduce
    int a2a = -1, dim = 0;                         // or the all_to_all, and the chunked dimension
    int bag = -1;                                  // an embedding's reduction (producer: the embedding)
    std::vector<int> run;  // element-wise members between them
    int chunks = 2;
  };
  std::map<int, Chunked> chunked_;           // by producer
  std::set<int> overlapped_;                 // consumer members emitted with their producer
  std::map<int, std::string> overlapNotes_;  // producer -> why its overlap runs unchunked

  std::map<int, int> chunkedAt_;  // the first stage of an overlap's consumer -> its producer, when stages lie between
  // The first consumer stage of the overlap of producer `prod` (its block is emitted there).
  int firstOverlapped(int prod) const {
    int q = prod + 1;
    while (q < static_cast<int>(p_.stages.size()) && !overlapped_.count(q)) ++q;
    return q;
  }

  void planOverlaps() {
    for (auto& o : p_.overlaps) {
      int prod = p_.find(o.producer);
      std::vector<int> members;
      if (const FusedGroup* f = p_.findFused(o.consumer)) {
        for (auto& m : f->members) members.push_back(p_.find(m));
      } else {
        members.push_back(p_.find(o.consumer));
      }
      std::sort(members.begin(), members.end());
      std::string why;
      Chunked ch;
      ch.producer = prod;
      ch.chunks = o.chunks;
      const Stage& ps = p_.stages[prod];
      if (auto bag = bagOf_.find(prod); bag != bagOf_.end() && ps.kind == StageKind::Embedding) {
        // embedding -> its reduction -> all_to_all of the reduction along dimension 0 per rank
        const Stage& r = p_.stages[bag->second];
        if (o.dim == 0 && r.dim != 0 && members.size() == 2 && members[0] == bag->second && members[1] == bag->second + 1 &&
            p_.stages[members[1]].kind == StageKind::AllToAll && p_.stages[members[1]].operands[0] == bag->second) {
          ch.bag = bag->second;
          ch.a2a = members[1];
          chunked_[prod] = ch;
          for (int m : members) overlapped_.insert(m);
        } else {
          overlapNotes_[prod] = "only an embedding bag followed by an all_to_all, chunked along dimension 0, is chunked yet\n";
        }
        continue;
      }
      const bool matrix = ps.kind == StageKind::Matmul && p_.stages[ps.operands[1]].type.rank() == 2;
      if (ps.kind != StageKind::Matmul && ps.kind != StageKind::Gemv) why = "only matmuls and gemvs are chunked yet";
      else
        // Stages between the product and its consumer run before the chunks (the block is
        // emitted at the consumer's place), so none of them may read the product.
        for (int q = prod + 1; why.empty() && q < members.front(); ++q)
          for (int o : p_.stages[q].operands)
            if (o == prod) why = "'" + p_.stages[q].name + "' reads the " + std::string(stageKindName(ps.kind)) + " before the consumer";
      for (size_t k = 1; why.empty() && k < members.size(); ++k)
        if (members[k] != members[k - 1] + 1) why = "the consumer's stages are not contiguous";
      if (why.empty()) {
        const Stage& first = p_.stages[members.front()];
        if (first.operands.empty() || first.operands[0] != prod) why = "the consumer's first stage does not read the product";
        else if (first.kind == StageKind::AllToAll && ps.kind == StageKind::Matmul && members.size() == 1) {
          if (auto w = chunkedAllToAllWhyNot(ps, o.dim); !w.empty()) why = w;
          else ch.a2a = members.front(), ch.dim = o.dim;
        } else if (o.dim != 0) why = "only dimension 0 is chunked for a reduce_scatter or allreduce consumer";
        else if (first.kind == StageKind::ReduceScatter && matrix) ch.rs = members.front();
        else if (first.kind == StageKind::AllReduce && (matrix || ps.kind == StageKind::Gemv)) ch.ar = members.front();
        else why = "only a reduce_scatter (after a matmul by a matrix), an allreduce or an all_to_all consumer is chunked";
      }
      if (why.empty() && ch.a2a >= 0) {
        chunked_[prod] = ch;
        for (int m : members) overlapped_.insert(m);
        continue;
      }
      for (size_t k = 1; why.empty() && k < members.size(); ++k) {
        const Stage& m = p_.stages[members[k]];
        const Stage& r = p_.stages[ch.rs >= 0 ? ch.rs : ch.ar];
        if (m.kind == StageKind::Compute && m.type.shape == r.type.shape && m.type.layout == r.type.layout &&
            m.type.group == r.type.group && ch.ag < 0) {
          for (int opd : m.operands) if (opd == prod) why = "a compute reads the matmul directly";
          ch.run.push_back(members[k]);
        } else if (ch.rs >= 0 && m.kind == StageKind::AllGather && k + 1 == members.size() && m.dim == 0 &&
                   m.operands[0] == (ch.run.empty() ? ch.rs : ch.run.back())) {
          ch.ag = members[k];
        } else {
          why = "'" + m.name + "' is not part of a reduce_scatter -> element-wise -> all_gather chain (or allreduce -> element-wise)";
        }
      }
      if (!why.empty()) {
        overlapNotes_[prod] = why + "\n";
        continue;
      }
      chunked_[prod] = ch;
      for (int m : members) overlapped_.insert(m);
    }
  }

  // ---- Fused collective groups over NCCL's device API (--device-collectives) ----
  // A fused group reduce_scatter -> element-wise members -> all_gather becomes one kernel
  // (coconet_device.cuh has its phases): (1) each rank pushes slice p of its input into slot
  // `rank` of rank p's staging window; (2) an LSA barrier per block index; (3) each rank sums the
  // slots of its slice (rank order, f32, as the interpreter does), computes the members, writes
  // what leaves the group, and puts the all-gather's slice into its own output and its slice
  // window; (4) a barrier; (5) it pulls every other rank's slice. Block b touches the same
  // elements in every phase on every rank, so barriers per block index order exactly the
  // conflicting accesses, and a rank can start the next call's pushes only after every rank
  // passed this call's second barrier (done reading its slots). Where the ranks are not all
  // load/store reachable (several nodes), the NCCL calls run instead.
  //
  // A group that only starts with the reduce_scatter (its members' results leave the group,
  // e.g. for a norm before the all-gather) runs phases (1)-(3) and a last barrier, after which
  // every rank is done reading its slots. A group that only ends with the all-gather runs (3)
  // without the sum, then (4)-(5); its slice window has two halves used in turn, so a fast
  // rank's next call cannot overwrite a slice that a slow rank still pulls (it would first have
  // to pass a barrier of that next call, which the slow rank reaches only after this kernel).
  struct DevGroup {
    int index = 0, rs = -1, ag = -1;  // the reduce_scatter and the all_gather (-1: none)
    int ref = -1;                     // the stage whose shape the members share (their OutputMap)
    int rounds = 1;  // tune(f, chunks = K): pipelined rounds of the kernel
    int blocks = 0;  // blocks of each launch (0: by size, coconet_rt::devBlocks)
    // The reduce-scatter's slots are already in the staging window when the kernel starts
    // (copied there by copy engines, emitChunked): the kernel pushes nothing.
    bool preloaded = false;
    // A preloaded group's epilogue and all-gather: -1 chosen at run time (gatherPipelined),
    // 0 once after the last chunk, 1 per chunk (tune(f, gather = after | pipelined)).
    int gather = -1;
    std::vector<int> run, ext, written;
    std::map<int, int> extIndex;
    std::vector<Access> acc;
    std::vector<int> folds;  // reductions whose per-block partial sums the kernel writes (planFoldedReductions)
    std::vector<int> calc;   // what the kernel computes per element: the members, then the folds' computed elements
    std::string name;
    bool head() const { return rs >= 0; }
    bool tail() const { return ag >= 0; }
    bool full() const { return head() && tail(); }
    bool pushes() const { return head() && !preloaded; }  // the kernel pushes the slices of its input rsIn
    int first() const { return head() ? rs : run.front(); }
    bool halves() const { return tail() && !head(); }  // its slice window's two halves alternate (parity)
    const char* label() const { return full() ? "" : head() ? " (reduce-scatter head)" : " (all-gather tail)"; }
  };
  int devIndices_ = 0;                 // collectives on the device path (their windows in Dev_: stage, slice, oneShot, parity)
  std::map<int, DevGroup> devGroups_;  // by the first member
  std::set<int> devMembers_;           // members other than the first
  std::set<int> devFallbackOnly_;      // values only the NCCL fallback stores (workspace made there)

  // The chain m = [reduce_scatter, element-wise members..., all_gather] as a device group (with
  // `partial`, also [reduce_scatter, members...] or [members..., all_gather]): false when it
  // does not qualify (not over the world, not a float sum, a member that is not element-wise
  // on the slice, an operand read through a map other than linear, periodic or scalar, or the
  // reduced slice needed elsewhere).
  bool analyzeDevGroup(const std::vector<int>& m, DevGroup& dg, bool partial = false) const {
    if (m.size() < 2) return false;
    auto worldLevel = [&](const TensorType& t) { return !t.group || t.group->depth == 0; };
    auto slice0 = [&](const TensorType& t) { return t.group && t.layout.kind == Layout::Sliced && t.layout.dim == 0 && worldLevel(t); };
    const bool head = p_.stages[m.front()].kind == StageKind::ReduceScatter;
    const bool tail = p_.stages[m.back()].kind == StageKind::AllGather;
    if (!(head && tail) && !(partial && (head || tail))) return false;
    dg.rs = head ? m.front() : -1;
    dg.ag = tail ? m.back() : -1;
    if (head) {
      const Stage& rs = p_.stages[dg.rs];
      if (rs.op != ReduceOp::Sum || !(rs.type.dtype == DType::F16 || rs.type.dtype == DType::BF16 || rs.type.dtype == DType::F32) ||
          !slice0(rs.type))
        return false;
    }
    if (tail) {
      const Stage& ag = p_.stages[dg.ag];
      if (!worldLevel(ag.type) || !slice0(p_.stages[ag.operands[0]].type)) return false;
    }
    dg.ref = head ? dg.rs : p_.stages[dg.ag].operands[0];
    const TensorType& rt = p_.stages[dg.ref].type;
    for (size_t k = head ? 1 : 0; k < m.size() - (tail ? 1 : 0); ++k) {
      const Stage& c = p_.stages[m[k]];
      if (c.kind != StageKind::Compute || c.type.shape != rt.shape || c.type.layout != rt.layout || c.type.group != rt.group) return false;
      dg.run.push_back(m[k]);
    }
    if (dg.run.empty()) return false;
    if (tail && std::find(dg.run.begin(), dg.run.end(), p_.stages[dg.ag].operands[0]) == dg.run.end()) return false;
    std::set<int> members(m.begin(), m.end());
    if (head && isUsed(p_, dg.rs, members)) return false;  // the reduced slice is needed outside: keep NCCL
    std::set<int> inRun(dg.run.begin(), dg.run.end());
    for (int id : dg.run)
      for (int o : p_.stages[id].operands)
        if (!inRun.count(o) && !dg.extIndex.count(o)) {
          dg.extIndex[o] = static_cast<int>(dg.ext.size());
          dg.ext.push_back(o);
        }
    for (int o : dg.ext) {
      dg.acc.push_back(o == dg.rs ? Access::Linear : accessOf(o, p_.stages[dg.ref]));
      if (dg.acc.back() == Access::Mapped) return false;
    }
    std::set<int> inside = inRun;  // the all-gather reads its slice from the window instead
    if (tail) inside.insert(dg.ag);
    for (int id : dg.run)
      if (neededOutside(id, inside)) dg.written.push_back(id);
    dg.calc = dg.run;
    return true;
  }

  // Values of a device group (members m) that stay inside its kernel: only the NCCL fallback
  // stores them, so their workspace is made there (fallbackStorage).
  void markFallbackOnly(const std::vector<int>& m, const DevGroup& dg) {
    for (int id : m)
      if (id != dg.ag && !direct_.count(id) && !unstored_.count(id) && !bagOf_.count(id) &&
          std::find(dg.written.begin(), dg.written.end(), id) == dg.written.end())
        devFallbackOnly_.insert(id);
  }
  std::string fallbackStorage(const std::vector<int>& ids, const std::string& ind) const {
    std::string text;
    for (int id : ids)
      if (devFallbackOnly_.count(id))
        text += ind + bufferEnsure(id) + ind + var(id) + " = static_cast<" + storageType(p_.stages[id].type.dtype) + "*>(buf" +
                std::to_string(id) + "_.ptr);\n";
    return text;
  }

  // The knobs of the fused group a stage belongs to (none when it belongs to none).
  const std::map<std::string, std::string>& groupKnobs(const Stage& s) const {
    static const std::map<std::string, std::string> none;
    for (auto& f : p_.fused)
      if (f.name == s.fusedInto) return f.knobs;
    return none;
  }

  static bool ncclAsked(const std::map<std::string, std::string>& knobs) {
    auto k = knobs.find("algorithm");
    return k != knobs.end() && (k->second == "nccl" || k->second == "ring");
  }
  static int knobInt(const std::map<std::string, std::string>& knobs, const char* name, int otherwise) {
    auto k = knobs.find(name);
    return k == knobs.end() ? otherwise : std::max(1, std::atoi(k->second.c_str()));
  }

  void planDeviceGroups() {
    if (!o_.deviceCollectives) return;
    for (auto& f : p_.fused) {
      if (ncclAsked(f.knobs)) continue;
      std::vector<int> m;
      for (auto& n : f.members) m.push_back(p_.find(n));
      std::sort(m.begin(), m.end());
      if (m.size() < 2 || m.front() < 0) continue;
      bool contiguous = true;
      for (size_t k = 1; k < m.size(); ++k) contiguous = contiguous && m[k] == m[k - 1] + 1;
      bool taken = false;
      for (int id : m) taken = taken || overlapped_.count(id) || chunked_.count(id) || arPair_.count(id);
      DevGroup dg;
      if (!contiguous || taken || !analyzeDevGroup(m, dg, /*partial=*/true)) continue;
      dg.name = f.name;
      dg.rounds = knobInt(f.knobs, "chunks", 0);  // 0: chosen by size at run time (devAutoRounds)
      dg.index = devIndices_++;
      markFallbackOnly(m, dg);
      devGroups_[dg.first()] = dg;
      for (size_t k = 1; k < m.size(); ++k) devMembers_.insert(m[k]);
    }
  }

  // An overlap matmul -> reduce_scatter -> element-wise -> all_gather whose chain qualifies
  // moves each chunk's reduce-scatter with copy engines while the next chunk's GEMM runs
  // (every rank's partial sums of a rank's block land in that rank's staging window), then
  // runs the epilogue and the all-gather once as the device group's kernel, on
  // kDevOverlapBlocks blocks (tune(f, blocks = B) sets fewer). Copy engines leave every SM to
  // the GEMM: on 4x H200 the Megatron layer (f16) took 959 / 1709 us at H = 8192 / 12288
  // (docs/benchmarks/gpu/2026-11-21-4xH200-session7) where a kernel per chunk that pushed its
  // slices itself while the next GEMM ran took 1166 / 1988 us (session4b: kernel and GEMM
  // share the SMs and hardly overlap); the kernel on 64 blocks took 1053 / 1855 us.
  static constexpr int kDevOverlapBlocks = 128;
  // The epilogue and all-gather run per chunk (each chunk's kernel on stream_ after the next
  // chunk's GEMM, copy engines pulling the other ranks' parts while the GEMMs go on) on two
  // ranks where the GEMM's flops per byte that crosses NVLink, 2 M N K / (2 (P - 1) / P M N e) =
  // K P / ((P - 1) e), reach this and the product is 16 MiB or more. On H200 (f16 and bf16,
  // B*S = 8192, docs/benchmarks/gpu/2026-11-21-4xH200-session8) per chunk was 1.07-1.13x faster
  // than once after the last chunk on 2 GPUs (H = 4096..12288: 2048..6144 flops per byte), and
  // 0.78-0.95x on 4 GPUs at every H (683..2048), where the transfers outlast the GEMM.
  static constexpr int kGatherFlopsPerByte = 1700;
  static constexpr int kDevMaxBlocks = 128;  // coconet_device.cuh's kDevMaxBlocks (LSA barriers)
  std::map<int, DevGroup> devChunked_;  // by producer
  // Some overlap may run its epilogue and all-gather per chunk (it needs comm3_ and ovRed_).
  bool gatherMayPipe() const {
    for (auto& [prod, dg] : devChunked_)
      if (dg.gather != 0) return true;
    return false;
  }

  void planDeviceChunked() {
    if (!o_.deviceCollectives) return;
    for (auto& [prod, ch] : chunked_) {
      if (ch.rs < 0 || ch.ag < 0 || ch.ar >= 0 || ch.a2a >= 0 || ch.bag >= 0) continue;
      const Stage& rs = p_.stages[ch.rs];
      const auto& knobs = groupKnobs(rs);
      if (ncclAsked(knobs)) continue;
      std::vector<int> m{ch.rs};
      m.insert(m.end(), ch.run.begin(), ch.run.end());
      m.push_back(ch.ag);
      DevGroup dg;
      if (!analyzeDevGroup(m, dg)) continue;
      dg.name = rs.fusedInto.empty() ? rs.name : rs.fusedInto;
      dg.rounds = 1;  // one round: pipelined rounds were slower after the copies (4x H200)
      dg.blocks = std::min(knobInt(knobs, "blocks", kDevOverlapBlocks), kDevMaxBlocks);
      dg.preloaded = true;
      if (auto k = knobs.find("gather"); k != knobs.end()) dg.gather = k->second == "pipelined" ? 1 : 0;
      dg.index = devIndices_++;
      markFallbackOnly(m, dg);
      devChunked_[prod] = dg;
    }
  }

  // How one launch of a device group's kernel is fed: host expressions for the reduce-scatter's
  // input (P slices of nSlice elements), the slice length, the offset of this launch's elements
  // in the rank's slice (a chunk of an overlap), the distance between ranks' parts of the
  // gathered output, and the byte offset of the half of the slice window in use.
  struct DevLaunch {
    std::string rsIn, nSlice, off = "0", gstride, sliceOff = "0";
    std::string lo = "0", hi = "", pull = "1";  // a preloaded group's launch: its elements [lo, hi), and whether it pulls
  };

  int devVecWidth(const DevGroup& dg) const {
    int minBytes = 16;
    if (dg.head()) {
      const Stage& rs = p_.stages[dg.rs];
      minBytes = std::min({minBytes, dtypeBytes(p_.stages[rs.operands[0]].type.dtype), dtypeBytes(rs.type.dtype)});
    }
    if (dg.tail()) minBytes = std::min(minBytes, dtypeBytes(p_.stages[p_.stages[dg.ag].operands[0]].type.dtype));
    for (size_t k = 0; k < dg.ext.size(); ++k)
      if (dg.acc[k] != Access::Scalar && dg.ext[k] != dg.rs) minBytes = std::min(minBytes, dtypeBytes(p_.stages[dg.ext[k]].type.dtype));
    for (int id : dg.written) minBytes = std::min(minBytes, dtypeBytes(p_.stages[id].type.dtype));
    return std::min(8, 16 / minBytes);
  }

  // The kernel's parameters and, for launch L, the host's arguments; `others` gets the external
  // operands other than the reduced slice (indices into dg.ext).
  void devSignature(const DevGroup& dg, const DevLaunch& L, std::vector<std::string>& params, std::vector<std::string>& hostArgs,
                    std::vector<int>& others) const {
    auto isAliasedOut = [&](int id) {
      for (auto& st : p_.states)
        if (st.exit == id && aliased_.count(st.entry)) return true;
      return false;
    };
    const std::string gi = std::to_string(dg.index);
    params = {"ncclDevComm dc"};
    hostArgs = {"dev_->dc.comm"};
    std::string rounds;  // rounds by size: of the reduce-scatter's input, else of the gathered tensor
    if (dg.head()) {
      int x = p_.stages[dg.rs].operands[0];
      std::string XT = storageType(p_.stages[x].type.dtype);
      params.push_back("ncclWindow_t stageWin");
      hostArgs.push_back("dev_->stage[" + gi + "].win");
      if (dg.pushes()) {
        params.push_back("const " + XT + "* __restrict__ rsIn");
        hostArgs.push_back(L.rsIn);
      }
      rounds = "coconet_rt::devAutoRounds(static_cast<long long>(" + countVar(x) + ") * sizeof(" + XT + "))";
    }
    if (dg.tail()) {
      params.insert(params.end(), {"ncclWindow_t sliceWin", "size_t sliceOff"});
      hostArgs.insert(hostArgs.end(), {"dev_->slice[" + gi + "].win", L.sliceOff});
      if (!dg.head())
        rounds = "coconet_rt::devAutoRounds(static_cast<long long>(" + countVar(dg.ag) + ") * sizeof(" +
                 storageType(p_.stages[dg.ag].type.dtype) + "))";
    }
    const std::string plusOff = L.off == "0" ? "" : " + " + L.off;
    for (int id : dg.written) {
      params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + (isAliasedOut(id) ? "* out" : "* __restrict__ out") +
                       std::to_string(id));
      hostArgs.push_back(var(id) + plusOff);
    }
    for (int f : dg.folds) {
      const std::string op = reduceOpStruct(f);
      params.push_back(op + "::Acc* __restrict__ part" + std::to_string(f));
      hostArgs.push_back("static_cast<" + op + "::Acc*>(red" + std::to_string(f) + "_.ptr)");
    }
    others.clear();
    for (size_t k = 0; k < dg.ext.size(); ++k) {
      if (dg.ext[k] == dg.rs) continue;
      others.push_back(static_cast<int>(k));
      params.push_back("const " + std::string(storageType(p_.stages[dg.ext[k]].type.dtype)) +
                       (aliased_.count(dg.ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
      hostArgs.push_back(var(dg.ext[k]));
      params.push_back("long long b" + std::to_string(k));
      hostArgs.push_back(dg.acc[k] == Access::Modulo ? countVar(dg.ext[k])
                         : dg.acc[k] == Access::Linear ? "m" + std::to_string(k) + ".base" + plusOff
                                                       : "m" + std::to_string(k) + ".base");
    }
    if (dg.tail()) {
      params.push_back(std::string(storageType(p_.stages[dg.ag].type.dtype)) + "* __restrict__ gathered");
      hostArgs.push_back(var(dg.ag));
    }
    params.push_back("OutputMap om");
    hostArgs.push_back("om");
    params.push_back("long long nSlice");
    hostArgs.push_back(L.nSlice);
    params.push_back("long long off");
    hostArgs.push_back(L.off);
    if (dg.tail()) {
      params.push_back("long long gstride");
      hostArgs.push_back(L.gstride);
    }
    runParams(dg.calc, params, hostArgs);
    params.push_back("unsigned long long seed");
    hostArgs.push_back("seed");
    params.push_back("int vec");
    hostArgs.push_back("vec");
    if (dg.preloaded) {
      params.insert(params.end(), {"long long lo", "long long hi", "int pull"});
      hostArgs.insert(hostArgs.end(), {L.lo, L.hi.empty() ? L.nSlice : L.hi, L.pull});
      return;
    }
    params.push_back("int rounds");
    hostArgs.push_back(dg.rounds > 0 ? std::to_string(dg.rounds) : rounds);
  }

  // Emits the kernel of a device group (once); returns its name.
  std::string emitDevKernel(const DevGroup& dg) {
    const bool head = dg.head(), tail = dg.tail();
    const int src = tail ? p_.stages[dg.ag].operands[0] : -1;
    const std::string XT = head ? storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype) : "";
    const std::string RT = head ? storageType(p_.stages[dg.rs].type.dtype) : "";
    const std::string ST = tail ? storageType(p_.stages[src].type.dtype) : "";
    std::string kname = "k_" + std::to_string(dg.first()) + "_" + ident(dg.name) + "_device";
    const int V = devVecWidth(dg);
    std::vector<std::string> params, hostArgs;
    std::vector<int> others;
    devSignature(dg, DevLaunch{"", "", "0", ""}, params, hostArgs, others);
    auto index = [&](size_t k, const std::string& i) { return fastIndex(dg.acc[k], k, i, "(off + " + i + ")"); };
    const int rsk = head ? dg.extIndex.at(dg.rs) : -1;
    std::vector<std::string> foldOps;
    for (int f : dg.folds) foldOps.push_back(emitReduceOp(f));
    const std::set<int> calcSet(dg.calc.begin(), dg.calc.end());
    // Folds element i's value (`operand`: how an operand of the group reads it) into each folded reduction.
    auto fold = [&](const std::string& ind, const std::function<std::string(int)>& operand) {
      std::string t;
      for (size_t q = 0; q < dg.folds.size(); ++q) {
        const int x = p_.stages[dg.folds[q]].operands[0];
        const std::string v = calcSet.count(x) ? "r" + std::to_string(x) : operand(dg.extIndex.at(x));
        t += ind + "acc" + std::to_string(dg.folds[q]) + " = " + foldOps[q] + "::combine(acc" + std::to_string(dg.folds[q]) + ", " +
             foldOps[q] + "::element(static_cast<" + foldOps[q] + "::Acc>(" + v + ")));\n";
      }
      return t;
    };
    // The kernel.
    auto& K = kernels_;
    K << "// fused group '" << dg.name << "': ";
    if (head) K << p_.stages[dg.rs].name << " (reduce_scatter), ";
    for (size_t k = 0; k < dg.run.size(); ++k) K << (k ? ", " : "") << p_.stages[dg.run[k]].name;
    if (tail) K << ", " << p_.stages[dg.ag].name << " (all_gather)";
    K << " as one kernel over NCCL's device API:\n";
    if (dg.full() && !dg.pushes())
      K << "// (the reduce-scatter's slots of elements [lo, hi) of the slice were copied into this rank's staging\n"
        << "// window before the launch) barrier; sum this rank's slots, compute the members, publish the\n"
        << "// all-gather's slice; barrier; pull the other ranks' slices (unless copy engines do: pull = 0).\n";
    else if (dg.full())
      K << "// push slices to their ranks' staging windows; barrier; sum this rank's slots, compute the members,\n"
        << "// publish the all-gather's slice; barrier; pull the other ranks' slices (in `rounds` pipelined\n"
        << "// rounds over chunks of the slice: coconet_device.cuh, chunkLo).\n";
    else if (head)
      K << "// push slices to their ranks' staging windows; barrier; sum this rank's slots and compute the members\n"
        << "// (in `rounds` pipelined rounds over chunks of the slice: coconet_device.cuh, chunkLo); a last barrier\n"
        << "// (every rank has read its slots before any rank's next call pushes).\n";
    else
      K << "// compute the members and publish the all-gather's slice (in the half `sliceOff` of the slice window);\n"
        << "// barrier; pull the other ranks' slices (in `rounds` pipelined rounds over chunks of the slice).\n";
    for (int id : dg.run) K << "// " << p_.stages[id].name << " = " << exprTextFor(p_.stages[id]) << "\n";
    for (int f : dg.folds) {
      K << "// and the partial results (one per block) of " << p_.stages[f].name << " = " << reduceKindName(p_.stages[f].reduce) << "("
        << p_.stages[p_.stages[f].operands[0]].name << ")";
      for (int c : dg.calc)
        if (inlinedInto_.count(c) && inlinedInto_.at(c) == f) K << ",\n//   " << p_.stages[c].name << " = " << exprTextFor(p_.stages[c]);
      K << "\n";
    }
    K << "__global__ void __launch_bounds__(coconet_rt::kDevThreads) " << kname << "(";
    for (size_t k = 0; k < params.size(); ++k) K << (k ? ", " : "") << params[k];
    K << ") {\n  (void)seed;\n"
      << "  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};\n"
      << "  const int P = dc.lsaSize, me = dc.lsaRank;\n  (void)P;\n  (void)me;\n"
      << "  constexpr int V = " << V << ";\n";
    if (head) K << "  const " << XT << "* slots = static_cast<const " << XT << "*>(ncclGetLocalPointer(stageWin, 0));\n";
    if (tail)
      K << "  " << ST << "* mine = static_cast<" << ST << "*>(ncclGetLocalPointer(sliceWin, sliceOff));\n"
        << "  " << ST << "* own = gathered + static_cast<long long>(me) * gstride + off;\n";
    for (size_t q = 0; q < dg.folds.size(); ++q)
      K << "  " << foldOps[q] << "::Acc acc" << dg.folds[q] << " = " << foldOps[q] << "::init();\n";
    K << "  // Elements [lo, hi) of this rank's slice: " << (head ? "sum the slots, " : "") << "compute the members"
      << (tail ? ", publish" : "") << ".\n"
      << "  auto compute = [&](long long lo, long long hi) {\n";
    // One element i (the elements after the last whole unit, or every element when not aligned).
    std::ostringstream E;
    E << "  auto elem = [&](long long i) {\n"
      << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + off + i) ^ om.keyXor;\n    (void)key;\n";
    if (head)
      E << "    const " << RT << " srs = coconet_rt::Store<" << RT
        << ">::from(static_cast<double>(coconet_rt::sumSlot(slots, nSlice, P, i)));\n";
    auto scalarOperand = [&](int k) {
      if (k == rsk) return std::string("coconet_rt::to_f(srs)");
      return "coconet_rt::to_f(a" + std::to_string(k) + "[" + index(k, "i") + "])";
    };
    E << runMembers(dg.calc, dg.extIndex, dg.written, "    ", scalarOperand,
                    [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; })
      << fold("    ", scalarOperand);
    if (tail) E << "    mine[i] = s" << src << ";\n    own[i] = s" << src << ";\n";
    E << "  };\n";
    K << E.str()
      << "  // Units of V elements: vector accesses where aligned, else element by element (the same\n"
      << "  // partition either way), then the elements after the last unit.\n"
      << "  coconet_rt::forUnits<V>(lo, hi, vec, [&](long long i0) {\n";
    if (head) K << "    float sum[V];\n    coconet_rt::sumSlots<" << XT << ", V>(slots, nSlice, P, i0, sum);\n";
    for (int k : others) {
      std::string kk = std::to_string(k), T = storageType(p_.stages[dg.ext[k]].type.dtype);
      if (dg.acc[k] == Access::Scalar) K << "    const " << T << " x" << kk << " = a" << kk << "[b" << kk << "];\n";
      else
        K << "    coconet_rt::Vec<" << T << ", V> x" << kk << ";\n    coconet_rt::load_vec" << (aliased_.count(dg.ext[k]) ? "_rw" : "")
          << "(x" << kk << ", a" << kk << " + " << index(k, "i0") << ");\n";
    }
    for (int id : dg.written) K << "    coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
    const bool srcWritten = tail && std::find(dg.written.begin(), dg.written.end(), src) != dg.written.end();
    if (tail && !srcWritten) K << "    coconet_rt::Vec<" << ST << ", V> o" << src << ";\n";
    K << "#pragma unroll\n    for (int e = 0; e < V; ++e) {\n      const long long i = i0 + e;\n"
      << "      const unsigned long long key = static_cast<unsigned long long>(om.gbase + off + i) ^ om.keyXor;\n      (void)key;\n";
    if (head) K << "      const " << RT << " srs = coconet_rt::Store<" << RT << ">::from(static_cast<double>(sum[e]));\n";
    std::vector<int> writtenVec = dg.written;
    if (tail && !srcWritten) writtenVec.push_back(src);
    auto vecOperand = [&](int k) {
      std::string kk = std::to_string(k);
      if (k == rsk) return std::string("coconet_rt::to_f(srs)");
      return dg.acc[k] == Access::Scalar ? "coconet_rt::to_f(x" + kk + ")" : "coconet_rt::to_f(x" + kk + ".v[e])";
    };
    K << runMembers(dg.calc, dg.extIndex, writtenVec, "      ", vecOperand,
                    [](int id) { return "o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";"; })
      << fold("      ", vecOperand) << "    }\n";
    for (int id : dg.written) K << "    coconet_rt::store_vec(out" << id << " + i0, o" << id << ");\n";
    if (tail) K << "    coconet_rt::store_vec(mine + i0, o" << src << ");\n    coconet_rt::store_vec(own + i0, o" << src << ");\n";
    K << "  }, elem);\n"
      << "  };\n"
      << (dg.preloaded ? "" : "  auto edge = [&](int c) { return coconet_rt::chunkLo(c, rounds, nSlice, V); };\n");
    const std::string push = "coconet_rt::pushSlices<" + XT + ", V>(stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec)";
    const std::string pull = "coconet_rt::pullSlices<" + ST + ", V>(sliceWin, sliceOff, P, me, gathered + off, gstride, " +
                             (head ? "edge(r - 2), edge(r - 1)" : "edge(r - 1), edge(r)") + ", vec)";
    if (dg.preloaded)
      K << "  // every rank's copies of [lo, hi) arrived (they precede its launch)\n"
        << "  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
        << "  compute(lo, hi);\n"
        << "  // every rank published [lo, hi)\n"
        << "  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
        << "  if (pull) coconet_rt::pullSlices<" << ST << ", V>(sliceWin, sliceOff, P, me, gathered + off, gstride, lo, hi, vec);\n";
    else if (dg.full())
      K << "  for (int r = 0; r <= rounds + 1; ++r) {\n"
        << (dg.pushes() ? "    if (r < rounds) " + push + ";\n" : "")
        << "    if (r >= 1 && r <= rounds) compute(edge(r - 1), edge(r));\n"
        << "    if (r >= 2) " << pull << ";\n"
        << (!dg.pushes() ? "    // r = 0: every rank's copies arrived (they precede its launch); then every rank published chunk r-1\n"
                         : "    // every rank pushed chunk r and published chunk r-1 of this block's elements\n")
        << "    if (r <= rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
    else if (head)
      K << "  for (int r = 0; r <= rounds; ++r) {\n"
        << "    if (r < rounds) " << push << ";\n"
        << "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
        << "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots)\n"
        << "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
    else
      K << "  for (int r = 0; r <= rounds; ++r) {\n"
        << "    if (r < rounds) compute(edge(r), edge(r + 1));\n"
        << "    if (r >= 1) " << pull << ";\n"
        << "    // every rank published chunk r of this block's elements\n"
        << "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
    for (size_t q = 0; q < dg.folds.size(); ++q) {
      const std::string f = std::to_string(dg.folds[q]);
      K << "  {\n    // this block's partial result of " << p_.stages[dg.folds[q]].name << "\n"
        << "    __shared__ " << foldOps[q] << "::Acc sh[coconet_rt::kDevThreads];\n"
        << "    acc" << f << " = coconet_rt::blockReduce<" << foldOps[q] << ">(acc" << f << ", sh);\n"
        << "    if (threadIdx.x == 0) part" << f << "[blockIdx.x] = acc" << f << ";\n  }\n";
    }
    K << "}\n\n";
    return kname;
  }

  // What `emit` writes into the host code, each line prefixed with `ind` (code nested deeper
  // than the emitter that wrote it expects).
  void emitIndented(const std::string& ind, const std::function<void()>& emit) {
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

  // The host's maps of a device group's other operands (over the slice's type).
  void emitDevMaps(const DevGroup& dg, const std::string& ind) {
    emitIndented(ind.substr(4), [&] { emitMaps(dg.ref, dg.ext); });
  }

  // The alignment test `vec` of launch L of a device group's kernel.
  void emitDevVec(const DevGroup& dg, const DevLaunch& L, const std::vector<int>& others, const std::string& ind) {
    auto& b = body_;
    const int V = devVecWidth(dg);
    const std::string o = L.off, plus = L.off == "0" ? "" : " + " + L.off;
    b << ind << "const bool vec = " << L.nSlice << " % " << V << " == 0";
    if (L.off != "0") b << " && (" << L.off << ") % " << V << " == 0 && (" << L.gstride << ") % " << V << " == 0";
    for (int id : dg.written) b << " &&\n" << ind << "    coconet_rt::aligned16(" << var(id) << ", " << o << ")";
    b << " &&\n" << ind << "    ";
    // (a preloaded head's slots start at the window's base)
    if (dg.tail()) b << "coconet_rt::aligned16(" << var(dg.ag) << ", 0)" << (dg.pushes() ? " && " : "");
    if (dg.pushes()) b << "coconet_rt::aligned16(" << L.rsIn << ", 0)";
    for (int k : others) {
      if (dg.acc[k] == Access::Linear) b << " &&\n" << ind << "    coconet_rt::aligned16(" << var(dg.ext[k]) << ", m" << k << ".base" << plus << ")";
      if (dg.acc[k] == Access::Modulo)
        b << " &&\n" << ind << "    " << countVar(dg.ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(dg.ext[k]) << ", 0)";
    }
    b << ";\n";
  }

  void emitDeviceGroup(const DevGroup& dg) {
    auto& b = body_;
    const std::string name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"";
    const std::string gi = std::to_string(dg.index);
    const std::string kname = emitDevKernel(dg);
    const std::string n = countVar(dg.ref);
    DevLaunch L{dg.head() ? var(p_.stages[dg.rs].operands[0]) : "", n, "0", n};
    if (dg.halves()) L.sliceOff = "dev_->parity[" + gi + "] * (dev_->slice[" + gi + "].bytes / 2)";
    std::vector<std::string> params, hostArgs;
    std::vector<int> others;
    devSignature(dg, L, params, hostArgs, others);
    // Host code: the device path, or the NCCL calls.
    b << "\n  // fused group '" << dg.name << "'" << dg.label() << ": one kernel over NCCL's device API where every rank is load/store reachable\n";
    const std::string foldBlocks = foldBlocksVar(dg.first());
    if (!dg.folds.empty()) {
      b << "  int " << foldBlocks << " = 0;  // its blocks, where they wrote partial results of";
      for (int f : dg.folds) b << " " << p_.stages[f].name;
      b << "\n";
    }
    b << "  if (" << n << " > 0) {\n"
      << "    if (devReady(" << name << ")) {\n";
    if (dg.head()) {
      int x = p_.stages[dg.rs].operands[0];
      b << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, static_cast<size_t>(" << countVar(x) << ") * sizeof("
        << storageType(p_.stages[x].type.dtype) << "), " << prog << ", " << name << ");\n";
    }
    if (dg.tail()) {
      const int src = p_.stages[dg.ag].operands[0];
      const std::string bytes = "static_cast<size_t>(" + countVar(src) + ") * sizeof(" + storageType(p_.stages[src].type.dtype) + ")";
      // a tail's window has two halves (256-byte aligned), used in turn
      b << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, "
        << (dg.halves() ? "2 * ((" + bytes + " + 255) / 256 * 256)" : bytes) << ", " << prog << ", " << name << ")"
        << (dg.head() ? " || grew" : "") << ")\n"
        << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n";
    } else {
      b << "      if (grew) dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n";
    }
    emitDevMaps(dg, "      ");
    emitDevVec(dg, L, others, "      ");
    const int V = devVecWidth(dg);
    std::string grid = "coconet_rt::devBlocks(" + n + " / " + std::to_string(V) + ")";  // the same on every rank, whatever `vec`
    if (!dg.folds.empty()) {
      b << "      " << foldBlocks << " = " << grid << ";\n";
      for (int f : dg.folds)
        b << "      red" << f << "_.ensure(static_cast<size_t>(" << foldBlocks << ") * sizeof(" << reduceOpStruct(f)
          << "::Acc), " << prog << ", \"" << p_.stages[f].name << "\");\n";
      grid = foldBlocks;
    }
    b << "      " << kname << "<<<" << grid << ", coconet_rt::kDevThreads, 0, stream_>>>(";
    for (size_t k = 0; k < hostArgs.size(); ++k) b << (k ? ", " : "") << hostArgs[k];
    b << ");\n      CHECK(cudaGetLastError(), " << name << ");\n";
    if (dg.halves()) b << "      dev_->parity[" << gi << "] ^= 1;\n";
    b << "    } else {\n      // not every rank is load/store reachable: NCCL calls\n";
    // The fallback: the members as the NCCL path emits them, with workspace for the values the
    // device kernel never stores.
    std::vector<int> all;
    if (dg.head()) all.push_back(dg.rs);
    for (int id : dg.run) all.push_back(id);
    if (dg.tail()) all.push_back(dg.ag);
    b << fallbackStorage(all, "      ");
    for (int id : all) {
      if (auto it = runOf_.find(id); it != runOf_.end() && it->second.front() != id) continue;
      b << "      {\n";
      emitStage(id);
      b << "      }\n";
    }
    b << "    }\n  }\n";
  }

  // ---- Allreduces over NCCL's device API (--device-collectives) ----
  // An allreduce (sum over the world, a float type) that no overlap has chunked, or a fused
  // [reduce_scatter, all_gather] pair with nothing between, runs as coconet_device.cuh's
  // one-shot kernel up to kOneShotMaxBytes per rank (the latency-bound sizes), two-shot up to
  // kTwoShotMaxBytes (push reduce-scatter, pull all-gather; when the rank count divides the
  // length), and as NCCL's allreduce above; tune(algorithm = ...) overrides.
  struct DevAllReduce {
    int index = 0, in = -1, out = -1;
    std::string name;  // the stage (or fused group) that failures name
    std::string algo;  // the `algorithm` knob: "" (by size), one_shot or two_shot
  };
  std::map<int, DevAllReduce> devAR_;  // by the stage that writes the result

  bool usesDevice() const { return devIndices_ > 0; }

  // The `algorithm` knob of a stage or of the fused group it belongs to ("" when none).
  std::string algorithmOf(const Stage& s) const {
    if (auto k = s.knobs.find("algorithm"); k != s.knobs.end()) return k->second;
    auto& knobs = groupKnobs(s);
    auto k = knobs.find("algorithm");
    return k == knobs.end() ? "" : k->second;
  }

  void planDeviceAllReduces() {
    if (!o_.deviceCollectives) return;
    auto fits = [&](const Stage& s) {
      return (!s.type.group || s.type.group->depth == 0) && s.op == ReduceOp::Sum &&
             (s.type.dtype == DType::F16 || s.type.dtype == DType::BF16 || s.type.dtype == DType::F32);
    };
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& s = p_.stages[i];
      int id = static_cast<int>(i);
      if (overlapped_.count(id) || chunked_.count(id)) continue;
      DevAllReduce d;
      if (s.kind == StageKind::AllReduce && fits(s)) {
        d.in = s.operands[0];
        d.name = s.name;
      } else if (auto pr = arPair_.find(id); pr != arPair_.end() && fits(p_.stages[pr->second]) &&
                                              !overlapped_.count(pr->second) && !chunked_.count(pr->second)) {
        d.in = p_.stages[pr->second].operands[0];
        d.name = s.fusedInto.empty() ? s.name : s.fusedInto;
      } else {
        continue;
      }
      d.algo = algorithmOf(s);
      if (d.algo == "nccl" || d.algo == "ring") continue;  // NCCL's algorithms asked for
      d.out = id;
      d.index = devIndices_++;
      devAR_[id] = d;
    }
  }

  // One-shot where the knob asks for it, or (no knob, or two-shot not possible) up to
  // kOneShotMaxBytes; two-shot where the rank count divides the length, up to kTwoShotMaxBytes
  // unless the knob asks for it; NCCL otherwise.
  void emitDeviceAllReduce(const DevAllReduce& d) {
    auto& b = body_;
    const Stage& s = p_.stages[d.out];
    std::string T = storageType(s.type.dtype), gi = std::to_string(d.index), n = countVar(d.out);
    std::string name = "\"" + d.name + "\"", prog = "\"" + p_.name + "\"";
    const int V = 16 / dtypeBytes(s.type.dtype);
    std::string in = var(d.in), out = var(d.out);
    std::string oneShot = d.algo == "one_shot"   ? "true"
                          : d.algo == "two_shot" ? "(" + n + " % P_ != 0 && bytes <= coconet_rt::kOneShotMaxBytes)"
                                                 : "bytes <= coconet_rt::kOneShotMaxBytes";
    b << "\n  " << stageComment(s) << ": allreduce over NCCL's device API where every rank is load/store reachable"
      << (d.algo.empty() ? "" : " (algorithm = " + d.algo + ")") << "\n"
      << "  if (" << n << " > 0) {\n"
      << "    const size_t bytes = static_cast<size_t>(" << n << ") * sizeof(" << T << ");\n"
      << "    if (devReady(" << name << ") && " << oneShot << ") {\n"
      << "      coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "      if (w.ensure(comm_, stream_, 2 * static_cast<size_t>(P_) * std::max(bytes, coconet_rt::kOneShotMaxBytes), " << prog << ", "
      << name << "))\n        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = " << n << " % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
      << ", 0);\n"
      << "      coconet_rt::dev_allreduce_one_shot<" << T << ", " << V << "><<<coconet_rt::devBlocks(" << n << " / " << V
      << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in << ", " << out
      << ", " << n << ", vec);\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "      dev_->parity[" << gi << "] ^= 1;\n"
      << "    } else if (dev_->dc.usable && " << n << " % P_ == 0" << (d.algo == "two_shot" ? "" : " && bytes <= coconet_rt::kTwoShotMaxBytes")
      << ") {\n"
      << "      const long long m = " << n << " / P_;\n"
      << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, bytes, " << prog << ", " << name << ");\n"
      << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, bytes / P_, " << prog << ", " << name << ") || grew)\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = m % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out << ", 0);\n"
      << "      coconet_rt::dev_allreduce_two_shot<" << T << ", " << V << "><<<coconet_rt::devBlocks(m / " << V
      << "), coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, dev_->stage[" << gi << "].win, dev_->slice[" << gi << "].win, " << in
      << ", " << out << ", m, vec);\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "    } else {\n      CHECK(ncclAllReduce(" << in << ", " << out << ", " << n << ", " << ncclType(s.type.dtype)
      << ", ncclSum, comm_, stream_), " << name << ");\n    }\n  }\n";
  }

  // Stream order of an overlap: comm2_ starts after what stream_ did before; chunk k's producer
  // work on stream_ hands over to comm2_; stream_ goes on after all of comm2_'s work.
  static std::string forkComm(const std::string& name) {
    return "    CHECK(cudaEventRecord(ovStart_, stream_), " + name + ");\n    CHECK(cudaStreamWaitEvent(comm2_, ovStart_, 0), " + name + ");\n";
  }
  static std::string handOff(const std::string& name) {
    return "      CHECK(cudaEventRecord(ovGemm_[k], stream_), " + name + ");\n      CHECK(cudaStreamWaitEvent(comm2_, ovGemm_[k], 0), " +
           name + ");\n";
  }
  static std::string joinComm(const std::string& name) {
    return "    CHECK(cudaEventRecord(ovDone_, comm2_), " + name + ");\n    CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " + name + ");\n";
  }

  // ---- A fused reduce_scatter + all_gather with nothing between them is an allreduce: one
  // NCCL call (its algorithm NCCL's) instead of two.
  std::map<int, int> arPair_;  // all_gather -> its reduce_scatter

  void planAllReducePairs() {
    for (auto& f : p_.fused) {
      if (f.members.size() != 2) continue;
      int rs = p_.find(f.members[0]), ag = p_.find(f.members[1]);
      if (rs < 0 || ag < 0) continue;
      if (rs > ag) std::swap(rs, ag);
      const Stage& r = p_.stages[rs];
      const Stage& a = p_.stages[ag];
      if (r.kind != StageKind::ReduceScatter || a.kind != StageKind::AllGather || a.operands[0] != rs) continue;
      if (r.type.group != a.type.group || r.type.layout.dim != 0 || isUsed(p_, rs, {ag})) continue;
      arPair_[ag] = rs;
      unstored_.insert(rs);
    }
  }

  // ---- Embedding bags: a reduction over the lookups of an embedding (DLRM's pooling) gathers
  // the rows inside the reduction, so the [..., L, D] tensor of looked-up rows never exists.
  std::map<int, int> bagOf_;      // embedding -> the reduction that gathers it
  std::map<int, int> bagReduce_;  // reduction -> its embedding

  void planBags() {
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& r = p_.stages[i];
      if (r.kind != StageKind::Reduce || r.dim < 0) continue;
      int e = r.operands[0];
      const Stage& es = p_.stages[e];
      if (es.kind != StageKind::Embedding || r.dim >= es.type.rank() - 1) continue;  // an index dimension, not D
      if (isUsed(p_, e, {static_cast<int>(i)})) continue;                            // rows used elsewhere too
      bagOf_[e] = static_cast<int>(i);
      bagReduce_[static_cast<int>(i)] = e;
    }
  }

  // The gather-reduce kernel of reduction `id` (its Op struct already written) and its launch
  // over all outputs. Output o = (outer index, index position, column) reduces the lookups of
  // dimension `dim` of the indices.
  void emitBagKernel(int id, const std::string& op) {
    const Stage& s = p_.stages[id];
    const Stage& e = p_.stages[bagReduce_.at(id)];
    const Stage& tab = p_.stages[e.operands[0]];
    const Stage& idx = p_.stages[e.operands[1]];
    std::string TT = storageType(tab.type.dtype), IT = storageType(idx.type.dtype), YT = storageType(s.type.dtype);
    kernels_ << "// " << s.name << " = " << reduceKindName(s.reduce) << "(embedding(" << tab.name << ", " << idx.name << "), dim = " << s.dim
             << "): the rows are gathered inside the reduction (rows outside this rank's shard are zero)\n"
             << "__global__ void k_" << id << "_" << ident(s.name) << "_bag(const " << TT << "* __restrict__ table, const " << IT
             << "* __restrict__ idx, " << YT << "* __restrict__ out, long long len, long long innerIdx, long long D, long long rows, "
             << "long long firstRow, long long globalRows, int* error, double count, long long first, long long segLen, long long segStride, "
             << "long long total) {\n"
             << "  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x) {\n"
             << "    const long long o = first + (t / segLen) * segStride + t % segLen;  // the output element\n"
             << "    const long long oo = o / (innerIdx * D), ii = (o / D) % innerIdx, col = o % D;\n"
             << "    " << op << "::Acc acc = " << op << "::init();\n"
             << "    for (long long l = 0; l < len; ++l) {\n"
             << "      const long long v = static_cast<long long>(idx[(oo * len + l) * innerIdx + ii]);\n"
             << "      if (v < 0 || v >= globalRows) atomicExch(error, 1);\n"
             << "      const long long r = v - firstRow;\n"
             << "      const " << TT << " x = (v >= 0 && v < globalRows && r >= 0 && r < rows) ? table[r * D + col] : coconet_rt::Store<" << TT
             << ">::from(0.0);\n"
             << "      acc = " << op << "::combine(acc, " << op << "::element(static_cast<" << op << "::Acc>(coconet_rt::to_f(x))));\n    }\n"
             << "    out[o] = coconet_rt::Store<" << YT << ">::from(" << op << "::finish(acc, count));\n  }\n}\n\n";
  }

  // Host code shared by the whole and the chunked launch: the sizes of the bag.
  void emitBagSizes(int id) {
    const Stage& s = p_.stages[id];
    const Stage& e = p_.stages[bagReduce_.at(id)];
    const Stage& tab = p_.stages[e.operands[0]];
    int ix = e.operands[1];
    int ri = p_.stages[ix].type.rank();
    bool rowSliced = tab.type.group && tab.type.layout.kind == Layout::Sliced && tab.type.layout.dim == 0;
    body_ << "    const long long rows = " << shapeVar(e.operands[0]) << "[0], D = " << shapeVar(e.operands[0]) << "[1];\n"
          << "    const long long firstRow = " << (rowSliced ? g(tab.type.group, "pos") + " * rows" : "0") << ";\n"
          << "    const long long len = " << shapeVar(ix) << "[" << s.dim << "];\n    long long innerIdx = 1;\n";
    for (int k = s.dim + 1; k < ri; ++k) body_ << "    innerIdx *= " << shapeVar(ix) << "[" << k << "];\n";
    std::string count = "1.0 * static_cast<double>(" + cxx(e.type.shape[s.dim]) + ")";
    body_ << "    const double count = " << count << ";\n";
  }

  std::string bagArgs(int id, const std::string& rest) const {
    const Stage& e = p_.stages[bagReduce_.at(id)];
    const Stage& tab = p_.stages[e.operands[0]];
    return "(" + var(e.operands[0]) + ", " + var(e.operands[1]) + ", " + var(id) + ", len, innerIdx, D, rows, firstRow, " +
           cxx(tab.type.shape[0]) + ", errorFlag_, count, " + rest + ")";
  }

  void emitBag(int id, const std::string& op) {
    emitBagKernel(id, op);
    emitBagSizes(id);
    body_ << "    k_" << id << "_" << ident(p_.stages[id].name) << "_bag<<<coconet_rt::gridFor(" << countVar(id) << "), 256, 0, stream_>>>"
          << bagArgs(id, "0, " + countVar(id) + ", 0, " + countVar(id)) << ";\n    CHECK(cudaGetLastError(), \"" << p_.stages[id].name
          << "\");\n";
  }

  // An embedding bag pipelined with the all_to_all of its result: chunk c is sub-block c of the
  // block of dimension 0 that goes to each rank; its pieces are sent while chunk c+1 is gathered.
  void emitChunkedBag(const Chunked& ch) {
    auto& b = body_;
    const Stage& rs = p_.stages[ch.bag];
    const Stage& x = p_.stages[ch.a2a];
    const GroupInfo* gr = x.type.group ? x.type.group : p_.world();
    const std::string op = reduceOpStruct(ch.bag);
    std::string name = "\"" + rs.name + "\"";
    emitReduceOp(ch.bag);
    emitBagKernel(ch.bag, op);
    b << "\n  // overlap: " << p_.stages[ch.producer].name << " (embedding, gathered inside " << rs.name << ") in " << ch.chunks
      << " chunks of dimension 0 per rank, pipelined with " << x.name << " (all_to_all):\n"
      << "  // chunk c+1 is gathered (stream_) while chunk c's pieces are exchanged (comm2_)\n"
      << "  if (" << countVar(ch.bag) << " > 0) {\n";
    emitBagSizes(ch.bag);
    b << "    const long long C = " << ch.chunks << ", G = " << g(gr, "size") << ", B0 = " << shapeVar(ch.bag) << "[0];\n"
      << "    const long long per = " << countVar(ch.bag) << " / B0, Bc = B0 / (G * C);  // elements per row of dimension 0; rows per piece\n"
      << forkComm(name)
      << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
      << "      k_" << ch.bag << "_" << ident(rs.name) << "_bag<<<coconet_rt::gridFor(G * Bc * per), 256, 0, stream_>>>"
      << bagArgs(ch.bag, "c * Bc * per, Bc * per, (B0 / G) * per, G * Bc * per") << ";\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << handOff(name)
      << "      CHECK(ncclGroupStart(), \"" << x.name << "\");\n"
      << "      for (long long j = 0; j < G; ++j) {\n"
      << "        const long long at = (j * (B0 / G) + c * Bc) * per;\n"
      << "        CHECK(ncclSend(" << var(ch.bag) << " + at, Bc * per, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
      << ", comm2_), \"" << x.name << "\");\n"
      << "        CHECK(ncclRecv(" << var(ch.a2a) << " + at, Bc * per, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
      << ", comm2_), \"" << x.name << "\");\n      }\n"
      << "      CHECK(ncclGroupEnd(), \"" << x.name << "\");\n"
      << "    }\n" << joinComm(name) << "  }\n";
  }

  // Can a matmul be chunked along dimension d for an all_to_all of its product? The rows of the
  // product (every dimension but the last) split at d into outer indices (dimensions before d)
  // and rows per outer index; chunk c takes rows [c R/C, (c+1) R/C) of every outer index. A
  // batched weight must be indexed by the outer index alone (its batch dimensions are the ones
  // just before d, which must then be the last row dimension).
  std::string chunkedAllToAllWhyNot(const Stage& ps, int d) const {
    const TensorType& at = p_.stages[ps.operands[0]].type;
    const TensorType& wt = p_.stages[ps.operands[1]].type;
    int ra = at.rank(), wb = wt.rank() - 2;
    if (ra < 2 || d < 1 || d > ra - 2) return "an all_to_all exchanges dimension 0; chunk a row dimension after it";
    if (ps.type.rank() != ra) return "the product's rank differs from the left operand's";
    if (wb > 0) {
      if (d != ra - 2) return "a batched weight needs the chunked dimension to be the rows of each GEMM";
      for (int k = 0; k < wb; ++k)
        if (ra - 2 - wb + k < 0 || wt.shape[k] != at.shape[ra - 2 - wb + k]) return "the weight's batch dimensions broadcast";
    }
    return "";
  }

  // A matmul pipelined with the all_to_all of its product along dimension d: GEMMs of chunk c+1
  // (stream_) while chunk c is packed, exchanged and placed (comm2_).
  void emitChunkedAllToAll(const Chunked& ch) {
    auto& b = body_;
    const Stage& ps = p_.stages[ch.producer];
    const Stage& x = p_.stages[ch.a2a];
    int a = ps.operands[0], w = ps.operands[1];
    const TensorType& at = p_.stages[a].type;
    int ra = at.rank(), wb = p_.stages[w].type.rank() - 2;
    std::string T = storageType(ps.type.dtype), ty = cudaDataType(ps.type.dtype), XT = storageType(x.type.dtype);
    std::string name = "\"" + ps.name + "\"";
    bool f64 = ps.type.dtype == DType::F64;
    const GroupInfo* gr = x.type.group ? x.type.group : p_.world();
    std::string A = shapeVar(a);
    b << "\n  // overlap: " << ps.name << " (matmul) in " << ch.chunks << " chunks of dimension " << ch.dim << ", pipelined with "
      << x.name << " (all_to_all):\n  // the GEMMs of chunk c+1 (stream_) run while chunk c is packed, exchanged and placed (comm2_)\n"
      << "  if (" << countVar(ch.producer) << " > 0) {\n"
      << "    const long long C = " << ch.chunks << ", G = " << g(gr, "size") << ";\n"
      << "    const long long K = " << A << "[" << ra - 1 << "], N = " << shapeVar(w) << "[" << wb + 1 << "];\n"
      << "    long long O = 1, R = 1;  // outer indices (dimensions before " << ch.dim << ") and GEMM rows per outer index\n"
      << "    for (int k = 0; k < " << ch.dim << "; ++k) O *= " << A << "[k];\n"
      << "    for (int k = " << ch.dim << "; k < " << ra - 1 << "; ++k) R *= " << A << "[k];\n"
      << "    const long long Rc = R / C;  // rows per outer index and chunk\n"
      << "    const long long Wn = " << countVar(w) << " / (K * N);  // weights (batched by the outer index)\n"
      << "    const long long calls = Wn == 1 ? 1 : O / Wn, batch = Wn == 1 ? O : Wn;  // GEMM calls and batch per call\n"
      << "    const size_t bytes = static_cast<size_t>(O * Rc * N) * sizeof(" << T << ");\n"
      << "    for (int k = 0; k < 2; ++k) {\n      stage_[k].ensure(bytes, \"" << p_.name << "\", " << name << ");\n"
      << "      gath_[k].ensure(bytes, \"" << p_.name << "\", " << name << ");\n    }\n"
      << forkComm(name)
      << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
      << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
      << "      // rows [c Rc, (c+1) Rc) of every outer index, written in place in the product\n"
      << "      for (long long q = 0; q < calls; ++q)\n"
      << "        CHECK(cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(Rc), static_cast<int>(K), &alpha, "
      << var(w) << ", " << ty << ", static_cast<int>(N), Wn == 1 ? 0 : K * N, " << var(a) << " + (q * batch * R + c * Rc) * K, " << ty
      << ", static_cast<int>(K), R * K, &beta, " << var(ch.producer) << " + (q * batch * R + c * Rc) * N, " << ty
      << ", static_cast<int>(N), R * N, static_cast<int>(batch), " << (f64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F")
      << ", CUBLAS_GEMM_DEFAULT), " << name << ");\n"
      << handOff(name)
      << "      // pack the chunk ([O, Rc * N], block j of dimension 0 = rows [j O/G, (j+1) O/G)), exchange, place\n"
      << "      " << T << "* snd = static_cast<" << T << "*>(stage_[k].ptr);\n"
      << "      " << XT << "* rcv = static_cast<" << XT << "*>(gath_[k].ptr);\n"
      << "      const size_t row = static_cast<size_t>(Rc * N) * sizeof(" << T << "), pitch = static_cast<size_t>(R * N) * sizeof(" << T << ");\n"
      << "      CHECK(cudaMemcpy2DAsync(snd, row, " << var(ch.producer) << " + c * Rc * N, pitch, row, static_cast<size_t>(O), "
      << "cudaMemcpyDeviceToDevice, comm2_), \"" << x.name << "\");\n"
      << "      const long long block = O * Rc * N / G;\n"
      << "      CHECK(ncclGroupStart(), \"" << x.name << "\");\n"
      << "      for (long long j = 0; j < G; ++j) {\n"
      << "        CHECK(ncclSend(snd + j * block, block, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
      << ", comm2_), \"" << x.name << "\");\n"
      << "        CHECK(ncclRecv(rcv + j * block, block, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
      << ", comm2_), \"" << x.name << "\");\n      }\n"
      << "      CHECK(ncclGroupEnd(), \"" << x.name << "\");\n"
      << "      CHECK(cudaMemcpy2DAsync(" << var(ch.a2a) << " + c * Rc * N, pitch, rcv, row, row, static_cast<size_t>(O), "
      << "cudaMemcpyDeviceToDevice, comm2_), \"" << x.name << "\");\n"
      << "    }\n" << joinComm(name) << "  }\n";
  }

  // A matmul pipelined with the allreduce of its product (and element-wise members after it):
  // chunk c is rows [c M / C, (c+1) M / C) of the product, reduced in place of the whole.
  void emitChunkedAllReduce(const Chunked& ch) {
    auto& b = body_;
    const Stage& ps = p_.stages[ch.producer];
    const Stage& ar = p_.stages[ch.ar];
    int a = ps.operands[0], w = ps.operands[1];
    std::string ty = cudaDataType(ps.type.dtype);
    std::string name = "\"" + ps.name + "\"";
    bool f64 = ps.type.dtype == DType::F64;
    bool gemv = ps.kind == StageKind::Gemv;
    b << "\n  // overlap: " << ps.name << " (" << stageKindName(ps.kind) << ") in " << ch.chunks << " chunks of rows, pipelined with " << ar.name;
    for (int r : ch.run) b << ", " << p_.stages[r].name;
    b << ":\n  // the GEMM of chunk c+1 (stream_) runs while chunk c is reduced and finished (comm2_)\n"
      << "  if (" << countVar(ch.producer) << " > 0) {\n"
      << "    const long long C = " << ch.chunks << ";\n"
      << "    const long long K = " << shapeVar(a) << "[" << p_.stages[a].type.rank() - 1 << "], N = "
      << (gemv ? std::string("1") : shapeVar(w) + "[1]") << ", M = " << countVar(ch.producer) << " / N;  // the product's rows and columns\n"
      << "    const long long rg = M / C;  // rows per chunk\n"
      << forkComm(name)
      << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
      << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
      << "      CHECK(cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(rg), static_cast<int>(K), &alpha, "
      << var(w) << ", " << ty << ", static_cast<int>(N), " << var(a) << " + c * rg * K, " << ty << ", static_cast<int>(K), &beta, "
      << var(ch.producer) << " + c * rg * N, " << ty << ", static_cast<int>(N), " << (f64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F")
      << ", CUBLAS_GEMM_DEFAULT), " << name << ");\n"
      << handOff(name)
      << "      CHECK(ncclAllReduce(" << var(ch.producer) << " + c * rg * N, " << var(ch.ar) << " + c * rg * N, rg * N, "
      << ncclType(ar.type.dtype) << ", " << ncclOp(ar.op) << ", " << commOf(ar.type.group ? ar.type.group : p_.world())
      << ", comm2_), \"" << ar.name << "\");\n";
    if (!ch.run.empty()) {
      b << "      {\n";
      emitComputeRun(ch.run, "comm2_", "c * rg * N", "rg * N");
      b << "      }\n";
    }
    b << "    }\n" << joinComm(name) << "  }\n";
  }

  void emitChunked(const Chunked& ch) {
    if (ch.ar >= 0) return emitChunkedAllReduce(ch);
    if (ch.bag >= 0) return emitChunkedBag(ch);
    if (ch.a2a >= 0) return emitChunkedAllToAll(ch);
    auto& b = body_;
    const Stage& ps = p_.stages[ch.producer];
    const Stage& rs = p_.stages[ch.rs];
    int a = ps.operands[0], w = ps.operands[1];
    std::string T = storageType(ps.type.dtype), ty = cudaDataType(ps.type.dtype);
    std::string name = "\"" + ps.name + "\"";
    bool f64 = ps.type.dtype == DType::F64;
    b << "\n  // overlap: " << ps.name << " (matmul) in " << ch.chunks << " chunks of dimension 0, pipelined with " << rs.name;
    for (int r : ch.run) b << ", " << p_.stages[r].name;
    if (ch.ag >= 0) b << ", " << p_.stages[ch.ag].name;
    const bool device = devChunked_.count(ch.producer) > 0;
    b << ":\n  // the GEMM of chunk c+1 (stream_) runs while chunk c is reduced, finished and gathered (comm2_)"
      << (device ? ";\n  // where every rank is load/store reachable, copy engines move chunk c's reduce-scatter while\n"
                   "  // the GEMM of chunk c+1 runs, and the fused group's device-API kernel then finishes and gathers"
                 : "") << "\n"
      << "  if (" << countVar(ch.producer) << " > 0) {\n"
      << "    const long long C = " << ch.chunks << ", P = " << g(rs.type.group, "size") << ";\n"
      << "    const long long K = " << shapeVar(a) << "[" << p_.stages[a].type.rank() - 1 << "], N = " << shapeVar(w)
      << "[1], M = " << countVar(ch.producer) << " / N;  // the product's rows and columns\n"
      << "    const long long rg = M / (P * C);  // rows per rank and chunk (each rank's block is M / P rows)\n"
      << "    const size_t slot = static_cast<size_t>(P * rg * N) * sizeof(" << T << ");\n"
      << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n";
    // Chunk c's GEMM on stream_ into stage_[k]: rows [c rg, (c+1) rg) of every rank's block, P GEMMs in one call.
    const std::string gemm =
        "      " + T + "* st = static_cast<" + T + "*>(stage_[k].ptr);\n"
        "      if (c >= 2) CHECK(cudaStreamWaitEvent(stream_, ovFree_[k], 0), " + name + ");\n"
        "      // rows [c rg, (c+1) rg) of every rank's block: P GEMMs in one call\n"
        "      CHECK(cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(rg), "
        "static_cast<int>(K), &alpha, " + var(w) + ", " + ty + ", static_cast<int>(N), 0, " + var(a) + " + c * rg * K, " + ty +
        ", static_cast<int>(K), (M / P) * K, &beta, st, " + ty + ", static_cast<int>(N), rg * N, static_cast<int>(P), " +
        (f64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F") + ", CUBLAS_GEMM_DEFAULT), " + name + ");\n" + handOff(name);
    if (device) {
      const DevGroup& dg = devChunked_.at(ch.producer);
      const std::string kname = emitDevKernel(dg);
      const std::string gi = std::to_string(dg.index), prog = "\"" + p_.name + "\"", gname = "\"" + dg.name + "\"";
      const Stage& ag = p_.stages[ch.ag];
      const std::string ST = storageType(p_.stages[ag.operands[0]].type.dtype), pos = g(rs.type.group, "pos");
      // Once over this rank's whole block after the last chunk's copies (and its pulls), or per chunk
      // (elements [cc rg N, (cc+1) rg N) of the block; copy engines pull the other ranks' parts).
      DevLaunch whole{"", "(M / P) * N", "0", "(M / P) * N"}, part = whole;
      part.lo = "cc * rg * N";
      part.hi = "(cc + 1) * rg * N";
      part.pull = "0";
      std::vector<std::string> params, wholeArgs, partArgs;
      std::vector<int> others;
      devSignature(dg, whole, params, wholeArgs, others);
      devSignature(dg, part, params, partArgs, others);
      auto launch = [&](const std::vector<std::string>& args, const char* stream) {
        std::string t = kname + "<<<" + std::to_string(dg.blocks) + ", coconet_rt::kDevThreads, 0, " + stream + ">>>(";
        for (size_t q = 0; q < args.size(); ++q) t += (q ? ", " : "") + args[q];
        return t + ");\n";
      };
      const std::string V = std::to_string(devVecWidth(dg));
      b << "    if (devReady(" << gname << ")) {\n"
        << "      // the staging window holds every rank's partial sums of this rank's block (slot q: rank q's)\n"
        << "      for (int k = 0; k < 2; ++k) stage_[k].ensure(slot, " << prog << ", " << name << ");\n"
        << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, static_cast<size_t>(M * N) * sizeof(" << T << "), "
        << prog << ", " << gname << ");\n"
        << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, static_cast<size_t>((M / P) * N) * sizeof(" << ST << "), " << prog
        << ", " << gname << ") || grew)\n"
        << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << gname << ");\n"
        << "      const std::vector<void*>& slots = dev_->stage[" << gi << "].peerBases(static_cast<int>(P), stream_, " << prog << ", "
        << gname << ");\n";
      const bool mayPipe = dg.gather != 0;  // tune(f, gather = after): only the form after the last chunk
      if (mayPipe)
        b << "      const std::vector<void*>& slices = dev_->slice[" << gi << "].peerBases(static_cast<int>(P), stream_, " << prog << ", "
          << gname << ");\n";
      emitDevMaps(dg, "      ");
      emitDevVec(dg, whole, others, "      ");
      // Per chunk on two ranks where the GEMM is long against the transfers (kGatherFlopsPerByte)
      // and the product large enough to pay for a kernel per chunk.
      if (mayPipe) {
        b << "      // the epilogue and all-gather per chunk "
          << (dg.gather < 0 ? "on two ranks where the GEMM's flops per byte that crosses NVLink,\n"
                              "      // K P / ((P - 1) e), reach " + std::to_string(kGatherFlopsPerByte) +
                                  ", the product is 16 MiB or more and a chunk is whole vectors\n"
                            : "(tune(f, gather = pipelined)) where a chunk is whole vectors\n")
          << "      const bool pipelined = (rg * N) % " << V << " == 0"
          << (dg.gather < 0 ? " && P == 2 &&\n          static_cast<double>(K) * P >= " + std::to_string(kGatherFlopsPerByte) +
                                  ".0 * (P - 1) * sizeof(" + T + ") && static_cast<size_t>(M * N) * sizeof(" + T + ") >= (size_t{16} << 20)"
                            : "")
          << ";\n"
          << "      // chunk cc's epilogue: the group's kernel over its rows of this rank's block on stream_ (after the\n"
          << "      // next chunk's GEMM, on every SM); then copy engines pull the other ranks' parts of it (comm3_)\n"
          << "      auto finish = [&](long long cc) {\n"
          << "        CHECK(cudaStreamWaitEvent(stream_, ovFree_[cc % 2], 0), " << name << ");\n"
          << "        " << launch(partArgs, "stream_") << "        CHECK(cudaGetLastError(), " << gname << ");\n"
          << "        CHECK(cudaEventRecord(ovRed_, stream_), " << name << ");\n"
          << "        CHECK(cudaStreamWaitEvent(comm3_, ovRed_, 0), " << name << ");\n"
          << "        for (long long j = 1; j < P; ++j) {\n"
          << "          const long long q = (" << pos << " + j) % P;\n"
          << "          CHECK(cudaMemcpyAsync(" << var(ch.ag) << " + q * (M / P) * N + cc * rg * N, static_cast<const " << ST
          << "*>(slices[q]) + cc * rg * N, static_cast<size_t>(rg * N) * sizeof(" << ST << "), cudaMemcpyDeviceToDevice, comm3_), \""
          << ag.name << "\");\n"
          << "        }\n      };\n";
      } else {
        b << "      // the epilogue and all-gather once after the last chunk (tune(f, gather = after))\n";
      }
      b << forkComm(name) << "      for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n" << gemm
        << "      // copy engines: rows [c rg, (c+1) rg) of rank q's block into this rank's slot of rank q's staging window\n"
        << "      for (long long j = 1; j <= P; ++j) {\n"
        << "        const long long q = (" << pos << " + j) % P;\n"
        << "        CHECK(cudaMemcpyAsync(static_cast<" << T << "*>(slots[q]) + (" << pos
        << " * (M / P) + c * rg) * N, st + q * rg * N, static_cast<size_t>(rg * N) * sizeof(" << T
        << "), cudaMemcpyDeviceToDevice, comm2_), " << gname << ");\n"
        << "      }\n"
        << "      CHECK(cudaEventRecord(ovFree_[k], comm2_), " << name << ");\n"
        << (mayPipe ? "      if (pipelined && c >= 1) finish(c - 1);\n" : "") << "      }\n";
      // After the last chunk: the last chunk's epilogue and pulls, or the kernel over the whole block.
      const std::string in = mayPipe ? "        " : "      ";
      if (mayPipe)
        b << "      if (pipelined) {\n        finish(C - 1);\n"
          << "        CHECK(cudaEventRecord(ovDone_, comm3_), " << name << ");\n"
          << "        CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " << name << ");\n"
          << "      } else {\n";
      b << in << launch(wholeArgs, "comm2_") << in << "CHECK(cudaGetLastError(), " << gname << ");\n"
        << in << "CHECK(cudaEventRecord(ovDone_, comm2_), " << name << ");\n"
        << in << "CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " << name << ");\n" << (mayPipe ? "      }\n" : "")
        << "    } else {\n      // not every rank is load/store reachable: NCCL calls\n";
    }
    if (device) {
      std::vector<int> members{ch.rs};
      members.insert(members.end(), ch.run.begin(), ch.run.end());
      b << fallbackStorage(members, "    ");
    }
    b << "    for (int k = 0; k < 2; ++k) {\n      stage_[k].ensure(slot, \"" << p_.name << "\", " << name << ");\n"
      << (ch.ag >= 0 ? "      gath_[k].ensure(slot, \"" + p_.name + "\", " + name + ");\n" : "") << "    }\n"
      << forkComm(name)
      << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n" << gemm
      << "      CHECK(ncclReduceScatter(st, " << var(ch.rs) << " + c * rg * N, rg * N, " << ncclType(rs.type.dtype) << ", "
      << ncclOp(rs.op) << ", " << commOf(rs.type.group) << ", comm2_), \"" << rs.name << "\");\n"
      << "      CHECK(cudaEventRecord(ovFree_[k], comm2_), " << name << ");\n";
    if (!ch.run.empty()) {
      b << "      {\n";
      emitComputeRun(ch.run, "comm2_", "c * rg * N", "rg * N");
      b << "      }\n";
    }
    if (ch.ag >= 0) {
      const Stage& ag = p_.stages[ch.ag];
      int src = ag.operands[0];
      std::string AT = storageType(ag.type.dtype);
      b << "      // gather the chunk, then put each rank's part in its block\n"
        << "      CHECK(ncclAllGather(" << var(src) << " + c * rg * N, gath_[k].ptr, rg * N, " << ncclType(ag.type.dtype) << ", "
        << commOf(ag.type.group) << ", comm2_), \"" << ag.name << "\");\n"
        << "      CHECK(cudaMemcpy2DAsync(" << var(ch.ag) << " + c * rg * N, static_cast<size_t>((M / P) * N) * sizeof(" << AT
        << "), gath_[k].ptr, static_cast<size_t>(rg * N) * sizeof(" << AT << "), static_cast<size_t>(rg * N) * sizeof(" << AT
        << "), static_cast<size_t>(P), cudaMemcpyDeviceToDevice, comm2_), \"" << ag.name << "\");\n";
    }
    b << "    }\n" << joinComm(name) << (device ? "    }\n" : "") << "  }\n";
  }

  // ---- Results written where the caller wants them ----
  // A state's new value is computed straight into the state's storage when nothing reads the
  // old value afterwards: every reader of the entry comes earlier on the stream, or is an
  // element-wise member of the same kernel reading the same element (each kernel stores after
  // computing all members of an element). An output is computed straight into the caller's
  // buffer. Either saves a device-to-device copy of the tensor at the end of run().
  std::map<int, std::pair<std::string, std::string>> direct_;  // stage -> (tensor, what it is)
  std::set<int> aliased_;                                       // entries read by their exit's kernel

  void planDirect() {
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

  std::map<int, std::vector<int>> runOf_;  // stage -> the fused run it belongs to
  std::set<int> unstored_;                 // run members whose values never leave the kernel

  std::string exprTextFor(const Stage& s) const {
    std::vector<std::string> names;
    for (int o : s.operands) names.push_back(p_.stages[o].name);
    return s.expr.str(names);
  }

  // One block per output element: the reduced elements, strided, then a tree in shared memory.
  // The reduction's accumulator and combining rule, as the struct the runtime's templates take.
  std::set<int> reduceOps_;  // reductions whose Op struct the kernels have
  // The name of reduction `id`'s Op struct (emitReduceOp writes it).
  std::string reduceOpStruct(int id) const { return "Op_" + std::to_string(id) + "_" + ident(p_.stages[id].name); }
  std::string emitReduceOp(int id) {
    const Stage& s = p_.stages[id];
    const Stage& x = p_.stages[s.operands[0]];
    std::string AT = s.type.dtype == DType::F64 ? "double" : ast::isInteger(s.type.dtype) ? "long long" : "float";
    const std::string op = reduceOpStruct(id);
    if (!reduceOps_.insert(id).second) return op;
    std::string init = s.reduce == ReduceKind::Max ? "-INFINITY" : s.reduce == ReduceKind::Min ? "INFINITY" : "0";
    if (AT == "long long" && s.reduce == ReduceKind::Max) init = "(-9223372036854775807LL - 1)";
    if (AT == "long long" && s.reduce == ReduceKind::Min) init = "9223372036854775807LL";
    std::string comb = s.reduce == ReduceKind::Max ? "return b > a ? b : a;" : s.reduce == ReduceKind::Min ? "return b < a ? b : a;"
                                                                              : "return a + b;";
    std::string fin = s.reduce == ReduceKind::Mean ? "return static_cast<double>(static_cast<Acc>(r / count));"
                      : s.reduce == ReduceKind::Norm ? "return static_cast<double>(sqrt(r));" : "return static_cast<double>(r);";
    kernels_ << "// " << s.name << " = " << reduceKindName(s.reduce) << "(" << x.name << (s.dim >= 0 ? ", dim = " + std::to_string(s.dim) : "")
             << "): accumulated in " << AT << "\nstruct " << op << " {\n  using Acc = " << AT << ";\n"
             << "  __device__ static Acc init() { return " << init << "; }\n"
             << "  __device__ static Acc element(Acc v) { return " << (s.reduce == ReduceKind::Norm ? "v * v" : "v") << "; }\n"
             << "  __device__ static Acc combine(Acc a, Acc b) { " << comb << " }\n"
             << "  __device__ static double finish(Acc r, double count) {\n    (void)count;\n    " << fin << "\n  }\n};\n\n";
    return op;
  }

  // The mean divides by the global count of reduced elements (host expression).
  std::string reduceCount(int id) const {
    const Stage& s = p_.stages[id];
    const Stage& x = p_.stages[s.operands[0]];
    std::string count = "1.0";
    for (int k = 0; k < x.type.rank(); ++k)
      if (s.dim < 0 || s.dim == k) count += " * static_cast<double>(" + cxx(x.type.shape[k]) + ")";
    return count;
  }

  void emitReduce(int id) {
    const Stage& s = p_.stages[id];
    const Stage& x = p_.stages[s.operands[0]];
    std::string op = emitReduceOp(id);
    if (bagReduce_.count(id)) {
      emitBag(id, op);
      return;
    }
    int xr = x.type.rank();
    auto& b = body_;
    b << "    long long outer = 1, len = 1, inner = 1;\n";
    if (s.dim < 0) {
      b << "    len = " << countVar(s.operands[0]) << ";\n";
    } else {
      for (int k = 0; k < xr; ++k)
        b << "    " << (k < s.dim ? "outer" : k == s.dim ? "len" : "inner") << " *= " << shapeVar(s.operands[0]) << "[" << k << "];\n";
    }
    const std::string count = reduceCount(id);
    // The reduced elements: read from x's storage, or computed (inlineSrc_).
    std::string src = std::string("coconet_rt::Ptr<") + storageType(x.type.dtype) + ">{" + var(s.operands[0]) + "}";
    if (auto is = inlineSrc_.find(id); is != inlineSrc_.end()) src = emitReduceSource(id, is->second);
    std::string args = "(" + src + ", " + var(id) + ", outer, len, inner, count);\n";
    b << "    const double count = " << count << ";\n    const long long outs = outer * inner;\n";
    if (auto f = foldedInto_.find(id); f != foldedInto_.end()) {
      const std::string blocks = foldBlocksVar(f->second);
      b << "    if (" << blocks << " > 0) {\n"
        << "      // the blocks of fused group '" << devGroups_.at(f->second).name << "' wrote their partial results: combine them in order\n"
        << "      coconet_rt::reduce_final<" << op << "><<<1, 32, 0, stream_>>>(static_cast<const " << op << "::Acc*>(red" << id
        << "_.ptr), " << var(id) << ", 1, " << blocks << ", count);\n"
        << "    } else ";
    } else {
      b << "    ";
    }
    b << "if (len <= 64 || (inner > 1 && outs >= 8192)) {\n"
      << "      coconet_rt::reduce_thread<" << op << "><<<coconet_rt::gridFor(outs), 256, 0, stream_>>>" << args
      << "    } else if (outs >= 512) {\n"
      << "      coconet_rt::reduce_block<" << op << "><<<static_cast<int>(std::min<long long>(outs, 65535)), 256, 0, stream_>>>" << args
      << "    } else {\n"
      << "      // few long reductions: split each over blocks, then combine the parts in order\n"
      << "      const long long parts = std::min<long long>(1024, (len + 8191) / 8192);\n"
      << "      red" << id << "_.ensure(static_cast<size_t>(outs * parts) * sizeof(" << op << "::Acc), \"" << p_.name << "\", \"" << s.name << "\");\n"
      << "      auto* part = static_cast<" << op << "::Acc*>(red" << id << "_.ptr);\n"
      << "      coconet_rt::reduce_split<" << op << "><<<static_cast<int>(std::min<long long>(outs * parts, 65535)), 256, 0, stream_>>>("
      << src << ", part, outer, len, inner, parts);\n"
      << "      CHECK(cudaGetLastError(), \"" << s.name << "\");\n"
      << "      coconet_rt::reduce_final<" << op << "><<<coconet_rt::gridFor(outs), 256, 0, stream_>>>(part, " << var(id)
      << ", outs, parts, count);\n    }\n"
      << "    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
  }

  // ---- Scalar chains on the device path ----
  // Consecutive stages that each make one element (a folded reduction's combination of its
  // blocks' partials, an allreduce over the world, element-wise arithmetic on scalars: LAMB's
  // norms and trust ratio, a clipping factor) run as one single-thread kernel instead of a
  // launch each. Its allreduces are exchanges through a symmetric window: the rank stores its
  // values into its slot on every rank, one LSA barrier, then it combines the slots in rank
  // order (as the one-shot allreduce does). Arithmetic runs as soon as its operands are known
  // and allreduces wait until nothing else can run, so independent allreduces (the two norms)
  // share one exchange. The window has two halves used in turn (parity) and one region per
  // exchange: a rank's next call cannot overwrite slots a slower rank still reads, since it
  // would first pass a barrier that the slower rank reaches only after reading them. Where the
  // device path is not usable, the stages run one by one as they would otherwise.
  struct ScalarChain {
    int index = 0;
    std::vector<int> stages;               // program order (the stages that make code)
    std::vector<int> order;                // execution order in the kernel; -1 - e: exchange e
    std::vector<std::vector<int>> exchanges;  // the allreduces of each exchange
    std::vector<int> ext, written;         // values read from memory / stored for later stages
    size_t width = 0;                      // the most allreduces in one exchange
    std::string name;
  };
  std::map<int, ScalarChain> scalarChains_;  // by the first stage
  std::map<int, int> scalarChainOf_;         // stage -> the first stage of its chain

  static bool oneElement(const TensorType& t) {
    for (auto& d : t.shape)
      if (d.constantValue() != 1) return false;
    return true;
  }

  bool scalarChainStage(int id) const {
    const Stage& s = p_.stages[id];
    if (!oneElement(s.type) || runOf_.count(id) || devMembers_.count(id) || devGroups_.count(id) || chunked_.count(id) ||
        overlapped_.count(id) || bagOf_.count(id) || arPair_.count(id) || unstored_.count(id) || devFallbackOnly_.count(id))
      return false;
    if (s.kind == StageKind::Reduce) return foldedInto_.count(id) > 0;
    if (s.kind == StageKind::AllReduce)
      return (!s.type.group || s.type.group->depth == 0) && (s.op == ReduceOp::Sum || s.op == ReduceOp::Max || s.op == ReduceOp::Min) &&
             (s.type.dtype == DType::F16 || s.type.dtype == DType::BF16 || s.type.dtype == DType::F32) && algorithmOf(s) != "nccl" &&
             algorithmOf(s) != "ring";
    if (s.kind != StageKind::Compute) return false;
    for (auto& n : s.expr.nodes)
      if (n.op == EOp::Dropout) return false;  // its key is the element's index in its own map
    for (int o : s.operands)
      if (!oneElement(p_.stages[o].type)) return false;
    return true;
  }

  // Sends (to the next or previous rank or group: every rank sends and receives) over the
  // device API: the runtime's dev_send_recv pushes into the receiver's window.
  std::map<int, int> devSend_;  // stage -> its window's index
  void planDeviceSends() {
    if (!o_.deviceCollectives) return;
    for (size_t i = 0; i < p_.stages.size(); ++i)
      if (p_.stages[i].kind == StageKind::Send && !overlapped_.count(static_cast<int>(i)) && !chunked_.count(static_cast<int>(i)) &&
          algorithmOf(p_.stages[i]) != "nccl")
        devSend_[static_cast<int>(i)] = devIndices_++;
  }

  void planScalarChains() {
    if (!o_.deviceCollectives) return;
    auto flush = [&](std::vector<int>& c) {
      bool hasAR = false;
      for (int id : c) hasAR = hasAR || p_.stages[id].kind == StageKind::AllReduce;
      if (c.size() >= 2 && hasAR) {
        ScalarChain sc;
        sc.stages = c;
        std::set<int> in(c.begin(), c.end()), done;
        // List scheduling: everything ready but the allreduces, then one exchange of the ready allreduces.
        std::vector<int> left = c;
        auto ready = [&](int id) {
          for (int o : p_.stages[id].operands)
            if (in.count(o) && !done.count(o)) return false;
          return true;
        };
        while (!left.empty()) {
          bool moved = true;
          while (moved) {
            moved = false;
            for (size_t k = 0; k < left.size(); ++k)
              if (p_.stages[left[k]].kind != StageKind::AllReduce && ready(left[k])) {
                sc.order.push_back(left[k]);
                done.insert(left[k]);
                left.erase(left.begin() + static_cast<long>(k));
                moved = true;
                break;
              }
          }
          std::vector<int> ex;
          for (int id : left)
            if (p_.stages[id].kind == StageKind::AllReduce && ready(id)) ex.push_back(id);
          if (ex.empty()) break;  // cannot happen: the chain is in program order
          sc.order.push_back(-1 - static_cast<int>(sc.exchanges.size()));
          for (int id : ex) {
            done.insert(id);
            left.erase(std::find(left.begin(), left.end(), id));
          }
          sc.width = std::max(sc.width, ex.size());
          sc.exchanges.push_back(ex);
        }
        for (int id : c) {
          if (p_.stages[id].kind != StageKind::Reduce)  // a folded reduction reads its blocks' partials
            for (int o : p_.stages[id].operands)
              if (!in.count(o) && std::find(sc.ext.begin(), sc.ext.end(), o) == sc.ext.end()) sc.ext.push_back(o);
          if (neededOutside(id, in)) sc.written.push_back(id);
        }
        std::string name;
        for (int id : c) name += (name.empty() ? "" : ", ") + p_.stages[id].name;
        sc.name = "scalars " + name;
        sc.index = devIndices_++;
        for (int id : c) {
          scalarChainOf_[id] = c.front();
          devAR_.erase(id);
        }
        scalarChains_[c.front()] = std::move(sc);
      }
      c.clear();
    };
    std::vector<int> cur;
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const int id = static_cast<int>(i);
      const Stage& s = p_.stages[i];
      if (s.kind == StageKind::Input || s.kind == StageKind::State || inlinedInto_.count(id)) continue;  // no code here
      if (scalarChainStage(id)) cur.push_back(id);
      else flush(cur);
    }
    flush(cur);
  }

  void emitScalarChain(const ScalarChain& sc) {
    auto& b = body_;
    const std::string kname = "k_" + std::to_string(sc.stages.front()) + "_scalars";
    const std::string gi = std::to_string(sc.index), name = "\"" + p_.stages[sc.stages.front()].name + "\"",
                      prog = "\"" + p_.name + "\"";
    std::vector<int> computes;
    for (int id : sc.stages)
      if (p_.stages[id].kind == StageKind::Compute) computes.push_back(id);
    std::vector<std::string> params{"ncclDevComm dc", "ncclWindow_t win", "size_t half"}, args{"dev_->dc.comm", "w.win",
                                                                                               "dev_->parity[" + gi + "] * (w.bytes / 2)"};
    for (int id : sc.written) {
      params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + "* __restrict__ out" + std::to_string(id));
      args.push_back(var(id));
    }
    for (int o : sc.ext) {
      params.push_back("const " + std::string(storageType(p_.stages[o].type.dtype)) + "* __restrict__ a" + std::to_string(o));
      args.push_back(var(o));
    }
    for (int id : sc.stages)
      if (p_.stages[id].kind == StageKind::Reduce) {
        const std::string f = std::to_string(id), op = reduceOpStruct(id);
        params.insert(params.end(), {"const " + op + "::Acc* __restrict__ part" + f, "int blocks" + f, "double count" + f});
        args.insert(args.end(), {"static_cast<const " + op + "::Acc*>(red" + f + "_.ptr)",
                                 foldBlocksVar(foldedInto_.at(id)), reduceCount(id)});
      }
    runParams(computes, params, args);
    params.push_back("unsigned long long seed");
    args.push_back("seed");
    // The kernel.
    auto& K = kernels_;
    K << "// " << sc.name << ": one thread; the allreduces as " << sc.exchanges.size()
      << " exchange(s) of up to " << sc.width << " value(s) through a symmetric window (two halves, parity)\n";
    for (int id : sc.stages) {
      const Stage& s = p_.stages[id];
      K << "// " << s.name << " = "
        << (s.kind == StageKind::Reduce ? std::string(reduceKindName(s.reduce)) + "(" + p_.stages[s.operands[0]].name + ") from its blocks' partials"
            : s.kind == StageKind::AllReduce ? std::string("allreduce(") + reduceOpName(s.op) + ", " + p_.stages[s.operands[0]].name + ")"
                                             : exprTextFor(s))
        << "\n";
    }
    K << "__global__ void " << kname << "(";
    for (size_t k = 0; k < params.size(); ++k) K << (k ? ", " : "") << params[k];
    K << ") {\n  (void)seed;\n  const unsigned long long key = 0;\n  (void)key;\n"
      << "  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, 0};\n"
      << "  const int P = dc.lsaSize, me = dc.lsaRank;\n";
    std::set<int> known;
    auto value = [&](int o) { return known.count(o) ? "r" + std::to_string(o) : "coconet_rt::to_f(a" + std::to_string(o) + "[0])"; };
    auto storeAs = [&](int id, const std::string& v) {
      const std::string T = storageType(p_.stages[id].type.dtype), i = std::to_string(id);
      return "  const " + T + " s" + i + " = coconet_rt::Store<" + T + ">::from(static_cast<double>(" + v + "));\n  const auto r" + i +
             " = coconet_rt::to_f(s" + i + ");\n  (void)r" + i + ";\n";
    };
    for (int step : sc.order) {
      if (step >= 0 && p_.stages[step].kind == StageKind::Reduce) {
        const std::string f = std::to_string(step), op = reduceOpStruct(step);
        K << "  " << op << "::Acc acc" << f << " = " << op << "::init();\n"
          << "  for (int q = 0; q < blocks" << f << "; ++q) acc" << f << " = " << op << "::combine(acc" << f << ", part" << f << "[q]);\n"
          << storeAs(step, op + "::finish(acc" + f + ", count" + f + ")");
        known.insert(step);
      } else if (step >= 0) {
        std::map<int, int> ids;
        for (int o : p_.stages[step].operands) ids[o] = o;
        K << runMembers({step}, ids, {}, "  ", value, [](int) { return std::string(); }, /*uniqueNames=*/true);
        known.insert(step);
      } else {
        const int e = -1 - step;
        const auto& ex = sc.exchanges[static_cast<size_t>(e)];
        const std::string region = "(" + std::to_string(e) + " * P + me) * " + std::to_string(sc.width);
        K << "  // exchange " << e << ": this rank's slot on every rank, a barrier, then every rank's slots in rank order\n"
          << "  for (int p = 0; p < P; ++p) {\n";
        for (size_t k = 0; k < ex.size(); ++k)
          K << "    *coconet_rt::peerPtr<float>(win, half + (" << region << " + " << k << ") * sizeof(float), p) = "
            << value(p_.stages[ex[k]].operands[0]) << ";\n";
        K << "  }\n  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
          << "  const float* slots" << e << " = static_cast<const float*>(ncclGetLocalPointer(win, half)) + " << e << " * P * "
          << sc.width << ";\n";
        for (size_t k = 0; k < ex.size(); ++k) {
          const Stage& a = p_.stages[ex[k]];
          const std::string i = std::to_string(ex[k]), w = std::to_string(sc.width);
          const bool sum = a.op == ReduceOp::Sum;  // as sumSlot: from 0, in rank order
          const std::string comb = sum ? "__fadd_rn(x" + i + ", y)" : a.op == ReduceOp::Max ? "fmaxf(x" + i + ", y)" : "fminf(x" + i + ", y)";
          K << "  float x" << i << " = " << (sum ? "0.0f" : "slots" + std::to_string(e) + "[" + std::to_string(k) + "]") << ";\n"
            << "  for (int p = " << (sum ? 0 : 1) << "; p < P; ++p) {\n    const float y = slots" << e << "[p * " << w << " + " << k
            << "];\n    x" << i << " = " << comb << ";\n  }\n"
            << storeAs(ex[k], "x" + i);
          known.insert(ex[k]);
        }
      }
    }
    for (int id : sc.written) K << "  out" << id << "[0] = s" << id << ";\n";
    K << "}\n\n";
    // Host code.
    b << "\n  // " << sc.name << ": one kernel over NCCL's device API where every rank is load/store reachable\n"
      << "  if (devReady(" << name << ")) {\n"
      << "    coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "    if (w.ensure(comm_, stream_, 2 * ((static_cast<size_t>(P_) * " << sc.exchanges.size() * sc.width
      << " * sizeof(float) + 255) / 256 * 256), " << prog << ", " << name << "))\n"
      << "      dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "    " << kname << "<<<1, 1, 0, stream_>>>(";
    for (size_t k = 0; k < args.size(); ++k) b << (k ? ", " : "") << args[k];
    b << ");\n    CHECK(cudaGetLastError(), " << name << ");\n"
      << "    dev_->parity[" << gi << "] ^= 1;\n"
      << "  } else {\n    // not every rank is load/store reachable: the stages one by one\n";
    for (int id : sc.stages) {
      b << "    // " << p_.stages[id].name << "\n    if (" << countVar(id) << " > 0) {\n";
      emitIndented("  ", [&] { emitStage(id); });
      b << "    }\n";
    }
    b << "  }\n";
  }

  // ---- Reductions that compute their elements ----
  // An element-wise stage that only a reduction reads (and, recursively, element-wise stages of
  // its shape that only the chain reads) is computed inside the reduction at each element it
  // reduces and never stored: a norm's squares, and the slicing copy that a reorder makes for a
  // reduction of a replicated value, cost no pass over memory and no launch of their own. Each
  // operand from outside the chain is read at the element's own index, modulo its length (a
  // trailing-dimension operand such as a bias) or as one scalar; the values are rounded to the
  // members' types exactly as storing them would round them.
  struct InlineSrc {
    std::vector<int> chain;  // program order; the last is the reduction's operand
    std::vector<int> ext;
    std::map<int, int> extIndex;
    std::vector<Access> acc;
  };
  std::map<int, InlineSrc> inlineSrc_;  // reduction -> its computed elements
  std::map<int, int> inlinedInto_;      // stage -> the reduction that computes it

  bool inlinable(int id, int consumer) const {
    const Stage& c = p_.stages[id];
    if (c.kind != StageKind::Compute || !c.fusedInto.empty() || runOf_.count(id) || direct_.count(id) || unstored_.count(id) ||
        chunked_.count(id) || overlapped_.count(id) || devMembers_.count(id) || bagOf_.count(id) || devFallbackOnly_.count(id) ||
        inlinedInto_.count(id))
      return false;
    if (c.type.group && c.type.layout.kind == Layout::Sliced && c.type.layout.dim != 0) return false;
    return !isUsed(p_, id, {consumer});
  }

  void planInlinedReductions() {
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      const Stage& r = p_.stages[i];
      const int rid = static_cast<int>(i);
      if (r.kind != StageKind::Reduce || bagReduce_.count(rid) || chunked_.count(rid) || overlapped_.count(rid)) continue;
      const int x = r.operands[0];
      if (!inlinable(x, rid)) continue;
      const TensorType& xt = p_.stages[x].type;
      std::set<int> chain{x};
      std::vector<int> work{x};
      while (!work.empty()) {
        int c = work.back();
        work.pop_back();
        for (int o : p_.stages[c].operands) {
          const TensorType& ot = p_.stages[o].type;
          if (!chain.count(o) && ot.shape == xt.shape && ot.layout == xt.layout && ot.group == xt.group && inlinable(o, c)) {
            chain.insert(o);
            work.push_back(o);
          }
        }
      }
      InlineSrc is;
      is.chain.assign(chain.begin(), chain.end());
      bool ok = true;
      for (int id : is.chain)
        for (int o : p_.stages[id].operands)
          if (!chain.count(o) && !is.extIndex.count(o)) {
            is.extIndex[o] = static_cast<int>(is.ext.size());
            is.ext.push_back(o);
            is.acc.push_back(accessOf(o, p_.stages[x]));
            ok = ok && is.acc.back() != Access::Mapped;
          }
      if (!ok) continue;
      for (int id : is.chain) inlinedInto_[id] = rid;
      inlineSrc_[rid] = std::move(is);
    }
  }

  // ---- Reductions folded into a device group's kernel ----
  // A reduction of every element of a tensor shaped like a device group's slice (a norm's sum of
  // squares between LAMB's reduce-scatter and all-gather, a gradient norm for clipping) whose
  // elements the group's kernel can compute (from its members, its operands, and values stored
  // before it, through the maps its members use) is accumulated inside that kernel: each thread
  // folds the elements it computes anyway, each block writes one partial result, and at the
  // reduction's place a one-block kernel combines the blocks' partials in block order (the
  // partition depends only on the sizes: deterministic). The reduction then reads no memory of
  // its own and a member that only it read is never stored. Where the group runs as NCCL calls,
  // the reduction runs as it would unfolded.
  static constexpr int kMaxFolds = 4;  // per kernel (each takes kDevThreads accumulators of shared memory)
  std::map<int, int> foldedInto_;      // reduction -> the first member of its device group

  // Is value `id` in memory, whole, before stage `before` runs? (Inputs and states always are.)
  // The host variable with the block count of the device group that starts at `first`, where
  // its blocks wrote partial results (0 where they did not).
  std::string foldBlocksVar(int first) const { return "devFold" + std::to_string(devGroups_.at(first).index) + "Blocks"; }

  bool storedBefore(int id, int before) const {
    const StageKind k = p_.stages[id].kind;
    if (k == StageKind::Input || k == StageKind::State) return true;
    return id < before && !unstored_.count(id) && !inlinedInto_.count(id) && !bagOf_.count(id) && !devFallbackOnly_.count(id) &&
           !devMembers_.count(id) && !devGroups_.count(id) && !chunked_.count(id) && !overlapped_.count(id);
  }

  void planFoldedReductions() {
    for (auto& [first, dg] : devGroups_) {
      const Stage& ref = p_.stages[dg.ref];
      const int last = dg.tail() ? dg.ag : dg.run.back();
      for (size_t i = last + 1; i < p_.stages.size() && dg.folds.size() < kMaxFolds; ++i) {
        const Stage& r = p_.stages[i];
        const int rid = static_cast<int>(i);
        if (r.kind != StageKind::Reduce || bagReduce_.count(rid) || chunked_.count(rid) || overlapped_.count(rid) || foldedInto_.count(rid))
          continue;
        const int x = r.operands[0];
        const TensorType& xt = p_.stages[x].type;
        if (!(r.dim < 0 || xt.rank() == 1) || xt.shape != ref.type.shape || xt.layout != ref.type.layout || xt.group != ref.type.group)
          continue;
        // The reduced elements: computed (an inlined source) or a value the kernel has.
        std::vector<int> chain, leaves{x};
        if (auto is = inlineSrc_.find(rid); is != inlineSrc_.end()) {
          chain = is->second.chain;
          leaves = is->second.ext;
        }
        std::set<int> have(dg.run.begin(), dg.run.end());
        std::vector<int> added;
        bool ok = true;
        for (int o : leaves) {
          if (have.count(o) || dg.extIndex.count(o) || std::find(added.begin(), added.end(), o) != added.end()) continue;
          ok = ok && storedBefore(o, dg.first()) && accessOf(o, ref) != Access::Mapped;
          added.push_back(o);
        }
        if (!ok) continue;
        for (int o : added) {
          dg.extIndex[o] = static_cast<int>(dg.ext.size());
          dg.ext.push_back(o);
          dg.acc.push_back(accessOf(o, ref));
        }
        dg.calc.insert(dg.calc.end(), chain.begin(), chain.end());
        dg.folds.push_back(rid);
        foldedInto_[rid] = first;
      }
      if (dg.folds.empty()) continue;
      // Members that only folded reductions read are no longer stored (the NCCL fallback stores them).
      std::set<int> inside(dg.calc.begin(), dg.calc.end());
      inside.insert(dg.folds.begin(), dg.folds.end());
      if (dg.tail()) inside.insert(dg.ag);
      dg.written.clear();
      for (int id : dg.run)
        if (neededOutside(id, inside)) dg.written.push_back(id);
      std::vector<int> m;
      if (dg.head()) m.push_back(dg.rs);
      m.insert(m.end(), dg.run.begin(), dg.run.end());
      markFallbackOnly(m, dg);
    }
  }

  // The source of reduction `id` that computes its elements: a struct in the kernels (its
  // operator() is element i of the reduced tensor) and the host's instance of it; returns its name.
  std::string emitReduceSource(int id, const InlineSrc& is) {
    const Stage& s = p_.stages[id];
    const int x = s.operands[0];
    const std::string sname = "Src_" + std::to_string(id) + "_" + ident(s.name);
    std::vector<std::string> fields, args;
    for (size_t k = 0; k < is.ext.size(); ++k) {
      std::string kk = std::to_string(k);
      fields.push_back("const " + std::string(storageType(p_.stages[is.ext[k]].type.dtype)) + "* a" + kk);
      args.push_back(var(is.ext[k]));
      fields.push_back("long long b" + kk);
      args.push_back(is.acc[k] == Access::Modulo ? countVar(is.ext[k]) : "m" + kk + ".base");
    }
    fields.push_back("OutputMap om");
    args.push_back("om");
    runParams(is.chain, fields, args);
    fields.push_back("unsigned long long seed");
    args.push_back("seed");
    for (int c : is.chain) kernels_ << "// " << p_.stages[c].name << " = " << exprTextFor(p_.stages[c]) << "\n";
    kernels_ << "// (computed inside the reduction '" << s.name << "' at each element: never stored)\nstruct " << sname << " {\n";
    for (auto& f : fields) kernels_ << "  " << f << ";\n";
    kernels_ << "  __device__ __forceinline__ auto operator()(long long i) const {\n"
             << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n    (void)key;\n"
             << runMembers(is.chain, is.extIndex, {}, "    ",
                           [&](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[" + fastIndex(is.acc[k], k, "i", "i") + "])"; },
                           [](int) { return std::string(); })
             << "    return r" << x << ";\n  }\n};\n\n";
    emitMaps(x, is.ext);
    body_ << "    const " << sname << " src{";
    for (size_t k = 0; k < args.size(); ++k) body_ << (k ? ", " : "") << args[k];
    body_ << "};\n";
    return "src";
  }

  void emitRowwise(int id) {
    const Stage& s = p_.stages[id];
    std::string T = storageType(s.type.dtype), XT = storageType(p_.stages[s.operands[0]].type.dtype);
    std::string kname = "k_" + std::to_string(id) + "_" + ident(s.name);
    bool affine = s.operands.size() == 3;
    std::string GT = affine ? storageType(p_.stages[s.operands[1]].type.dtype) : "float";
    std::string BT = affine ? storageType(p_.stages[s.operands[2]].type.dtype) : "float";
    bool f64 = s.type.dtype == DType::F64;
    for (int o : s.operands) f64 = f64 || p_.stages[o].type.dtype == DType::F64;
    const std::string A = f64 ? "double" : "float";  // accumulation, as the interpreter
    const std::string stats = std::string(s.kind == StageKind::Softmax ? "coconet_rt::MaxSumT<" : "coconet_rt::WelfordT<") + A + ">";
    auto in = [&](const std::string& e) { return "static_cast<" + A + ">(coconet_rt::to_f(" + e + "))"; };
    kernels_ << "// " << s.name << ": " << stageKindName(s.kind) << " over the last dimension, one block per row; the row's\n"
             << "// statistics in one pass (" << (s.kind == StageKind::Softmax ? "running maximum and sum" : "Welford") << ", in " << A
             << "), then one pass that writes\n"
             << "__global__ void " << kname << "(const " << XT << "* __restrict__ x, " << T << "* __restrict__ y, const " << GT
             << "* __restrict__ gamma, const " << BT << "* __restrict__ beta, long long rows, long long n, " << A << " eps) {\n"
             << "  __shared__ " << stats << " sh[32];\n"
             << "  (void)gamma; (void)beta; (void)eps;\n"
             << "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
             << "    const " << XT << "* xr = x + row * n;\n    " << T << "* yr = y + row * n;\n"
             << "    " << stats << " st;\n    for (long long i = threadIdx.x; i < n; i += blockDim.x) st.add(" << in("xr[i]") << ");\n"
             << "    st = coconet_rt::blockCombine(st, sh);\n";
    if (s.kind == StageKind::Softmax) {
      kernels_ << "    for (long long i = threadIdx.x; i < n; i += blockDim.x) yr[i] = coconet_rt::Store<" << T
               << ">::from(coconet_rt::acc_exp(" << in("xr[i]") << " - st.m) / st.s);\n";
    } else {
      kernels_ << "    const " << A << " mean = st.mean, inv = " << A << "(1) / coconet_rt::acc_sqrt(st.m2 / static_cast<" << A
               << ">(n) + eps);\n"
               << "    for (long long i = threadIdx.x; i < n; i += blockDim.x) {\n      " << A << " v = (" << in("xr[i]") << " - mean) * inv;\n"
               << (affine ? "      v = v * " + in("gamma[i]") + " + " + in("beta[i]") + ";\n" : "")
               << "      yr[i] = coconet_rt::Store<" << T << ">::from(v);\n    }\n";
    }
    kernels_ << "  }\n}\n\n";
    int r = s.type.rank();
    std::string eps = s.eps.param.empty() ? num(s.eps.value) : "sc." + ident(s.eps.param);
    body_ << "    const long long n = " << shapeVar(id) << "[" << (r - 1) << "], rows = " << countVar(id) << " / n;\n"
          << "    " << kname << "<<<static_cast<int>(std::min<long long>(rows, 65535)), 256, 0, stream_>>>(" << var(s.operands[0])
          << ", " << var(id) << ", " << (affine ? var(s.operands[1]) : "static_cast<const float*>(nullptr)") << ", "
          << (affine ? var(s.operands[2]) : "static_cast<const float*>(nullptr)") << ", rows, n, static_cast<" << A << ">(" << eps
          << "));\n    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
  }

  // Row-major C[M, N] = A[M, K] B[K, N] is column-major C^T = B^T A^T: one cuBLAS GEMM with f32
  // accumulation (f64 for f64), batched when both operands carry batch dimensions.
  void emitGemm(int id) {
    const Stage& s = p_.stages[id];
    DType dt = s.type.dtype;
    std::string ty = cudaDataType(dt);
    bool f64 = dt == DType::F64;
    int a = s.operands[0], bop = s.operands[1];
    int ra = p_.stages[a].type.rank();
    auto& b = body_;
    if (s.kind == StageKind::Gemv) {
      b << "    const long long M = " << shapeVar(a) << "[0], K = " << shapeVar(a) << "[1], N = 1, batch = 1;\n"
        << "    const long long strideA = 0, strideB = 0, strideC = 0, reps = 1, stepA = 0, stepB = 0, stepC = 0, baseA = 0, baseB = 0;\n";
    } else {
      int rb = p_.stages[bop].type.rank();
      b << "    const long long M = " << shapeVar(a) << "[" << ra - 2 << "], K = " << shapeVar(a) << "[" << ra - 1 << "], N = "
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
    b << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
      << "    for (long long r = 0; r < reps; ++r)\n"
      << "      CHECK(cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(" << M
      << "), static_cast<int>(K), &alpha, " << var(bop) << " + baseB + r * stepB, " << ty << ", static_cast<int>(N), strideB, " << var(a)
      << " + baseA + r * stepA, " << ty << ", static_cast<int>(K), strideA, &beta, " << var(id) << " + r * stepC, " << ty
      << ", static_cast<int>(N), strideC, static_cast<int>(batch), " << (f64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F")
      << ", CUBLAS_GEMM_DEFAULT), \"" << s.name << "\");\n";
  }

  void emitEmbedding(int id) {
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

  // ---- Driver, build manifest, manifest.json ----
  std::string driverText() {
    std::string d = kDriverTemplate;
    std::ostringstream sizes, scalars, tensors, table;
    for (auto& prm : p_.params) {
      if (prm.isSize) sizes << "  {\"" << prm.name << "\", &sz.s_" << prm.name << "},\n";
      else scalars << "  {\"" << prm.name << "\", &sc." << ident(prm.name) << "},\n";
    }
    // The least precise floating type each value depends on: its GPU check allows that
    // type's rounding (NCCL, for one, rounds f16 sums at every step where the reference
    // rounds once).
    std::vector<DType> weakest(p_.stages.size());
    auto rankOf = [](DType t) { return t == DType::BF16 ? 0 : t == DType::F16 ? 1 : t == DType::F32 ? 2 : t == DType::F64 ? 3 : 4; };
    for (size_t i = 0; i < p_.stages.size(); ++i) {
      weakest[i] = p_.stages[i].type.dtype;
      for (int o : p_.stages[i].operands)
        if (rankOf(weakest[o]) < rankOf(weakest[i])) weakest[i] = weakest[o];
    }
    auto row = [&](const std::string& kind, const std::string& name, const TensorType& t, int stage) {
      DType w = stage >= 0 && rankOf(weakest[stage]) < rankOf(t.dtype) ? weakest[stage] : t.dtype;
      table << "  {\"" << kind << "\", \"" << name << "\", \"" << ast::dtypeName(t.dtype) << "\", " << dtypeBytes(t.dtype)
            << ", \"" << ast::dtypeName(w) << "\"},\n";
    };
    for (auto& s : p_.stages)
      if (s.kind == StageKind::Input) row("in", s.name, s.type, -1);
    for (size_t i = 0; i < p_.outputs.size(); ++i) row("out", p_.outputNames[i], p_.stages[p_.outputs[i]].type, p_.outputs[i]);
    for (auto& st : p_.states) row("state", st.name, st.type, st.exit);
    for (auto& s : p_.stages)
      if (s.kind == StageKind::Input) tensors << "  if (name == \"" << s.name << "\") t." << ident(s.name) << " = ptr;\n";
    for (auto& o : p_.outputNames) tensors << "  if (name == \"" << o << "\") t." << ident(o) << " = ptr;\n";
    for (auto& st : p_.states) tensors << "  if (name == \"" << st.name << "\") t." << ident(st.name) << " = ptr;\n";
    auto replace = [&](const std::string& key, const std::string& value) {
      for (size_t at; (at = d.find(key)) != std::string::npos;) d.replace(at, key.size(), value);
    };
    replace("@PROGRAM@", p_.name);
    replace("@CLASS@", cls_);
    replace("@SIZES@", sizes.str());
    replace("@SCALARS@", scalars.str());
    replace("@TABLE@", table.str());
    replace("@BIND@", tensors.str());
    replace("@VERSION@", COCONETC_VERSION);
    return d;
  }

  static int dtypeBytes(DType t) {
    switch (t) {
      case DType::F16: case DType::BF16: return 2;
      case DType::F32: case DType::I32: return 4;
      case DType::I8: case DType::U8: case DType::Bool: return 1;
      default: return 8;
    }
  }

  std::string cmakeText() {
    std::ostringstream c;
    std::string arch = o_.arch;
    if (arch.rfind("sm_", 0) == 0) arch = arch.substr(3);
    c << "# Build manifest for " << p_.name << ", generated by coconetc " << COCONETC_VERSION << ".\n"
      << "#   cmake -S . -B build && cmake --build build   (NCCL_ROOT=... to pick an NCCL)\n"
      << "cmake_minimum_required(VERSION 3.24)\nproject(" << cls_ << " LANGUAGES CXX CUDA)\n"
      << "set(CMAKE_CXX_STANDARD 17)\nset(CMAKE_CUDA_STANDARD 17)\n"
      << "if(NOT CMAKE_CUDA_ARCHITECTURES)\n  set(CMAKE_CUDA_ARCHITECTURES " << arch << ")\nendif()\n"
      << "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n"
      << "find_package(CUDAToolkit REQUIRED)\n"
      << "# NCCL >= 2.28: NCCL_ROOT, the CUDA toolkit, the system, or PyTorch's environment.\n"
      << "file(GLOB TORCH_NCCL /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl)\n"
      << "set(NCCL_HINTS $ENV{NCCL_ROOT} ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda /usr ${TORCH_NCCL})\n"
      << "find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_HINTS} PATH_SUFFIXES include REQUIRED)\n"
      << "# The library beside the header first (a system libnccl.so of another version must not win:\n"
      << "# the device API's structures differ between versions), then the hints in order.\n"
      << "get_filename_component(NCCL_HEADER_ROOT ${NCCL_INCLUDE_DIR} DIRECTORY)\n"
      << "find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${NCCL_HEADER_ROOT} ${NCCL_HINTS}\n"
      << "             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu REQUIRED)\n"
      << "file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h NCCL_MAJOR_LINE REGEX \"^#define NCCL_MAJOR\")\n"
      << "file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h NCCL_MINOR_LINE REGEX \"^#define NCCL_MINOR\")\n"
      << "message(STATUS \"NCCL: ${NCCL_LIBRARY} (${NCCL_MAJOR_LINE} ${NCCL_MINOR_LINE})\")\n"
      << "# The program compiles once; a static library (for C++ callers and the driver) and a shared one\n"
      << "# (libcoconet_" << cls_ << ".so: the C interface, for Python's ctypes) are made from it.\n"
      << "add_library(" << cls_ << "_objects OBJECT " << cls_ << ".cu)\n"
      << "set_target_properties(" << cls_ << "_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)\n"
      << "target_include_directories(" << cls_ << "_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${NCCL_INCLUDE_DIR})\n"
      << "target_compile_options(" << cls_ << "_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)\n"
      << "get_filename_component(NCCL_LIBDIR ${NCCL_LIBRARY} DIRECTORY)\n"
      << "add_library(" << cls_ << " STATIC $<TARGET_OBJECTS:" << cls_ << "_objects>)\n"
      << "target_include_directories(" << cls_ << " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${NCCL_INCLUDE_DIR})\n"
      << "target_link_libraries(" << cls_ << " PUBLIC CUDA::cudart CUDA::cublas ${NCCL_LIBRARY})\n"
      << "add_library(coconet_" << cls_ << " SHARED $<TARGET_OBJECTS:" << cls_ << "_objects>)\n"
      << "target_link_libraries(coconet_" << cls_ << " PRIVATE CUDA::cudart CUDA::cublas ${NCCL_LIBRARY})\n"
      << "set_target_properties(coconet_" << cls_ << " PROPERTIES BUILD_RPATH ${NCCL_LIBDIR})\n"
      << "add_executable(" << cls_ << "_main " << cls_ << "_main.cu)\n"
      << "target_link_libraries(" << cls_ << "_main PRIVATE " << cls_ << ")\n"
      << "set_target_properties(" << cls_ << "_main PROPERTIES BUILD_RPATH ${NCCL_LIBDIR})\n";
    return c.str();
  }

  std::string manifestText(const std::string& allSources) {
    nlohmann::json m;
    m["program"] = p_.name;
    m["compiler"] = std::string("coconetc ") + COCONETC_VERSION;
    m["source"] = o_.sourcePath;
    m["schedule"] = o_.schedulePath;
    m["schedule_applied"] = o_.scheduleText;
    m["arch"] = o_.arch;
    m["flags"] = {{"arch", o_.arch}, {"device_collectives", o_.deviceCollectives}};
    m["files"] = {cls_ + ".h", cls_ + ".cu", cls_ + "_main.cu", "coconet_runtime.cuh", "CMakeLists.txt"};
    if (usesDevice()) m["files"].push_back("coconet_device.cuh");
    m["libraries"] = {"lib" + cls_ + ".a", "libcoconet_" + cls_ + ".so"};
    m["c_interface"] = nlohmann::json::parse(interfaceJson());
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : allSources) h = (h ^ ch) * 1099511628211ull;
    std::ostringstream hs;
    hs << std::hex << h;
    m["sources_fnv1a64"] = hs.str();
    auto entry = [&](const std::string& kind, const std::string& name, const TensorType& t) {
      std::vector<std::string> shape;
      for (auto& d : t.shape) shape.push_back(d.str());
      return nlohmann::json{{"role", kind}, {"name", name}, {"dtype", ast::dtypeName(t.dtype)}, {"shape", shape},
                            {"layout", t.layout.str()}, {"group", t.group ? t.group->name : "uniform"}};
    };
    m["tensors"] = nlohmann::json::array();
    for (auto& s : p_.stages)
      if (s.kind == StageKind::Input) m["tensors"].push_back(entry("in", s.name, s.type));
    for (size_t i = 0; i < p_.outputs.size(); ++i)
      m["tensors"].push_back(entry("out", p_.outputNames[i], p_.stages[p_.outputs[i]].type));
    for (auto& st : p_.states) m["tensors"].push_back(entry("state", st.name, st.type));
    for (auto& prm : p_.params)
      m["parameters"].push_back({{"name", prm.name}, {"kind", prm.isSize ? "size" : ast::dtypeName(prm.dtype)},
                                 {"bound", prm.value.has_value()}});
    for (auto& f : p_.fused) m["fused"].push_back({{"name", f.name}, {"members", f.members}, {"knobs", f.knobs}});
    for (auto& o : p_.overlaps)
      m["overlaps"].push_back({{"producer", o.producer}, {"consumer", o.consumer}, {"chunks", o.chunks}, {"dim", o.dim}});
    return m.dump(2) + "\n";
  }
};

}  // namespace

std::vector<std::string> emitCuda(const Program& p, const CompileOptions& o) {
  std::vector<std::string> files;
  Emitter(p, o).run(files);
  return files;
}

}  // namespace coconet::backend
