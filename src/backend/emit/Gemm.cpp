// Matmuls and GEMVs as cuBLAS GEMMs, and embedding lookups.
#include "backend/CudaEmitter.h"
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include "backend/Emitter.h"
#include "support/Files.h"

namespace coconet::backend::detail {

void Emitter::emitGemm(int id) {
  // An operand with no elements (this rank's empty block of an uneven contraction dimension):
  // the product is zero.
  const Stage& st = p_.stages[id];
  body_ << "    if (" << countVar(st.operands[0]) << " == 0 || " << countVar(st.operands[1]) << " == 0) {\n"
        << "      CHECK(cudaMemsetAsync(" << var(id) << ", 0, static_cast<size_t>(" << countVar(id) << ") * sizeof("
        << storageType(st.type.dtype) << "), stream_), \"" << st.name << "\");\n    } else {\n";
  emitGemmProduct(id);
  body_ << "    }\n";
}

void Emitter::emitGemmProduct(int id) {
  const Stage& s = p_.stages[id];
  DType dt = s.type.dtype;
  bool f64 = dt == DType::F64;
  int a = s.operands[0], bop = s.operands[1];
  int ra = p_.stages[a].type.rank();
  auto& b = body_;
  // (foldableTranspose) A transposed operand reads its source's matrices as cuBLAS's op T: A's
  // batches then cannot merge into rows, nor be gathered (gatherBatchedRows), and a GEMV's
  // matrix goes to cuBLAS.
  const bool ta = readTransposed(a), tb = readTransposed(bop);
  if (s.kind == StageKind::Gemv) {
    b << "    const long long M = " << shapeVar(a) << "[0], K = " << shapeVar(a) << "[1], N = 1, batch = 1;\n"
      << "    const long long strideA = 0, strideB = 0, strideC = 0, reps = 1, stepA = 0, stepB = 0, stepC = 0, baseA = 0, baseB = 0;\n";
    if (!f64 && !ta) {
      // Memory-bound: the runtime's warp-per-row kernel where there are rows enough to keep every
      // SM's loads in flight; cuBLAS below that (its m = 1 GEMM splits K as well).
      b << "    if (M >= coconet_rt::gemvMinRows(M * K * static_cast<long long>(sizeof(*" << var(a) << ")))) {  // (bytes: the matrix)\n"
        << "      coconet_rt::gemv(" << var(a) << ", " << var(bop) << ", " << var(id) << ", M, K, stream_);\n"
        << "      CHECK(cudaGetLastError(), \"" << s.name << "\");\n"
        << "    } else {\n";
    }
  } else {
    int rb = p_.stages[bop].type.rank();
    const std::string rows = shapeVar(a) + "[" + std::to_string(ra - 2) + "]";
    b << "    const long long M = " << rows << ", K = " << shapeVar(a) << "[" << ra - 1 << "], N = " << shapeVar(bop) << "[" << rb - 1
      << "];\n"
      << "    const long long batchA = " << countVar(a) << " / (M * K), batchB = " << countVar(bop)
      << " / (K * N), batchC = " << countVar(id) << " / (M * N);\n"
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
          b << "    if (batch" << (opi == 0 ? "A" : "B") << " > batchC) { base" << (opi == 0 ? "A" : "B") << " = " << sliceStart(ct)
            << " * " << (opi == 0 ? "M * K" : "K * N") << "; batch" << (opi == 0 ? "A" : "B") << "_ = batchC; }\n";
      }
    }
    // (batchA_/batchB_: the batch counts each GEMM sees after taking the rank's slice.)
    b << (ta ? "    if (batchB_ == 1) { strideB = 0; }  // (A transposed: its batches stay batches)\n"
             : "    if (batchB_ == 1) { Mx = M * batchC; batch = 1; strideB = 0; }        // fold A's batches into its rows\n")
      << "    else if (batchA_ == 1) { strideA = 0; }\n"
      << "    else if (batchA_ == batchC && batchB_ < batchC && batchC % batchB_ == 0) {\n"
      << "      batch = batchB_; reps = batchC / batchB_; stepA = batchB_ * M * K; stepC = batchB_ * M * N;  // B repeats over A's leading "
         "batches\n"
      << "    } else if (batchB_ == batchC && batchA_ < batchC && batchC % batchA_ == 0) {\n"
      << "      batch = batchA_; reps = batchC / batchA_; stepB = batchA_ * K * N; stepC = batchA_ * M * N;\n"
      << "    } else if (batchA_ != batchC || batchB_ != batchC) throw coconet_rt::Error(\"" << p_.name << ": stage '" << s.name
      << "': batch dimensions that broadcast partially are not supported\");\n";
  }
  std::string M = s.kind == StageKind::Gemv ? "M" : "Mx";
  const bool kernel = s.kind == StageKind::Gemv && !f64 && !ta, gather = s.kind == StageKind::Matmul && !ta;
  const std::string in = kernel ? "      " : "    ";  // inside the else of the gemv kernel
  const std::string stage = "\"" + s.name + "\"";
  b << in << "const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n";
  if (gather) {
    // B repeats over A's leading batches with few rows per GEMM: A's rows gathered B-major, one
    // GEMM per B, the result's rows put back (coconet_rt::gatherBatchedRows).
    const std::string T = storageType(dt), i = std::to_string(id);
    b << "    if (stepB == 0 && coconet_rt::gatherBatchedRows(M, K, N, reps)) {\n"
      << "      bmm" << i << "_[0].ensure(static_cast<size_t>(reps * batch * M * K) * sizeof(" << T << "), \"" << p_.name << "\", " << stage
      << ");\n"
      << "      bmm" << i << "_[1].ensure(static_cast<size_t>(reps * batch * M * N) * sizeof(" << T << "), \"" << p_.name << "\", " << stage
      << ");\n"
      << "      " << T << "* ga = static_cast<" << T << "*>(bmm" << i << "_[0].ptr);\n"
      << "      " << T << "* gc = static_cast<" << T << "*>(bmm" << i << "_[1].ptr);\n"
      << "      coconet_rt::swapLeadingDims(" << var(a)
      << " + baseA, ga, reps, batch, M * K, stream_);  // [reps][batch] -> [batch][reps]\n"
      << "      CHECK(cudaGetLastError(), " << stage << ");\n"
      << "      "
      << gemmCall(dt, "reps * M", var(bop) + " + baseB", "strideB", "ga", "reps * M * K", "gc", "reps * M * N", "batch", stage, false, tb)
      << "      coconet_rt::swapLeadingDims(gc, " << var(id) << ", batch, reps, M * N, stream_);  // and back\n"
      << "      CHECK(cudaGetLastError(), " << stage << ");\n"
      << "    } else {\n";
  }
  const std::string in2 = gather ? "  " : "";
  b << in << in2 << "for (long long r = 0; r < reps; ++r)\n"
    << in << in2 << "  "
    << gemmCall(dt, M, var(bop) + " + baseB + r * stepB", "strideB", var(a) + " + baseA + r * stepA", "strideA", var(id) + " + r * stepC",
                "strideC", "batch", stage, ta, tb);
  if (gather) b << "    }\n";
  if (kernel) b << "    }\n";
}

