// Shape operations: transpose, as a kernel over this rank's block.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

void Emitter::emitTranspose(int id) {
  const Stage& s = p_.stages[id];
  const Stage& xs = p_.stages[s.operands[0]];
  const int R = s.type.rank(), a = s.dim, b = s.dim1;
  const std::string T = storageType(s.type.dtype), kname = "k_" + std::to_string(id) + "_" + ident(s.name);
  // Output coordinate k reads x's dimension perm(k); x's dimensions are y's with a and b swapped.
  auto perm = [&](int k) { return k == a ? b : k == b ? a : k; };
  std::ostringstream k;
  k << "// " << s.name << " = transpose(" << xs.name << ", dim0 = " << a << ", dim1 = " << b
    << "): this rank's block with the two dimensions swapped\n"
    << "__global__ void " << kname << "(const " << T << "* __restrict__ x, " << T << "* __restrict__ y, long long n";
  for (int d = 0; d < R; ++d) k << ", long long d" << d;
  k << ") {\n  // x's strides (x's dimension j is y's dimension perm(j))\n";
  k << "  const long long xs" << R - 1 << " = 1;\n";
  for (int j = R - 2; j >= 0; --j) k << "  const long long xs" << j << " = xs" << j + 1 << " * d" << perm(j + 1) << ";\n";
  k << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
    << "    long long rem = i, off = 0;\n";
  for (int d = R - 1; d >= 0; --d) {
    k << "    off += (rem % d" << d << ") * xs" << perm(d) << ";\n";
    if (d > 0) k << "    rem /= d" << d << ";\n";
  }
  k << "    y[i] = x[off];\n  }\n}\n\n";
  kernels_ << k.str();
  body_ << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(" << var(s.operands[0]) << ", " << var(id) << ", " << countVar(id);
  for (int d = 0; d < R; ++d) body_ << ", " << shapeVar(id) << "[" << d << "]";
  body_ << ");\n    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
}

}  // namespace coconet::backend::detail
