// ---- coconet_runtime.cuh, part 5 of 6: vector access, GEMV, batched GEMM rows, overlap chunks ----
// ---- Vector access of element-wise kernels -------------------------------------------------
// V consecutive elements moved with the widest accesses that their byte count allows (16-byte
// accesses for 16-bit types at V = 8). The caller guarantees 16-byte alignment.
template <class T, int V> struct alignas(16) Vec {
  T v[V];
};
template <class T, int V> __device__ __forceinline__ void load_vec(Vec<T, V>& r, const T* p) {
  constexpr int B = static_cast<int>(sizeof(T)) * V;
  if constexpr (B % 16 == 0) {
    for (int q = 0; q < B / 16; ++q) reinterpret_cast<uint4*>(r.v)[q] = __ldg(reinterpret_cast<const uint4*>(p) + q);
  } else if constexpr (B % 8 == 0) {
    for (int q = 0; q < B / 8; ++q) reinterpret_cast<uint2*>(r.v)[q] = __ldg(reinterpret_cast<const uint2*>(p) + q);
  } else {
    for (int q = 0; q < V; ++q) r.v[q] = p[q];
  }
}
// For arrays that the same kernel also writes (a state updated in place): no read-only cache.
template <class T, int V> __device__ __forceinline__ void load_vec_rw(Vec<T, V>& r, const T* p) {
  constexpr int B = static_cast<int>(sizeof(T)) * V;
  if constexpr (B % 16 == 0) {
    for (int q = 0; q < B / 16; ++q) reinterpret_cast<uint4*>(r.v)[q] = reinterpret_cast<const uint4*>(p)[q];
  } else if constexpr (B % 8 == 0) {
    for (int q = 0; q < B / 8; ++q) reinterpret_cast<uint2*>(r.v)[q] = reinterpret_cast<const uint2*>(p)[q];
  } else {
    for (int q = 0; q < V; ++q) r.v[q] = p[q];
  }
}
template <class T, int V> __device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& r) {
  constexpr int B = static_cast<int>(sizeof(T)) * V;
  if constexpr (B % 16 == 0) {
    for (int q = 0; q < B / 16; ++q) reinterpret_cast<uint4*>(p)[q] = reinterpret_cast<const uint4*>(r.v)[q];
  } else if constexpr (B % 8 == 0) {
    for (int q = 0; q < B / 8; ++q) reinterpret_cast<uint2*>(p)[q] = reinterpret_cast<const uint2*>(r.v)[q];
  } else {
    for (int q = 0; q < V; ++q) p[q] = r.v[q];
  }
}
// Host side: may a kernel use vector accesses at element `offset` of p?
template <class T> inline bool aligned16(const T* p, long long offset) {
  return (reinterpret_cast<uintptr_t>(p + offset) & 15u) == 0;
}

// y[m] = sum over k of W[m, k] * x[k] (W row-major [M, K]), summed in f32 and rounded once, as
// cuBLAS with CUBLAS_COMPUTE_32F. A GEMV reads each weight once, so it runs at the speed of
// memory. VEC (K a multiple of 16 / sizeof(T), W and x 16-byte aligned; gemv() checks): a warp
// takes R = 2 rows at once, each lane with four 16-byte loads per row in flight (eight in all,
// streamed past the caches; x stays in them), then a warp-shuffle sum per row. Otherwise a warp
// per row, element by element. R rows per warp and U loads per row are template parameters so
// that tools/bench/gpu/micro/gemv-micro.cu can measure other counts with this same kernel.
template <class T, bool VEC, int R = VEC ? 2 : 1, int U = 4>
__global__ void __launch_bounds__(256) gemv_rows(const T* __restrict__ W, const T* __restrict__ x, T* __restrict__ y,
                                                 long long M, long long K) {
  static_assert(VEC || R == 1, "the element-by-element form takes one row per warp");
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const int lane = threadIdx.x & 31;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  for (long long m0 = ((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5) * R; m0 < M; m0 += warps * R) {
    float acc[R] = {};
    if constexpr (VEC) {
      const long long nv = K / V;
      const int rows = M - m0 < R ? static_cast<int>(M - m0) : R;
      long long j = lane;
      for (; j + (U - 1) * 32 < nv; j += U * 32) {
        uint4 a[R][U];
        Vec<T, V> b[U];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int u = 0; u < U; ++u)
            a[r][u] = r < rows ? __ldcs(reinterpret_cast<const uint4*>(W + (m0 + r) * K) + j + u * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; ++u) load_vec(b[u], x + (j + u * 32) * V);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const T* av = reinterpret_cast<const T*>(&a[r][u]);
#pragma unroll
            for (int e = 0; e < V; ++e) acc[r] += to_f(av[e]) * to_f(b[u].v[e]);
          }
      }
      for (; j < nv; j += 32) {
        Vec<T, V> b;
        load_vec(b, x + j * V);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (r >= rows) break;
          const uint4 a = __ldcs(reinterpret_cast<const uint4*>(W + (m0 + r) * K) + j);
          const T* av = reinterpret_cast<const T*>(&a);
#pragma unroll
          for (int e = 0; e < V; ++e) acc[r] += to_f(av[e]) * to_f(b.v[e]);
        }
      }
    } else {
      const T* w = W + m0 * K;
      for (long long k = lane; k < K; k += 32) acc[0] += to_f(w[k]) * to_f(x[k]);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
      if (lane == 0 && m0 + r < M) y[m0 + r] = Store<T>::from(acc[r]);
    }
  }
}
// Host side: p moved by `elems` elements, either way, computed on the address (the result may lie
// outside p's allocation; whoever uses it indexes back into range). An all_to_all pipeline step
// writes block b of a value at element b * block of its base: into another rank's window slot,
// the base is the slot moved back by b blocks.
template <class T> inline T* shifted(T* p, long long elems) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(elems * static_cast<long long>(sizeof(T))));
}

