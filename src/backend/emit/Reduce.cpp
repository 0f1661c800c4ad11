// Reductions (with the element-wise stages only they read computed inline), embedding bags and
// rowwise operations.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

void Emitter::emitBagKernel(int id, const std::string& op) {
  const Stage& s = p_.stages[id];
  const Stage& e = p_.stages[plan_.bagReduce.at(id)];
  const Stage& tab = p_.stages[e.operands[0]];
  const Stage& idx = p_.stages[e.operands[1]];
  std::string TT = storageType(tab.type.dtype), IT = storageType(idx.type.dtype), YT = storageType(s.type.dtype);
  kernels_
      << "// " << s.name << " = " << reduceKindName(s.reduce) << "(embedding(" << tab.name << ", " << idx.name << "), dim = " << s.dim
      << (s.keepdim ? ", keepdim = true" : "")
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

void Emitter::emitBagSizes(int id) {
  const Stage& s = p_.stages[id];
  const Stage& e = p_.stages[plan_.bagReduce.at(id)];
  const Stage& tab = p_.stages[e.operands[0]];
  int ix = e.operands[1];
  int ri = p_.stages[ix].type.rank();
  bool rowSliced = tab.type.group && tab.type.layout.kind == Layout::Sliced && tab.type.layout.dim == 0;
  body_ << "    const long long rows = " << shapeVar(e.operands[0]) << "[0], D = " << shapeVar(e.operands[0]) << "[1];\n"
        << "    const long long firstRow = " << (rowSliced ? sliceStart(tab.type) : "0") << ";\n"
        << "    const long long len = " << shapeVar(ix) << "[" << s.dim << "];\n    long long innerIdx = 1;\n";
  for (int k = s.dim + 1; k < ri; ++k) body_ << "    innerIdx *= " << shapeVar(ix) << "[" << k << "];\n";
  std::string count = "1.0 * static_cast<double>(" + cxx(e.type.shape[s.dim]) + ")";
  body_ << "    const double count = " << count << ";\n";
}

std::string Emitter::bagArgs(int id, const std::string& rest) const {
  const Stage& e = p_.stages[plan_.bagReduce.at(id)];
  const Stage& tab = p_.stages[e.operands[0]];
  return "(" + var(e.operands[0]) + ", " + var(e.operands[1]) + ", " + var(id) + ", len, innerIdx, D, rows, firstRow, " +
         cxx(tab.type.shape[0]) + ", errorFlag_, count, " + rest + ")";
}

void Emitter::emitBag(int id, const std::string& op) {
  emitBagKernel(id, op);
  emitBagSizes(id);
  body_ << "    k_" << id << "_" << ident(p_.stages[id].name) << "_bag<<<coconet_rt::gridFor(" << countVar(id) << "), 256, 0, stream_>>>"
        << bagArgs(id, "0, " + countVar(id) + ", 0, " + countVar(id)) << ";\n    CHECK(cudaGetLastError(), \"" << p_.stages[id].name
        << "\");\n";
}

std::string Emitter::emitReduceOp(int id) {
  const Stage& s = p_.stages[id];
  const Stage& x = p_.stages[s.operands[0]];
  // Integers sum exactly in 64 bits (wrapping, as the interpreter); their norms in double.
  const bool integer = ast::isInteger(s.type.dtype) && s.reduce != ReduceKind::Norm;
  std::string AT = s.type.dtype == DType::F64 || ast::isInteger(s.type.dtype) ? (integer ? "long long" : "double") : "float";
  const std::string op = reduceOpStruct(id);
  if (!reduceOps_.insert(id).second) return op;
  std::string init = s.reduce == ReduceKind::Max ? "-INFINITY" : s.reduce == ReduceKind::Min ? "INFINITY" : "0";
  if (AT == "long long" && s.reduce == ReduceKind::Max) init = "(-9223372036854775807LL - 1)";
  if (AT == "long long" && s.reduce == ReduceKind::Min) init = "9223372036854775807LL";
  std::string comb = s.reduce == ReduceKind::Max   ? "return b > a ? b : a;"
                     : s.reduce == ReduceKind::Min ? "return b < a ? b : a;"
                     : integer                     ? "return coconet_rt::iadd(a, b);"
                                                   : "return a + b;";
  std::string fin = integer ? (s.reduce == ReduceKind::Mean ? "return coconet_rt::idiv(r, static_cast<long long>(count));" : "return r;")
                    : s.reduce == ReduceKind::Mean ? "return static_cast<double>(static_cast<Acc>(r / count));"
                    : s.reduce == ReduceKind::Norm ? "return static_cast<double>(sqrt(r));"
                                                   : "return static_cast<double>(r);";
  kernels_ << "// " << s.name << " = " << reduceKindName(s.reduce) << "(" << x.name
           << (s.dim >= 0 ? ", dim = " + std::to_string(s.dim) : "") << (s.keepdim ? ", keepdim = true" : "") << "): accumulated in " << AT
           << "\nstruct " << op << " {\n  using Acc = " << AT << ";\n"
           << "  __device__ static Acc init() { return " << init << "; }\n"
           << "  __device__ static Acc element(Acc v) { return " << (s.reduce == ReduceKind::Norm ? "v * v" : "v") << "; }\n"
           << "  __device__ static Acc combine(Acc a, Acc b) { " << comb << " }\n"
           << "  __device__ static " << (integer ? "long long" : "double") << " finish(Acc r, double count) {\n    (void)count;\n    "
           << fin << "\n  }\n};\n\n";
  return op;
}

std::string Emitter::reduceCount(int id) const {
  const Stage& s = p_.stages[id];
  const Stage& x = p_.stages[s.operands[0]];
  std::string count = "1.0";
  for (int k = 0; k < x.type.rank(); ++k)
    if (s.dim < 0 || s.dim == k) count += " * static_cast<double>(" + cxx(x.type.shape[k]) + ")";
  return count;
}

void Emitter::emitReduce(int id) {
  const Stage& s = p_.stages[id];
  const Stage& x = p_.stages[s.operands[0]];
  std::string op = emitReduceOp(id);
  if (plan_.bagReduce.count(id)) {
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
  // The reduced elements: read from x's storage, or computed (plan_.inlineSrc).
  std::string src = std::string("coconet_rt::Ptr<") + storageType(x.type.dtype) + ">{" + var(s.operands[0]) + "}";
  if (auto is = plan_.inlineSrc.find(id); is != plan_.inlineSrc.end()) src = emitReduceSource(id, is->second);
  std::string args = "(" + src + ", " + var(id) + ", outer, len, inner, count);\n";
  b << "    const double count = " << count << ";\n    const long long outs = outer * inner;\n";
  if (auto f = plan_.foldedInto.find(id); f != plan_.foldedInto.end()) {
    const std::string blocks = foldBlocksVar(f->second);
    b << "    if (" << blocks << " > 0) {\n"
      << "      // the blocks of fused group '" << plan_.devGroups.at(f->second).name
      << "' wrote their partial results: combine them in order\n"
      << "      coconet_rt::reduce_final<" << op << "><<<1, 32, 0, stream_>>>(static_cast<const " << op << "::Acc*>(red" << id << "_.ptr), "
      << var(id) << ", 1, " << blocks << ", count);\n"
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
    << "      red" << id << "_.ensure(static_cast<size_t>(outs * parts) * sizeof(" << op << "::Acc), \"" << p_.name << "\", \"" << s.name
    << "\");\n"
    << "      auto* part = static_cast<" << op << "::Acc*>(red" << id << "_.ptr);\n"
    << "      coconet_rt::reduce_split<" << op << "><<<static_cast<int>(std::min<long long>(outs * parts, 65535)), 256, 0, stream_>>>("
    << src << ", part, outer, len, inner, parts);\n"
    << "      CHECK(cudaGetLastError(), \"" << s.name << "\");\n"
    << "      coconet_rt::reduce_final<" << op << "><<<coconet_rt::gridFor(outs), 256, 0, stream_>>>(part, " << var(id)
    << ", outs, parts, count);\n    }\n"
    << "    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
}

std::string Emitter::emitReduceSource(int id, const InlineSrc& is) {
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
           << runMembers(
                  is.chain, is.extIndex, {}, "    ",
                  [&](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[" + fastIndex(is.acc[k], k, "i", "i") + "])"; },
                  [](int) { return std::string(); })
           << "    return r" << x << ";\n  }\n};\n\n";
  emitMaps(x, is.ext);
  body_ << "    const " << sname << " src{";
  for (size_t k = 0; k < args.size(); ++k) body_ << (k ? ", " : "") << args[k];
  body_ << "};\n";
  return "src";
}

}  // namespace coconet::backend::detail