std::string Emitter::gemmCall(DType dt, const std::string& M, const std::string& B, const std::string& strideB, const std::string& A,
                              const std::string& strideA, const std::string& C, const std::string& strideC, const std::string& batch,
                              const std::string& stage, bool ta, bool tb) const {
  // Column-major C^T = op(B^T) op(A^T): B stored [K, N] is op N with leading dimension N, stored
  // [N, K] (transposed) op T with K; A stored [M, K] op N with K, stored [K, M] op T with M.
  const std::string ty = cudaDataType(dt);
  return std::string("CHECK(cublasGemmStridedBatchedEx(blas_, ") + (tb ? "CUBLAS_OP_T" : "CUBLAS_OP_N") + ", " +
         (ta ? "CUBLAS_OP_T" : "CUBLAS_OP_N") + ", static_cast<int>(N), static_cast<int>(" + M + "), static_cast<int>(K), &alpha, " + B +
         ", " + ty + ", static_cast<int>(" + (tb ? "K" : "N") + "), " + strideB + ", " + A + ", " + ty + ", static_cast<int>(" +
         (ta ? M : "K") + "), " + strideA + ", &beta, " + C + ", " + ty + ", static_cast<int>(N), " + strideC + ", static_cast<int>(" +
         batch + "), " + (dt == DType::F64 ? "CUBLAS_COMPUTE_64F" : "CUBLAS_COMPUTE_32F") + ", CUBLAS_GEMM_DEFAULT), " + stage + ");\n";
}

