// ---- coconet_runtime.cuh, part 3 of 6: row statistics and row-wise kernels ----
// ---- One-pass row statistics (softmax, layernorm, rmsnorm) ----------------------------------
// Softmax's running maximum and sum of exp(x - max), Welford's count, mean and sum of squared
// deviations, the sum of squares: each element is read once for the statistics (a pack at a
// time, addPack), and partial results of threads combine exactly like those of packs.
// A is the accumulation type: float, or double for f64 rows (as the interpreter computes).
__host__ __device__ inline float acc_exp(float x) { return expf(x); }
__host__ __device__ inline double acc_exp(double x) { return exp(x); }
__device__ inline float acc_sqrt(float x) { return sqrtf(x); }
__device__ inline double acc_sqrt(double x) { return sqrt(x); }
// exp of a value whose result is stored as Out. Where Out keeps at most 11 significant bits (f16,
// bf16), exp2f(x * log2(e)): one product and MUFU.EX2 (exp2f errs by at most 2 ulp of float, the
// rounded product by |x| * 2^-24 * ln 2 relatively: under 5e-6 wherever exp(x) is not 0 in float,
// against 2^-11 of the stored result), where expf takes 8 instructions; wider results keep expf.
// For f16 results on the GPU, ex2.approx.ftz: the same MUFU.EX2 without exp2f's handling of
// results below 2^-126 (a compare, a halving and a squaring around it). Flushing them is exact
// there: softmax multiplies an exp by 1 / sum (sum >= 1, the maximum's own term) and an f16 result
// under 2^-25 rounds to 0, and a term under 2^-126 does not move a float sum >= 1. bf16, with
// float's exponent range, keeps exp2f (its subnormals reach 2^-133).
template <class Out> __host__ __device__ inline float exp_for(float x) {
  if constexpr (std::is_same<Out, __half>::value) {
#ifdef __CUDA_ARCH__
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
    return r;
#else
    return exp2f(x * 1.4426950408889634f);
#endif
  } else if constexpr (sizeof(Out) <= 2) {
    return exp2f(x * 1.4426950408889634f);
  } else {
    return expf(x);
  }
}
template <class Out> __host__ __device__ inline double exp_for(double x) { return exp(x); }
template <class A> struct MaxSumT {
  A m = -INFINITY, s = 0;
  // A pack of V elements: its maximum first, then one rescale and V exps (exp_for<Out>: the
  // stored result's precision), not a branch and an exp per element.
  template <class Out, int V> __host__ __device__ void addPack(const A (&x)[V]) {
    A pm = x[0];
#pragma unroll
    for (int j = 1; j < V; ++j) pm = x[j] > pm ? x[j] : pm;
    if (pm == -INFINITY) return;
    if (pm > m) {
      s = s == A(0) ? A(0) : s * exp_for<Out>(m - pm);
      m = pm;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) s += exp_for<Out>(x[j] - m);
  }
  __host__ __device__ static MaxSumT combine(MaxSumT a, MaxSumT b) {
    MaxSumT r;
    r.m = a.m > b.m ? a.m : b.m;
    if (r.m == -INFINITY) return r;
    r.s = (a.s == A(0) ? A(0) : a.s * acc_exp(a.m - r.m)) + (b.s == A(0) ? A(0) : b.s * acc_exp(b.m - r.m));
    return r;
  }
  __device__ MaxSumT shfl(int lane) const {
    MaxSumT r;
    r.m = __shfl_xor_sync(0xffffffffu, m, lane);
    r.s = __shfl_xor_sync(0xffffffffu, s, lane);
    return r;
  }
};
template <class A> struct WelfordT {
  A n = 0, mean = 0, m2 = 0;
  // A pack of V elements: its own mean and squared deviations (one division), then combined.
  template <class Out, int V> __host__ __device__ void addPack(const A (&x)[V]) {
    A sum = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) sum += x[j];
    WelfordT p;
    p.n = A(V);
    p.mean = sum / A(V);
#pragma unroll
    for (int j = 0; j < V; ++j) p.m2 += (x[j] - p.mean) * (x[j] - p.mean);
    *this = combine(*this, p);
  }
  __host__ __device__ static WelfordT combine(WelfordT a, WelfordT b) {
    if (b.n == A(0)) return a;
    if (a.n == A(0)) return b;
    WelfordT r;
    r.n = a.n + b.n;
    const A d = b.mean - a.mean;
    r.mean = a.mean + d * (b.n / r.n);
    r.m2 = a.m2 + b.m2 + d * d * (a.n * (b.n / r.n));
    return r;
  }
  __device__ WelfordT shfl(int lane) const {
    WelfordT r;
    r.n = __shfl_xor_sync(0xffffffffu, n, lane);
    r.mean = __shfl_xor_sync(0xffffffffu, mean, lane);
    r.m2 = __shfl_xor_sync(0xffffffffu, m2, lane);
    return r;
  }
};
// rmsnorm's sum of squares.
template <class A> struct SumSqT {
  A s = 0;
  template <class Out, int V> __host__ __device__ void addPack(const A (&x)[V]) {
#pragma unroll
    for (int j = 0; j < V; ++j) s += x[j] * x[j];
  }
  __host__ __device__ static SumSqT combine(SumSqT a, SumSqT b) { return SumSqT{a.s + b.s}; }
  __device__ SumSqT shfl(int lane) const { return SumSqT{__shfl_xor_sync(0xffffffffu, s, lane)}; }
};
// Combines every thread's value of a block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `sh` holds 32 values.
template <class T> __device__ T blockCombine(T v, T* sh) {
  for (int lane = 16; lane > 0; lane /= 2) v = T::combine(v, v.shfl(lane));
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) sh[warp] = v;
  __syncthreads();
  T r = sh[0];
  for (int w = 1; w < warps; ++w) r = T::combine(r, sh[w]);
  __syncthreads();
  return r;
}

