// softmax, layernorm and rmsnorm over the last dimension: the kernel with the row in registers,
// the ones for longer rows, and the host's choice between them.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

std::string Emitter::epsCheck(const Stage& s) const {
  if (s.eps.param.empty()) return "";
  return "    coconet_rt::checkPositiveScalar(" + scalarValue(s.eps) + ", \"" + p_.name + "\", \"" + s.name + "\", \"eps\", \"" +
         s.eps.param + "\");\n";
}

RowwiseKernel Emitter::rowwiseKernel(int id) const {
  const Stage& s = p_.stages[id];
  RowwiseKernel k;
  k.id = id;
  k.softmax = s.kind == StageKind::Softmax;
  k.rms = s.kind == StageKind::Rmsnorm;
  k.scaled = s.operands.size() >= 2;   // gamma
  k.shifted = s.operands.size() == 3;  // beta
  const DType xdt = p_.stages[s.operands[0]].type.dtype;
  k.T = storageType(s.type.dtype);
  k.XT = storageType(xdt);
  k.GT = k.scaled ? storageType(p_.stages[s.operands[1]].type.dtype) : "float";
  k.BT = k.shifted ? storageType(p_.stages[s.operands[2]].type.dtype) : "float";
  bool f64 = s.type.dtype == DType::F64;
  for (int o : s.operands) f64 = f64 || p_.stages[o].type.dtype == DType::F64;
  k.A = f64 ? "double" : "float";  // accumulation, as the interpreter
  k.name = "k_" + std::to_string(id) + "_" + ident(s.name);
  k.params = "(const " + k.XT + "* __restrict__ x, " + k.T + "* __restrict__ y, const " + k.GT + "* __restrict__ gamma, const " + k.BT +
             "* __restrict__ beta, long long rows, long long n, " + k.A + " eps";
  k.V = std::min(8, 16 / dtypeBytes(xdt));  // packs of 16 bytes of x (at most 8 elements)
  // At most 64 registers (two blocks of 512 threads an SM) where the kernel fits them without
  // spilling (ptxas, every element type: float statistics of elements of 2 or 4 bytes). Layer
  // norm's f16 kernel took 103 otherwise, four blocks of 128 threads an SM: 1.2-1.4x the time at
  // H = 4096-12288. Double statistics, bytes and 8-byte integers spill under it.
  const int xBytes = dtypeBytes(xdt);
  k.minBlocks = !f64 && (xBytes == 2 || xBytes == 4) ? 2 : 1;
  k.stats = std::string(k.softmax ? "coconet_rt::MaxSumT<" : k.rms ? "coconet_rt::SumSqT<" : "coconet_rt::WelfordT<") + k.A + ">";
  return k;
}

void Emitter::emitRowwise(int id) {
  const RowwiseKernel k = rowwiseKernel(id);
  emitRowwiseInRegisters(k);
  emitRowwiseLong(k);
  emitRowwiseSplit(k);
  emitRowwiseLaunch(k);
}

