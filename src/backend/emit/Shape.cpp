// Shape operations: permute (and transpose), concat and narrow, as kernels over each rank's block.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

void Emitter::emitPermute(int id) {
  const Stage& s = p_.stages[id];
  const Stage& xs = p_.stages[s.operands[0]];
  const int R = s.type.rank();
  const std::string T = storageType(s.type.dtype), kname = "k_" + std::to_string(id) + "_" + ident(s.name);
  std::string dims;
  for (int k = 0; k < R; ++k) dims += (k ? ", " : "") + std::to_string(s.perm[k]);
  // Output dimension k reads x's dimension perm[k]; x's dimension j has y's length at inv[j].
  std::vector<int> inv(R);
  for (int k = 0; k < R; ++k) inv[s.perm[k]] = k;
  std::ostringstream k;
  k << "// " << s.name << " = permute(" << xs.name << ", " << dims << "): this rank's block with its dimensions permuted\n"
    << "__global__ void " << kname << "(const " << T << "* __restrict__ x, " << T << "* __restrict__ y, long long n";
  for (int d = 0; d < R; ++d) k << ", long long d" << d;
  k << ") {\n  // x's strides (x's dimension j is y's dimension inv(j))\n";
  k << "  const long long xs" << R - 1 << " = 1;\n";
  for (int j = R - 2; j >= 0; --j) k << "  const long long xs" << j << " = xs" << j + 1 << " * d" << inv[j + 1] << ";\n";
  k << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
    << "    long long rem = i, off = 0;\n";
  for (int d = R - 1; d >= 0; --d) {
    k << "    off += (rem % d" << d << ") * xs" << s.perm[d] << ";\n";
    if (d > 0) k << "    rem /= d" << d << ";\n";
  }
  k << "    y[i] = x[off];\n  }\n}\n\n";
  kernels_ << k.str();
  body_ << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(" << var(s.operands[0]) << ", " << var(id) << ", " << countVar(id);
  for (int d = 0; d < R; ++d) body_ << ", " << shapeVar(id) << "[" << d << "]";
  body_ << ");\n    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
}

// concat and narrow: row copies between two tensors that differ in dimension d only. Row a (of
// the dimensions before d) of the source, `len` slabs of the dimensions after d, goes to row a
// of the destination at slab `dstAt`, from slab `srcAt`.
void Emitter::emitRowCopy(int id, const std::string& what) {
  const Stage& s = p_.stages[id];
  const int d = s.dim;
  const std::string T = storageType(s.type.dtype), kname = "k_" + std::to_string(id) + "_" + ident(s.name);
  kernels_ << "// " << s.name << " = " << what << ": rows of dimension " << d << " copied between tensors that differ there only\n"
           << "__global__ void " << kname << "(const " << T << "* __restrict__ x, " << T
           << "* __restrict__ y, long long n, long long len, long long srcRow, long long srcAt, long long dstRow, long long dstAt) {\n"
           << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
           << "    const long long a = i / len, j = i % len;\n"
           << "    y[a * dstRow + dstAt + j] = x[a * srcRow + srcAt + j];\n  }\n}\n\n";
  auto& b = body_;
  const std::string inner = "inner" + std::to_string(id);
  b << "    {\n      long long " << inner << " = 1;  // elements of the dimensions after " << d << "\n"
    << "      for (int k = " << d + 1 << "; k < " << s.type.rank() << "; ++k) " << inner << " = S_.mul(" << inner << ", " << shapeVar(id)
    << "[k]);\n";
  if (s.kind == StageKind::Concat) {
    b << "      long long at = 0;  // where the operand starts along dimension " << d << "\n";
    for (int o : s.operands) {
      b << "      if (" << countVar(o) << " > 0) {\n        " << kname << "<<<" << launch(countVar(o)) << ">>>(" << var(o) << ", "
        << var(id) << ", " << countVar(o) << ", " << shapeVar(o) << "[" << d << "] * " << inner << ", " << shapeVar(o) << "[" << d << "] * "
        << inner << ", 0, " << shapeVar(id) << "[" << d << "] * " << inner << ", at * " << inner << ");\n"
        << "        CHECK(cudaGetLastError(), \"" << s.name << "\");\n      }\n"
        << "      at += " << shapeVar(o) << "[" << d << "];\n";
    }
  } else {
    const int x = s.operands[0];
    b << "      if (" << countVar(id) << " > 0) {\n        " << kname << "<<<" << launch(countVar(id)) << ">>>(" << var(x) << ", "
      << var(id) << ", " << countVar(id) << ", " << shapeVar(id) << "[" << d << "] * " << inner << ", " << shapeVar(x) << "[" << d << "] * "
      << inner << ", " << cxx(s.start) << " * " << inner << ", " << shapeVar(id) << "[" << d << "] * " << inner << ", 0);\n"
      << "        CHECK(cudaGetLastError(), \"" << s.name << "\");\n      }\n";
  }
  b << "    }\n";
}

}  // namespace coconet::backend::detail