// ---- Row-wise kernels with the row in registers -------------------------------------------
// A row of a softmax, layernorm or rmsnorm is held by a group of R threads (R a power of two,
// groups of consecutive threads), each keeping its elements in registers between the passes
// over the row: a row is read from memory once. Elements move in packs of V (16 bytes where the
// row length and the pointers allow).
template <class T, int V> struct alignas(sizeof(T) * V) Pack {
  T e[V];
};
// Whole packs move as one access of their size: stores through __stwb (a plain store, write-back),
// since the compiler split packs of 16-bit elements, and even uint4 stores after unrolling, into
// 2- and 4-byte stores.
// (32-byte packs, of floats beside 8 one-byte elements, move as two words of 16.)
template <size_t B> struct Word;
template <> struct Word<1> { using type = unsigned char; };
template <> struct Word<2> { using type = unsigned short; };
template <> struct Word<4> { using type = unsigned; };
template <> struct Word<8> { using type = uint2; };
template <> struct Word<16> { using type = uint4; };
template <> struct Word<32> { struct type { uint4 a, b; }; };
// (Streaming: st.global.cs instead, evict first: see "Streaming rows" below; 1- and 2-byte
// words are stored plainly either way.)
template <bool Streaming, class W> __device__ __forceinline__ void storeWordAs(W* p, W v) {
  if constexpr (Streaming) __stcs(p, v);
  else __stwb(p, v);
}
template <bool Streaming = false> __device__ __forceinline__ void storeWord(unsigned char* p, unsigned char v) { *p = v; }
template <bool Streaming = false> __device__ __forceinline__ void storeWord(unsigned short* p, unsigned short v) { *p = v; }
template <bool Streaming = false> __device__ __forceinline__ void storeWord(unsigned* p, unsigned v) { storeWordAs<Streaming>(p, v); }
template <bool Streaming = false> __device__ __forceinline__ void storeWord(uint2* p, uint2 v) { storeWordAs<Streaming>(p, v); }
template <bool Streaming = false> __device__ __forceinline__ void storeWord(uint4* p, uint4 v) { storeWordAs<Streaming>(p, v); }
template <bool Streaming = false> __device__ __forceinline__ void storeWord(Word<32>::type* p, Word<32>::type v) {
  storeWordAs<Streaming>(&p->a, v.a);
  storeWordAs<Streaming>(&p->b, v.b);
}
template <int V, class T> __device__ __forceinline__ Pack<T, V> loadPack(const T* p) {
  using W = typename Word<sizeof(Pack<T, V>)>::type;
  union { W w; Pack<T, V> v; } u;
  u.w = *reinterpret_cast<const W*>(p);
  return u.v;
}
template <int V, bool Streaming = false, class T> __device__ __forceinline__ void storePack(T* p, const Pack<T, V>& v) {
  using W = typename Word<sizeof(Pack<T, V>)>::type;
  union { W w; Pack<T, V> v; } u;
  u.v = v;
  storeWord<Streaming>(reinterpret_cast<W*>(p), u.w);
}
// Streaming rows: a row kernel whose input and output together pass the GPU's L2 reads each
// input line once and writes each output line once, and nothing reads them again before L2 would
// have dropped them. There its x loads carry an L2 evict_first policy and its stores are
// st.global.cs (evict first). Measured on one H200 with tools/bench/gpu/micro/rows-prefetch-micro.cu:
// RMSNorm over 8192 rows of 4096 / 8192 f16 3-6% faster so (12288: level), either hint alone
// no faster.
// Where the data fit L2 the kernels keep plain accesses: the next kernel (or the next step) may
// find them there. Loads and stores of 1 or 2 bytes stay plain.
__device__ __forceinline__ unsigned long long evictFirstPolicy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
#else
  return 0;