void Emitter::emitRowwiseInRegisters(const RowwiseKernel& k) {
  const bool softmax = k.softmax, rms = k.rms, scaled = k.scaled, shifted = k.shifted;
  const std::string &T = k.T, &XT = k.XT, &A = k.A, &kname = k.name, &params = k.params;
  const Stage& s = p_.stages[k.id];
  // The row in registers: R threads a row, each keeping up to 8 packs of V elements as stored.
  kernels_ << "// " << s.name << ": " << stageKindName(s.kind) << " over the last dimension. Rows of up to 4096 packs of 16 bytes\n"
           << "// (or 8192 single elements where packs do not fit the row): a group of R threads a row (the fewest: a power of\n"
           << "// two up to 128, then a multiple of 32 up to 512) keeps it in registers as stored, up to 8 packs a thread, so\n"
           << "// the row is read once; each pass converts; the statistics in " << A << " ("
           << (softmax ? "the maximum, then the sum of exp(x - max)"
               : rms   ? "the sum of squares"
                       : "the mean, then the sum of squared deviations")
           << ")\n// S: the streaming instance (taken where coconet_rt::streamRows says): x loaded evict_first, y stored .cs\n"
           << "template <int V, bool S>\n__global__ void __launch_bounds__(512"
           << (k.minBlocks > 1 ? ", " + std::to_string(k.minBlocks) : "") << ") " << kname << "_reg" << params << ", int R) {\n"
           << "  constexpr int K = V == 1 ? 16 : 8;  // packs a thread keeps (single elements: their addresses take registers)\n"
           << "  __shared__ " << A << " sh[32];\n  (void)gamma; (void)beta; (void)eps;\n"
           << "  const int rpb = blockDim.x / R, sub = threadIdx.x / R, t = threadIdx.x % R;\n"
           << "  const long long units = n / V;\n"
           << "  const unsigned long long pol = S ? coconet_rt::evictFirstPolicy() : 0ull;\n  (void)pol;\n"
           << "  // Every thread of the block takes every step (the combines synchronize); rows past the end load nothing.\n"
           << "  for (long long base = static_cast<long long>(blockIdx.x) * rpb; base < rows; base += static_cast<long long>(gridDim.x) * "
              "rpb) {\n"
           << "    const long long row = base + sub;\n"
           << "    const " << XT << "* xr = x + row * n;\n    " << T << "* yr = y + row * n;\n"
           << "    // this thread's packs: t, t + R, ... below units (kn of them)\n"
           << "    const int kn = row < rows && t < units ? static_cast<int>((units - t + R - 1) / R) : 0;\n"
           << "    coconet_rt::Pack<" << XT << ", V> v[K];  // as stored: 16-bit elements take half a register each\n"
           << "#pragma unroll\n    for (int k = 0; k < K; ++k) {\n"
           << "      if (k >= kn) continue;\n"
           << "      const " << XT << "* p = xr + (t + static_cast<long long>(k) * R) * V;\n"
           << "      if constexpr (S) v[k] = coconet_rt::loadPackEvictFirst<V>(p, pol);\n"
           << "      else v[k] = coconet_rt::loadPack<V>(p);\n    }\n";
  auto each = [&](const std::string& body) {
    return "#pragma unroll\n    for (int k = 0; k < K; ++k) {\n      if (k >= kn) continue;\n      " + A +
           " xs[V];\n      coconet_rt::unpack(v[k], xs);\n#pragma unroll\n      for (int j = 0; j < V; ++j) {\n"
           "        const " +
           A + " e = xs[j];\n        " + body + "\n      }\n    }\n";
  };
  const std::string sum = "coconet_rt::groupCombine<coconet_rt::SumOp<" + A + ">>";
  if (softmax) {
    // The maximum from the packs as stored (coconet_rt::packMax: 16-bit floats in pairs, converted once).
    kernels_ << "    " << A
             << " m = -INFINITY;\n#pragma unroll\n    for (int k = 0; k < K; ++k) {\n      if (k < kn) m = coconet_rt::packMax(v[k], m);\n "
                "   }\n"
             << "    m = coconet_rt::groupCombine<coconet_rt::MaxOp<" << A << ">>(m, R, sh);\n"
             << "    " << A << " s = 0;\n"
             << each("s += coconet_rt::exp_for<" + T + ">(e - m);") << "    const " << A << " rs = " << A << "(1) / " << sum
             << "(s, R, sh);  // one division a row\n";
  } else if (rms) {
    kernels_ << "    " << A << " q = 0;\n"
             << each("q += e * e;") << "    const " << A << " inv = " << A << "(1) / coconet_rt::acc_sqrt(" << sum
             << "(q, R, sh) / static_cast<" << A << ">(n) + eps);\n";
  } else {
    kernels_ << "    " << A << " s = 0;\n"
             << each("s += e;") << "    const " << A << " mean = " << sum << "(s, R, sh) / static_cast<" << A << ">(n);\n"
             << "    " << A << " q = 0;\n"
             << each("const " + A + " d = e - mean;\n          q += d * d;") << "    const " << A << " inv = " << A
             << "(1) / coconet_rt::acc_sqrt(" << sum << "(q, R, sh) / static_cast<" << A << ">(n) + eps);\n";
  }
  kernels_ << "#pragma unroll\n    for (int k = 0; k < K; ++k) {\n      if (k >= kn) continue;\n"
           << "      const long long u = t + static_cast<long long>(k) * R;\n"
           << "      " << A << " xs[V];\n      coconet_rt::unpack(v[k], xs);\n"
           << (scaled ? "      " + A + " gs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(gamma + u * V), gs);\n" : "")
           << (shifted ? "      " + A + " bs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(beta + u * V), bs);\n" : "") << "      "
           << A << " o[V];\n#pragma unroll\n      for (int j = 0; j < V; ++j) {\n";
  kernels_ << "        const " << A << " e = xs[j];\n";
  if (softmax)
    kernels_ << "        const " << A << " w = coconet_rt::exp_for<" << T << ">(e - m) * rs;\n";
  else if (rms)
    kernels_ << "        " << A << " w = e * inv;\n" << (scaled ? "        w = w * gs[j];\n" : "");
  else
    kernels_ << "        " << A << " w = (e - mean) * inv;\n" << (shifted ? "        w = w * gs[j] + bs[j];\n" : "");
  kernels_ << "        o[j] = w;\n      }\n"
           << "      coconet_rt::storeRounded<" << T << ", S>(yr + u * V, o);\n    }\n  }\n}\n\n";
}