void Emitter::emitEmbedding(int id) {
  const Stage& s = p_.stages[id];
  const Stage& tab = p_.stages[s.operands[0]];
  const Stage& idx = p_.stages[s.operands[1]];
  std::string T = storageType(s.type.dtype), IT = storageType(idx.type.dtype);
  std::string kname = "k_" + std::to_string(id) + "_" + ident(s.name);
  kernels_
      << "// " << s.name << " = embedding(" << tab.name << ", " << idx.name << "): rows outside this rank's shard are zero\n"
      << "__global__ void " << kname << "(const " << T << "* __restrict__ table, const " << IT << "* __restrict__ idx, " << T
      << "* __restrict__ out, long long n, long long D, long long rows, long long firstRow, long long globalRows, int* error) {\n"
      << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n * D; i += (long long)gridDim.x * blockDim.x) {\n"
      << "    const long long v = static_cast<long long>(idx[i / D]);\n"
      << "    if (v < 0 || v >= globalRows) { atomicExch(error, 1); out[i] = coconet_rt::Store<" << T << ">::from(0.0); continue; }\n"
      << "    const long long r = v - firstRow;\n"
      << "    out[i] = (r >= 0 && r < rows) ? table[r * D + i % D] : coconet_rt::Store<" << T << ">::from(0.0);\n  }\n}\n\n";
  bool rowSliced = tab.type.group && tab.type.layout.kind == Layout::Sliced && tab.type.layout.dim == 0;
  body_ << "    const long long rows = " << shapeVar(s.operands[0]) << "[0], D = " << shapeVar(s.operands[0]) << "[1];\n"
        << "    const long long firstRow = " << (rowSliced ? sliceStart(tab.type) : "0") << ";\n"
        << "    " << kname << "<<<" << launch(countVar(id)) << ">>>(" << var(s.operands[0]) << ", " << var(s.operands[1]) << ", " << var(id)
        << ", " << countVar(s.operands[1]) << ", D, rows, firstRow, " << cxx(tab.type.shape[0]) << ", errorFlag_);\n"
        << "    CHECK(cudaGetLastError(), \"" << s.name << "\");\n";
}