// Blocks for a grid-stride launch over n items: enough to fill the GPU, at most 65535.
inline int gridFor(long long n, int threads = 256) {
  long long b = (n + threads - 1) / threads;
  return static_cast<int>(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

// Host side: y = W x by gemv_rows on `stream`, its vector form where K and the alignment of W and
// x allow. The caller checks cudaGetLastError().
template <class T> inline void gemv(const T* W, const T* x, T* y, long long M, long long K, cudaStream_t stream) {
  constexpr long long V = 16 / static_cast<long long>(sizeof(T));
  if (K % V == 0 && aligned16(W, 0) && aligned16(x, 0))
    gemv_rows<T, true><<<gridFor((M + 1) / 2 * 32), 256, 0, stream>>>(W, x, y, M, K);
  else
    gemv_rows<T, false><<<gridFor(M * 32), 256, 0, stream>>>(W, x, y, M, K);
}

// A batched matmul whose second operand is indexed by A's inner batch dimension only (an
// expert's weights, the same for every source rank's block of an MoE layer: A [R][X][M][K] times
// B [X][K][N]) reads each B R times when it runs as R batched GEMMs of M rows. Where those GEMMs
// are bound by reading B (few rows: M < kGatherBatchMaxRows, about the ridge point of an H100's
// or H200's f16 tensor cores in rows per weight) and B's re-reads outweigh two copies of the rows
// (A's in, the result's out), the rows are gathered B-major first: one GEMM of R M rows per B.
// (PyTorch's MoE layers do the same copy: tools/bench/gpu/workloads/moe.py's unfused row.) On 2
// and 4 H200 (X = 2, H = 4096, F = 8192) it was 17-50% faster up to 128 rows and 3-11% slower
// from 256.
// The bound is the tuning table's gather_batch_max_rows, which coconetc tune measures (0: never).
inline bool gatherBatchedRows(long long M, long long K, long long N, long long R) {
  return R > 1 && M < kGatherBatchMaxRows && (R - 1) * K * N > 2 * R * M * (K + N);
}
// [R][X][L] -> [X][R][L], L elements contiguous: 16-byte units where L and both pointers allow.
template <class U>
__global__ void swapLeading(const U* __restrict__ in, U* __restrict__ out, long long R, long long X, long long L) {
  const long long n = R * X * L;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long l = i % L, rx = i / L;
    out[((rx % X) * R + rx / X) * L + l] = in[i];
  }
}
template <class T> inline void swapLeadingDims(const T* in, T* out, long long R, long long X, long long L, cudaStream_t stream) {
  if ((L * static_cast<long long>(sizeof(T))) % 16 == 0 && aligned16(in, 0) && aligned16(out, 0)) {
    const long long Lu = L * static_cast<long long>(sizeof(T)) / 16;
    swapLeading<int4><<<gridFor(R * X * Lu), 256, 0, stream>>>(reinterpret_cast<const int4*>(in), reinterpret_cast<int4*>(out), R, X, Lu);
  } else {
    swapLeading<T><<<gridFor(R * X * L), 256, 0, stream>>>(in, out, R, X, L);
  }
}

// The chunks of an overlapped matmul whose rows a reduce_scatter scatters (the Megatron layer):
// the largest count up to the schedule's that divides this rank's rows (rowsPerRank; so any row
// count runs, down to one chunk) and leaves each chunk's copy to a peer, rows / count x rowBytes,
// at least minCopyBytes; one if none does. Where copy engines move the chunks minCopyBytes is
// kCeMinCopyBytes (0 with tune(f, merge = never), and for NCCL calls): each copy costs a copy
// engine a fixed start (measured on 4 H200 with tools/bench/gpu/micro/ce-allreduce-micro.cu:
// pushes to the peers in turn moved 164 GB/s per GPU at 4 MiB per peer, 385 at 256 MiB; Megatron's
// row layer ran slower in chunks of 4 MiB per peer than in half as many, faster in chunks of 8).
inline long long overlapChunks(long long scheduled, long long rowsPerRank, long long rowBytes, long long minCopyBytes) {
  for (long long c = scheduled; c > 1; --c)
    if (rowsPerRank % c == 0 && rowsPerRank / c * rowBytes >= minCopyBytes) return c;
  return 1;
}
// The copy-engine overlap's chunks where they merge (overlapChunks with kCeMinCopyBytes), and on
// more than two ranks one chunk while this rank's whole block to a peer, rowsPerRank x rowBytes,
// is under oneChunkBelowPeerBytes(ranks) (0 on two ranks): there the GEMM, then the group's one-chunk kernel (which
// pushes the slices itself) beat the GEMM in 2 or 3 chunks with copy-engine copies of 8-12 MiB.
// Measured with Megatron's layer on 4 H200: one chunk up to 5% faster or level from 16 to 24 MiB
// per peer, 4 chunks ahead from 32 MiB; on 2 H200 2 chunks beat one (6% at 16 MiB per peer), so
// on two ranks the chunks stay.
inline long long mergedOverlapChunks(long long scheduled, long long rowsPerRank, long long rowBytes, long long ranks) {
  if (rowsPerRank * rowBytes < oneChunkBelowPeerBytes(ranks)) return 1;
  return overlapChunks(scheduled, rowsPerRank, rowBytes, kCeMinCopyBytes);
}