#endif
}
template <class W> __device__ __forceinline__ W loadWordEvictFirst(const W* p, unsigned long long) { return *p; }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> __device__ __forceinline__ unsigned loadWordEvictFirst(const unsigned* p, unsigned long long pol) {
  unsigned w;
  asm volatile("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w) : "l"(p), "l"(pol));
  return w;
}
template <> __device__ __forceinline__ uint2 loadWordEvictFirst(const uint2* p, unsigned long long pol) {
  uint2 w;
  asm volatile("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w.x), "=r"(w.y) : "l"(p), "l"(pol));
  return w;
}
template <> __device__ __forceinline__ uint4 loadWordEvictFirst(const uint4* p, unsigned long long pol) {
  uint4 w;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p), "l"(pol));
  return w;
}
template <> __device__ __forceinline__ Word<32>::type loadWordEvictFirst(const Word<32>::type* p, unsigned long long pol) {
  return {loadWordEvictFirst(&p->a, pol), loadWordEvictFirst(&p->b, pol)};
}
#endif
template <int V, class T> __device__ __forceinline__ Pack<T, V> loadPackEvictFirst(const T* p, unsigned long long pol) {
  using W = typename Word<sizeof(Pack<T, V>)>::type;
  union { W w; Pack<T, V> v; } u;
  u.w = loadWordEvictFirst(reinterpret_cast<const W*>(p), pol);
  return u.v;
}
// Whether a row kernel moving `bytes` (its input read and its output written) streams: one that
// streams `byDefault` where they pass the device's L2. Layer norm and RMSNorm do; softmax does
// not: there the hints gained nothing (measured on one H200: level at H = 4096 and 8192, 1.4%
// slower at 12288), its exps rather than its memory setting its pace. `mode` (-1: the tuning
// table's row_stream at these bytes, which coconetc tune measures): 0 no kernel streams, 1 every
// one, 2 as above.
inline bool streamRows(bool byDefault, long long bytes, const char* program, const char* stage, int mode = -1) {
  if (mode < 0) mode = rowStream(bytes);
  if (mode == 0 || mode == 1) return mode == 1;
  if (!byDefault) return false;
  int dev = 0, l2 = 0;
  check(cudaGetDevice(&dev), program, stage, "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), program, stage, "cudaDeviceGetAttribute");
  return bytes > static_cast<long long>(l2);
}
// A pack's elements in the accumulation type A (as static_cast<A>(to_f(e))): 16-bit floats
// convert in pairs from 32-bit words (bf16: a shift or a mask each; f16: one half2 conversion).
template <class A, class T, int V> __device__ __forceinline__ void unpack(const Pack<T, V>& p, A (&out)[V]) {
  if constexpr (std::is_same<T, __nv_bfloat16>::value && V % 2 == 0) {
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      unsigned w;
      __builtin_memcpy(&w, &p.e[j], sizeof w);
      out[j] = static_cast<A>(__uint_as_float(w << 16));
      out[j + 1] = static_cast<A>(__uint_as_float(w & 0xffff0000u));
    }
  } else if constexpr (std::is_same<T, __half>::value && V % 2 == 0) {
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      __half2 h;
      __builtin_memcpy(&h, &p.e[j], sizeof h);
      const float2 f = __half22float2(h);
      out[j] = static_cast<A>(f.x);
      out[j + 1] = static_cast<A>(f.y);
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = static_cast<A>(to_f(p.e[j]));
  }
}
// m combined with the largest element of p in A, as `m = e > m ? e : m` over the elements would
// (an element that is not greater, NaN included, leaves m). 16-bit floats take their maximum in
// pairs as stored (HMNMX2: half an instruction an element, where converting first takes two) and
// convert once: conversion to A is exact and monotonic, and __hmax2 / __hmax return the other
// operand where one is NaN, a NaN only where both are (which then leaves m, as above).
template <class A, class T, int V> __device__ __forceinline__ A packMax(const Pack<T, V>& p, A m) {
  constexpr bool half = std::is_same<T, __half>::value, bf16 = std::is_same<T, __nv_bfloat16>::value;
  if constexpr ((half || bf16) && V % 2 == 0) {
    using T2 = typename std::conditional<half, __half2, __nv_bfloat162>::type;
    T2 a;
    __builtin_memcpy(&a, &p.e[0], sizeof a);
#pragma unroll
    for (int j = 2; j < V; j += 2) {
      T2 b;
      __builtin_memcpy(&b, &p.e[j], sizeof b);
      a = __hmax2(a, b);
    }
    const A e = static_cast<A>(to_f(__hmax(a.x, a.y)));
    return e > m ? e : m;
  } else {
    A xs[V];
    unpack(p, xs);
#pragma unroll
    for (int j = 0; j < V; ++j) m = xs[j] > m ? xs[j] : m;
    return m;
  }
}
// V values rounded to T (as Store<T>::from) and stored as one pack. 16-bit floats are rounded
// in pairs into 32-bit words (a pack of separately rounded halves compiles to 2-byte stores).
// (Streaming: st.global.cs, as storePack<V, true>.)
template <class T, bool Streaming = false, int V, class A> __device__ __forceinline__ void storeRounded(T* p, const A (&w)[V]) {
  constexpr bool half = std::is_same<T, __half>::value, bf16 = std::is_same<T, __nv_bfloat16>::value;
  Pack<T, V> o;
  if constexpr ((half || bf16) && V % 2 == 0) {
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      if constexpr (half) {
        const __half2 h = __floats2half2_rn(static_cast<float>(w[j]), static_cast<float>(w[j + 1]));
        __builtin_memcpy(&o.e[j], &h, sizeof h);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(static_cast<float>(w[j]), static_cast<float>(w[j + 1]));
        __builtin_memcpy(&o.e[j], &h, sizeof h);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) o.e[j] = Store<T>::from(w[j]);
  }
  storePack<V, Streaming>(p, o);
}
inline bool packAligned(const void* p, size_t bytes) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0;
}
template <class A> struct SumOp {
  __device__ static A apply(A a, A b) { return a + b; }
};
template <class A> struct MaxOp {
  __device__ static A apply(A a, A b) { return b > a ? b : a; }
};
// Combines v over the R threads of each row group; every thread of the group gets the result,
// the same on every thread (warps' partial results combined in order). Every thread of the
// block calls it (groups of more than 32 threads synchronize the block); `sh` holds 32 values.
template <class Op, class A> __device__ A groupCombine(A v, int R, A* sh) {
  for (int o = (R < 32 ? R : 32) / 2; o > 0; o /= 2) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (R <= 32) return v;
  const int warp = threadIdx.x / 32, warps = R / 32, first = warp / warps * warps;
  __syncthreads();  // the previous combine's readers are done with sh
  if (threadIdx.x % 32 == 0) sh[warp] = v;
  __syncthreads();
  A r = sh[first];
  for (int w = 1; w < warps; ++w) r = Op::apply(r, sh[first + w]);
  return r;
}
// A reduction's Op struct (init, element, combine, finish: the generated Op_<id>) as groupCombine's
// operator (a row group's reductions over their rows).
template <class Op> struct CombineOf {
  __device__ static typename Op::Acc apply(typename Op::Acc a, typename Op::Acc b) { return Op::combine(a, b); }
};
// Threads per row: the fewest that keep `units` packs with at most `perThread` packs a thread,
// a power of two up to 128 (several rows share a block of 128 threads), then a multiple of 32 up
// to 512 (a block is the row's threads); 0 where the row does not fit (the kernel that reads it
// twice). The multiples of 32 keep more packs in flight an SM than the next power of two would
// (measured on one H200: layer norm over 8192 rows of 10240 to 24576 f16 3-11% faster so).
// At most `cap` packs a thread (the generated code passes the tuning table's row_max_packs, which
// coconetc tune measures: more threads a row). With `longRows` 1 (the generated code passes the
// table's row_long at the rows' bytes, which coconetc tune measures too) 0 for every row.
inline int rowThreads(long long units, int perThread, int cap = INT_MAX, int longRows = 0) {
  if (longRows == 1) return 0;
  perThread = std::min(perThread, cap);
  for (int r = 1; r <= 512; r = r < 128 ? r * 2 : r + 32)
    if (units <= static_cast<long long>(r) * perThread) return r;
  return 0;
}
// Parts a row is split into over blocks (the `_split_stats` and `_split_write` kernels) where rows
// are too long for registers (rowThreads gave 0) and too few for `perSm` blocks on each of the
// GPU's `sms` (a block a row: `_long`): enough parts for about perSm blocks an SM, each part at
// least minPart elements; 1 where a block takes a whole row. rowSplitParts takes both from the
// tuning table (row_split_blocks, row_split_min) at the rows' bytes, entries coconetc tune
// measures (tools/tune/jobs.sh single); their rows there name the measurements. With the table's
// row_long 1 at the rows' bytes (`longRows` -1: read there) it never splits.
inline long long rowSplitPartsFor(long long rows, long long n, int sms, int perSm, long long minPart) {
  const long long target = static_cast<long long>(perSm) * sms;
  if (rows <= 0 || rows >= target) return 1;
  const long long want = (target + rows - 1) / rows, most = (n + minPart - 1) / minPart;
  return std::max<long long>(1, std::min(want, most));
}
// `bytes`: the rows' input (the tuning table's entries are read at it).
inline long long rowSplitParts(long long rows, long long n, long long bytes, const char* program, const char* stage,
                               int longRows = -1) {
  if ((longRows < 0 ? rowLong(bytes) : longRows) == 1) return 1;
  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), program, stage, "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), program, stage, "cudaDeviceGetAttribute");
  return rowSplitPartsFor(rows, n, sms, rowSplitBlocks(bytes), rowSplitMin(bytes));
}