std::string Emitter::rowwiseWritePass(const RowwiseKernel& k, const std::string& first, const std::string& end) const {
  const std::string &T = k.T, &A = k.A;
  std::ostringstream o;
  if (k.softmax)
    o << "    const " << A << " rs = " << A << "(1) / st.s;  // one division a row\n";
  else if (k.rms)
    o << "    const " << A << " inv = " << A << "(1) / coconet_rt::acc_sqrt(st.s / static_cast<" << A << ">(n) + eps);\n";
  else
    o << "    const " << A << " mean = st.mean, inv = " << A << "(1) / coconet_rt::acc_sqrt(st.m2 / static_cast<" << A << ">(n) + eps);\n";
  o << "#pragma unroll 4\n    for (long long u = " << first << "; u < " << end << "; u += blockDim.x) {\n"
    << "      " << A << " xs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(xr + u * V), xs);\n"
    << (k.scaled ? "      " + A + " gs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(gamma + u * V), gs);\n" : "")
    << (k.shifted ? "      " + A + " bs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(beta + u * V), bs);\n" : "") << "      " << A
    << " o[V];\n#pragma unroll\n      for (int j = 0; j < V; ++j) {\n";
  if (k.softmax)
    o << "        o[j] = coconet_rt::exp_for<" << T << ">(xs[j] - st.m) * rs;\n";
  else if (k.rms)
    o << "        o[j] = xs[j] * inv" << (k.scaled ? " * gs[j]" : "") << ";\n";
  else
    o << "        o[j] = (xs[j] - mean) * inv" << (k.shifted ? " * gs[j] + bs[j]" : "") << ";\n";
  o << "      }\n      coconet_rt::storeRounded<" << T << ">(yr + u * V, o);\n    }\n";
  return o.str();
}

// The statistics of units (packs of V) [first, end) of row xr, step blockDim.x, into `st`.
std::string Emitter::rowwiseStatsPass(const RowwiseKernel& k, const std::string& first, const std::string& end) const {
  // Unrolled by 4: each thread keeps up to 4 loads in flight (the passes run few blocks an SM where rows are split).
  return "    " + k.stats + " st;\n#pragma unroll 4\n    for (long long u = " + first + "; u < " + end + "; u += blockDim.x) {\n      " +
         k.A + " xs[V];\n      coconet_rt::unpack(coconet_rt::loadPack<V>(xr + u * V), xs);\n      st.template addPack<" + k.T +
         ">(xs);\n    }\n    st = coconet_rt::blockCombine(st, sh);\n";
}