// The gradient of an embedding's table, deterministic: the indices (with their positions) sorted
// stably by CUB's radix sort, then each run of one index summed in position order, a thread per
// run and column (dy's columns coalesced), into a zeroed gradient. An index out of range sets the
// error flag and sorts last (after every row).
void Emitter::emitEmbeddingGrad(int id) {
  const Stage& s = p_.stages[id];
  const Stage& dy = p_.stages[s.operands[0]];
  const Stage& idx = p_.stages[s.operands[1]];
  const std::string T = storageType(s.type.dtype), DT = storageType(dy.type.dtype), IT = storageType(idx.type.dtype);
  const std::string A = s.type.dtype == DType::F64 ? "double" : "float";
  const std::string kname = "k_" + std::to_string(id) + "_" + ident(s.name), name = "\"" + s.name + "\"";
  kernels_
      << "// " << s.name << ": each index and its position, the index checked (out of range: the error flag, sorted last)\n"
      << "__global__ void " << kname << "_keys(const " << IT << "* __restrict__ idx, unsigned long long* keys, int* pos, long long n, "
      << "long long globalRows, int* error) {\n"
      << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
      << "    const long long v = static_cast<long long>(idx[i]);\n"
      << "    if (v < 0 || v >= globalRows) atomicExch(error, 1);\n"
      << "    keys[i] = (v < 0 || v >= globalRows) ? static_cast<unsigned long long>(globalRows) : static_cast<unsigned long long>(v);\n"
      << "    pos[i] = static_cast<int>(i);\n  }\n}\n\n"
      << "// " << s.name << ": a thread per run of one index (sorted) and column sums dy's rows of the run in position order\n"
      << "__global__ void " << kname << "(const unsigned long long* __restrict__ keys, const int* __restrict__ pos, const " << DT
      << "* __restrict__ dy, " << T << "* __restrict__ out, long long n, long long D, long long rows, long long firstRow) {\n"
      << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n * D; i += (long long)gridDim.x * blockDim.x) {\n"
      << "    const long long p = i / D, c = i % D;\n"
      << "    const unsigned long long k = keys[p];\n"
      << "    if (p > 0 && keys[p - 1] == k) continue;  // not the run's first\n"
      << "    const long long r = static_cast<long long>(k) - firstRow;\n"
      << "    if (r < 0 || r >= rows) continue;  // another rank's row, or out of range\n"
      << "    " << A << " acc = 0;\n"
      << "    for (long long q = p; q < n && keys[q] == k; ++q) acc += static_cast<" << A
      << ">(coconet_rt::to_f(dy[static_cast<long long>(pos[q]) * D + c]));\n"
      << "    out[r * D + c] = coconet_rt::Store<" << T << ">::from(static_cast<double>(acc));\n  }\n}\n\n";
  const bool rowSliced = s.type.group && s.type.layout.kind == Layout::Sliced && s.type.layout.dim == 0;
  const std::string buf = "sort" + std::to_string(id) + "_";
  body_ << "    const long long n = " << countVar(s.operands[1]) << ", rows = " << shapeVar(id) << "[0], D = " << shapeVar(id) << "[1];\n"
        << "    const long long firstRow = " << (rowSliced ? sliceStart(s.type) : "0") << ";\n"
        << "    const long long globalRows = " << cxx(s.type.shape[0]) << ";\n"
        << "    CHECK(cudaMemsetAsync(" << var(id) << ", 0, static_cast<size_t>(" << countVar(id) << ") * sizeof(" << T << "), stream_), "
        << name << ");\n"
        << "    if (n > 2147483647LL) throw coconet_rt::Error(\"" << p_.name << ": '" << s.name
        << "' sorts at most 2^31 - 1 indices; it has \" + std::to_string(n));\n"
        << "    if (n > 0) {\n"
        << "      int bits = 1;  // keys are at most globalRows\n"
        << "      while (bits < 64 && (1ULL << bits) <= static_cast<unsigned long long>(globalRows)) ++bits;\n"
        << "      size_t sortBytes = 0;\n"
        << "      CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, static_cast<const unsigned long long*>(nullptr),\n"
        << "            static_cast<unsigned long long*>(nullptr), static_cast<const int*>(nullptr), static_cast<int*>(nullptr), "
           "static_cast<int>(n),\n"
        << "            0, bits, stream_), " << name << ");\n"
        << "      const size_t keyBytes = (static_cast<size_t>(n) * 8 + 255) / 256 * 256, posBytes = (static_cast<size_t>(n) * 4 + 255) / "
           "256 * 256;\n"
        << "      " << buf << ".ensure(2 * keyBytes + 2 * posBytes + sortBytes, \"" << p_.name << "\", " << name << ");\n"
        << "      char* base = static_cast<char*>(" << buf << ".ptr);\n"
        << "      auto* keys = reinterpret_cast<unsigned long long*>(base);\n"
        << "      auto* keysSorted = reinterpret_cast<unsigned long long*>(base + keyBytes);\n"
        << "      auto* pos = reinterpret_cast<int*>(base + 2 * keyBytes);\n"
        << "      auto* posSorted = reinterpret_cast<int*>(base + 2 * keyBytes + posBytes);\n"
        << "      " << kname << "_keys<<<" << launch("n") << ">>>(" << var(s.operands[1]) << ", keys, pos, n, globalRows, errorFlag_);\n"
        << "      CHECK(cudaGetLastError(), " << name << ");\n"
        << "      CHECK(cub::DeviceRadixSort::SortPairs(base + 2 * keyBytes + 2 * posBytes, sortBytes, keys, keysSorted, pos, posSorted,\n"
        << "            static_cast<int>(n), 0, bits, stream_), " << name << ");\n"
        << "      " << kname << "<<<" << launch("n * D") << ">>>(keysSorted, posSorted, " << var(s.operands[0]) << ", " << var(id)
        << ", n, D, rows, firstRow);\n"
        << "      CHECK(cudaGetLastError(), " << name << ");\n"
        << "    }\n";
}

}  // namespace coconet::backend::detail