void Emitter::emitRowwiseLong(const RowwiseKernel& k) {
  const std::string &T = k.T, &XT = k.XT, &kname = k.name, &stats = k.stats;
  const Stage& s = p_.stages[k.id];
  // Longer rows: one block a row, in packs of V elements; the row's statistics in one pass
  // (running maximum and sum, sum of squares, or Welford by packs), then one pass that writes
  // (reading the row again).
  kernels_ << "// " << s.name << " with longer rows: one block a row in packs of V, the statistics in one pass, then one pass that writes\n"
           << "template <int V>\n__global__ void " << kname << "_long" << k.params << ") {\n"
           << "  __shared__ " << stats << " sh[32];\n"
           << "  (void)gamma; (void)beta; (void)eps;\n"
           << "  const long long units = n / V;\n"
           << "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
           << "    const " << XT << "* xr = x + row * n;\n    " << T << "* yr = y + row * n;\n"
           << rowwiseStatsPass(k, "threadIdx.x", "units") << rowwiseWritePass(k, "threadIdx.x", "units") << "  }\n}\n\n";
}

void Emitter::emitRowwiseSplit(const RowwiseKernel& k) {
  const std::string &T = k.T, &XT = k.XT, &kname = k.name, &stats = k.stats;
  const Stage& s = p_.stages[k.id];
  // Rows too long for registers and too few to give every SM blocks: each row in `parts` parts of
  // C packs, a block a part. _split_stats writes each part's statistics; in _split_write the first
  // warp of every block combines its row's parts (lane l those l, l + 32, ... in order, then the
  // lanes in a fixed tree: deterministic, the result from lane 0) and the block writes its part.
  const std::string range =
      "    const long long row = b / parts, lo = (b % parts) * C, hi = lo + C < units ? lo + C : units;\n"
      "    const " +
      XT + "* xr = x + row * n;\n";
  kernels_ << "// " << s.name << " with few rows too long for registers: parts of C packs over blocks (coconet_rt::rowSplitParts),\n"
           << "// each part's statistics in one pass; then each block combines its row's parts in order and writes its part\n"
           << "template <int V>\n__global__ void " << kname << "_split_stats(const " << XT << "* __restrict__ x, " << stats
           << "* __restrict__ part, long long rows, long long n, long long C, long long parts) {\n"
           << "  __shared__ " << stats << " sh[32];\n"
           << "  const long long units = n / V;\n"
           << "  for (long long b = blockIdx.x; b < rows * parts; b += gridDim.x) {\n"
           << range << rowwiseStatsPass(k, "lo + threadIdx.x", "hi") << "    if (threadIdx.x == 0) part[b] = st;\n  }\n}\n\n"
           << "template <int V>\n__global__ void " << kname << "_split_write" << k.params << ", const " << stats
           << "* __restrict__ part, long long C, long long parts) {\n"
           << "  __shared__ " << stats << " row_st[1];\n"
           << "  (void)gamma; (void)beta; (void)eps;\n"
           << "  const long long units = n / V;\n"
           << "  for (long long b = blockIdx.x; b < rows * parts; b += gridDim.x) {\n"
           << range << "    " << T << "* yr = y + row * n;\n"
           << "    if (threadIdx.x < 32) {\n      " << stats << " c;\n"
           << "      for (long long q = threadIdx.x; q < parts; q += 32) c = " << stats << "::combine(c, part[row * parts + q]);\n"
           << "      for (int lane = 16; lane > 0; lane /= 2) c = " << stats << "::combine(c, c.shfl(lane));\n"
           << "      if (threadIdx.x == 0) row_st[0] = c;\n    }\n    __syncthreads();\n"
           << "    const " << stats << " st = row_st[0];\n    __syncthreads();\n"
           << rowwiseWritePass(k, "lo + threadIdx.x", "hi") << "  }\n}\n\n";
}

void Emitter::emitRowwiseLaunch(const RowwiseKernel& k) {
  const int id = k.id, V = k.V;
  const Stage& s = p_.stages[id];
  const bool scaled = k.scaled, shifted = k.shifted;
  const std::string &T = k.T, &XT = k.XT, &GT = k.GT, &BT = k.BT, &A = k.A, &kname = k.name;
  int r = s.type.rank();
  std::string eps = scalarValue(s.eps);
  body_ << epsCheck(s);
  // Packs of V where the row length and every pointer allow.
  const std::string gp = scaled ? var(s.operands[1]) : "static_cast<const float*>(nullptr)";
  const std::string bp = shifted ? var(s.operands[2]) : "static_cast<const float*>(nullptr)";
  const std::string args =
      "(" + var(s.operands[0]) + ", " + var(id) + ", " + gp + ", " + bp + ", rows, n, static_cast<" + A + ">(" + eps + ")";
  std::string aligned = "coconet_rt::packAligned(" + var(s.operands[0]) + ", " + std::to_string(V) + " * sizeof(" + XT +
                        ")) && coconet_rt::packAligned(" + var(id) + ", " + std::to_string(V) + " * sizeof(" + T + "))";
  if (scaled) aligned += " && coconet_rt::packAligned(" + gp + ", " + std::to_string(V) + " * sizeof(" + GT + "))";
  if (shifted) aligned += " && coconet_rt::packAligned(" + bp + ", " + std::to_string(V) + " * sizeof(" + BT + "))";
  // Each kernel is a template over the pack: V elements where `packed`, else single ones.
  // (`more`: further template arguments; `pad`: the lines' indentation.)
  auto launch = [&](const std::string& kernel, const std::string& config, const std::string& kargs, const std::string& more = "",
                    const std::string& pad = "      ") {
    return pad + "if (packed) " + kname + kernel + "<" + std::to_string(V) + more + "><<<" + config + ", 0, stream_>>>" + kargs + ";\n" +
           pad + "else " + kname + kernel + "<1" + more + "><<<" + config + ", 0, stream_>>>" + kargs + ";\n";
  };
  body_ << "    const long long n = " << shapeVar(id) << "[" << (r - 1) << "], rows = " << countVar(id) << " / n;\n"
        << "    const bool packed = n % " << V << " == 0 && " << aligned << ";\n"
        << "    const long long bytes = rows * n * static_cast<long long>(sizeof(" << XT << "));  // the rows' input (the table reads)\n"
        << "    const int V = packed ? " << V
        << " : 1, R = coconet_rt::rowThreads(n / V, packed ? 8 : 16, coconet_rt::rowMaxPacks(bytes), coconet_rt::rowLong(bytes));\n"
        << "    if (R > 0) {\n"
        << "      const int threads = R < 128 ? 128 : R;\n"
        << "      const long long groups = (rows + threads / R - 1) / (threads / R);\n"
        << "      const int blocks = static_cast<int>(std::min<long long>(groups, 1 << 20));\n"
        << "      const bool stream = coconet_rt::streamRows(" << (k.softmax ? "false" : "true")
        << ", rows * n * static_cast<long long>(sizeof(" << XT << ") + sizeof(" << T << ")), \"" << p_.name << "\", \"" << s.name
        << "\");\n"
        << "      if (stream) {\n"
        << launch("_reg", "blocks, threads", args + ", R)", ", true", "        ") << "      } else {\n"
        << launch("_reg", "blocks, threads", args + ", R)", ", false", "        ") << "      }\n"
        << "    } else if (const long long parts0 = coconet_rt::rowSplitParts(rows, n, bytes, \"" << p_.name << "\", \"" << s.name
        << "\"); parts0 > 1) {\n"
        << "      const long long units = n / V, C = (units + parts0 - 1) / parts0, parts = (units + C - 1) / C;  // C packs a part\n"
        << "      rows" << id << "_.ensure(static_cast<size_t>(rows * parts) * sizeof(" << k.stats << "), \"" << p_.name << "\", \""
        << s.name << "\");\n"
        << "      auto* part = static_cast<" << k.stats << "*>(rows" << id << "_.ptr);\n"
        << "      const int blocks = static_cast<int>(std::min<long long>(rows * parts, 65535));\n"
        << launch("_split_stats", "blocks, 256", "(" + var(s.operands[0]) + ", part, rows, n, C, parts)")
        << "      CHECK(cudaGetLastError(), \"" << s.name << "\");\n"
        << launch("_split_write", "blocks, 256", args + ", part, C, parts)") << "    } else {\n"
        << "      const int blocks = static_cast<int>(std::min<long long>(rows, 65535));\n"
        << launch("_long", "blocks, 256", args + ")") << "    }\n    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
}

}  // namespace coconet::backend::detail
