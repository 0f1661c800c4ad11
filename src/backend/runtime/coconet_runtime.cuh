// coconet_runtime.cuh: support code shared by every program coconetc generates. Written into
// each output folder by `coconetc compile`; the folder builds on its own.
#pragma once

#include <cublas_v2.h>
#include <cuda.h>  // types only (CUdeviceptr): the driver is reached through the runtime
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "coconet_env.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 28, 0)
#error "coconetc's generated code needs NCCL 2.28 or newer"
#endif

namespace coconet_rt {

// ---- Checked calls: a failure names the program, the stage and the call ------------------
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void fail(const char* program, const char* stage, const char* what, const std::string& detail) {
  throw Error(std::string(program) + ": stage '" + stage + "': " + what + " failed: " + detail);
}
inline void check(cudaError_t e, const char* program, const char* stage, const char* what) {
  if (e != cudaSuccess) fail(program, stage, what, cudaGetErrorString(e));
}
inline void check(ncclResult_t e, const char* program, const char* stage, const char* what) {
  if (e != ncclSuccess && e != ncclInProgress) fail(program, stage, what, ncclGetErrorString(e));
}
inline void check(cublasStatus_t e, const char* program, const char* stage, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) fail(program, stage, what, "cuBLAS status " + std::to_string(static_cast<int>(e)));
}

// An integer scalar parameter arrives as a long long: an i8, u8 or i32 one must lie in its type's
// range [lo, hi], or the run refuses it rather than compute with another.
inline void checkIntegerScalar(long long v, long long lo, long long hi, const char* program, const char* name,
                               const char* type) {
  if (v >= lo && v <= hi) return;
  std::ostringstream os;
  os << program << ": scalar parameter '" << name << "' (" << type << ") is " << v << "; it must lie from " << lo << " to "
     << hi;
  throw Error(os.str());
}

// A run-time scalar that must be positive (layernorm's eps): names the stage and the parameter.
inline void checkPositiveScalar(double v, const char* program, const char* stage, const char* what, const char* name) {
  if (v > 0) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': " << what << " (scalar parameter '" << name << "') is " << v
     << "; it must be positive";
  throw Error(os.str());
}

// A dropout probability from a scalar parameter: in [0, 1), naming the stage and the parameter.
inline void checkProbability(double v, const char* program, const char* stage, const char* name) {
  if (v >= 0 && v < 1) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': dropout probability (scalar parameter '" << name << "') is " << v
     << "; it must lie in [0, 1)";
  throw Error(os.str());
}

// A dropout probability computed from scalar parameters (`1 - keep`): in [0, 1), naming the
// stage and the expression.
inline void checkProbabilityOf(double v, const char* program, const char* stage, const char* expr) {
  if (v >= 0 && v < 1) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': dropout probability " << expr << " is " << v
     << " with this run's parameters; it must lie in [0, 1)";
  throw Error(os.str());
}

// Size arithmetic on the caller's sizes (run(), localShape()): every sum, product and quotient is
// checked, and an element count must leave its bytes countable in 64 bits. The generated code
// writes size expressions as S_.mul(sz.s_B, sz.s_S) with `const SizeMath S_{"program"}`.
struct SizeMath {
  const char* program;
  [[noreturn]] void overflow(const char* what) const {
    throw Error(std::string(program) + ": " + what + " overflows 64 bits at these sizes");
  }
  long long add(long long a, long long b) const {
    long long r;
    if (__builtin_add_overflow(a, b, &r)) overflow("a size expression");
    return r;
  }
  long long mul(long long a, long long b) const {
    long long r;
    if (__builtin_mul_overflow(a, b, &r)) overflow("a size expression");
    return r;
  }
  long long div(long long a, long long b) const {
    if (b == 0) throw Error(std::string(program) + ": a size expression divides by zero at these sizes");
    if (b == -1) return mul(a, -1);
    return a / b;
  }
  long long mod(long long a, long long b) const {
    if (b == 0) throw Error(std::string(program) + ": a size expression divides by zero at these sizes");
    return b == -1 ? 0 : a % b;
  }
  // The elements of a value of this shape whose elements take `bytes` each.
  long long count(const long long* shape, int rank, int bytes, const char* value) const {
    long long n = 1, b;
    for (int k = 0; k < rank; ++k)
      if (__builtin_mul_overflow(n, shape[k], &n)) n = -1;
    if (n < 0 || __builtin_mul_overflow(n, static_cast<long long>(bytes), &b))
      throw Error(std::string(program) + ": '" + value + "' would take more than 2^63 - 1 bytes at these sizes");
    return n;
  }
};

// A tensor the caller passes must lie inside one allocation of device memory on the current
// device, whole: its bytes are checked against the allocation's range (cuMemGetAddressRange,
// reached through the runtime's driver entry point; a caching allocator's block counts as one
// allocation). role: "tensor", "state" or "output".
inline void checkDeviceSpan(const void* p, long long bytes, const char* program, const char* role, const char* name) {
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static const GetRange getRange = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<GetRange>(nullptr);
    return reinterpret_cast<GetRange>(f);
  }();
  auto where = [&] {
    std::ostringstream os;
    os << program << ": " << role << " '" << name << "' (" << p << ", " << bytes << " bytes)";
    return os.str();
  };
  if (!getRange) throw Error(where() + ": cannot be checked: the driver has no cuMemGetAddressRange");
  cudaPointerAttributes a{};
  int dev = -1;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess || (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)) {
    cudaGetLastError();  // (clears the error an unknown host pointer leaves)
    throw Error(where() + " is not device memory");
  }
  if (cudaGetDevice(&dev) == cudaSuccess && a.type == cudaMemoryTypeDevice && a.device != dev)
    throw Error(where() + " is on device " + std::to_string(a.device) + ", the run on device " + std::to_string(dev));
  CUdeviceptr base = 0;
  size_t size = 0;
  if (getRange(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    throw Error(where() + " is not inside an allocation of device memory");
  const unsigned long long end = static_cast<unsigned long long>(base) + size,
                           at = reinterpret_cast<unsigned long long>(p);
  if (bytes > 0 && end - at < static_cast<unsigned long long>(bytes))
    throw Error(where() + " runs past the end of its allocation (" + std::to_string(end - at) + " bytes from it)");
}

// Every rank must run a call with the same sizes (a rank that grows a symmetric window alone
// would wait for the others forever): the first call with new sizes compares them over the
// communicator, one all-reduce of each size's largest value and (negated) smallest.
class SizeAgreement {
public:
  SizeAgreement() = default;
  SizeAgreement(const SizeAgreement&) = delete;
  SizeAgreement& operator=(const SizeAgreement&) = delete;
  ~SizeAgreement() {
    if (dev_) cudaFree(dev_);
  }
  void check(ncclComm_t comm, cudaStream_t stream, int ranks, const long long* sizes, const char* const* names, int count,
             const char* program) {
    if (ranks <= 1 || count == 0) return;
    if (static_cast<int>(agreed_.size()) == count && std::equal(agreed_.begin(), agreed_.end(), sizes)) return;
    std::vector<long long> v(2 * count);
    for (int i = 0; i < count; ++i) v[i] = sizes[i], v[count + i] = -sizes[i];
    if (!dev_) check_(cudaMalloc(&dev_, v.size() * sizeof(long long)), program, "cudaMalloc");
    check_(cudaMemcpyAsync(dev_, v.data(), v.size() * sizeof(long long), cudaMemcpyHostToDevice, stream), program,
           "cudaMemcpyAsync");
    check_(ncclAllReduce(dev_, dev_, v.size(), ncclInt64, ncclMax, comm, stream), program, "ncclAllReduce");
    check_(cudaMemcpyAsync(v.data(), dev_, v.size() * sizeof(long long), cudaMemcpyDeviceToHost, stream), program,
           "cudaMemcpyAsync");
    check_(cudaStreamSynchronize(stream), program, "cudaStreamSynchronize");
    for (int i = 0; i < count; ++i)
      if (v[i] != -v[count + i])
        throw Error(std::string(program) + ": the ranks run with different sizes: " + names[i] + " is " +
                    std::to_string(sizes[i]) + " here, from " + std::to_string(-v[count + i]) + " to " + std::to_string(v[i]) +
                    " across the ranks; every rank must pass the same sizes");
    agreed_.assign(sizes, sizes + count);
  }

private:
  template <class E>
  static void check_(E e, const char* program, const char* what) {
    coconet_rt::check(e, program, "size agreement", what);
  }
  std::vector<long long> agreed_;
  long long* dev_ = nullptr;
};

// A size the program was compiled for: the run must pass that value.
inline void checkBoundSize(long long v, long long compiled, const char* program, const char* name) {
  if (v == compiled) return;
  throw Error(std::string(program) + ": size " + name + " is " + std::to_string(v) + ", but the program was compiled for " +
              name + " = " + std::to_string(compiled));
}

// ---- Element types -------------------------------------------------------------------------
__host__ __device__ inline float to_f(__half x) { return __half2float(x); }
__host__ __device__ inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ inline float to_f(float x) { return x; }
__host__ __device__ inline double to_f(double x) { return x; }
__host__ __device__ inline long long to_f(int8_t x) { return x; }
__host__ __device__ inline long long to_f(uint8_t x) { return x; }
__host__ __device__ inline long long to_f(int x) { return x; }
__host__ __device__ inline long long to_f(long long x) { return x; }

template <class T> struct Store;
template <> struct Store<__half> { __device__ static __half from(double v) { return __float2half_rn(static_cast<float>(v)); } };
template <> struct Store<__nv_bfloat16> { __device__ static __nv_bfloat16 from(double v) { return __float2bfloat16_rn(static_cast<float>(v)); } };
template <> struct Store<float> { __device__ static float from(double v) { return static_cast<float>(v); } };
template <> struct Store<double> { __device__ static double from(double v) { return v; } };
// (An integer value stored to a float type converts as the interpreter's does: through double.)
// Integers saturate and truncate toward zero, as the reference interpreter does.
template <class I> struct Limits;
template <> struct Limits<int8_t> { static constexpr double lo = -128.0, hi = 127.0; };
template <> struct Limits<uint8_t> { static constexpr double lo = 0.0, hi = 255.0; };
template <> struct Limits<int> { static constexpr double lo = -2147483648.0, hi = 2147483647.0; };
template <> struct Limits<long long> { static constexpr double lo = -9223372036854775808.0, hi = 9223372036854775807.0; };
template <class I> __device__ inline I saturate(double v) {
  if (v != v) return 0;
  v = trunc(v);
  if (v <= Limits<I>::lo) return static_cast<I>(Limits<I>::lo);
  if (v >= Limits<I>::hi) return sizeof(I) == 8 ? static_cast<I>(9223372036854775807LL) : static_cast<I>(Limits<I>::hi);
  return static_cast<I>(v);
}
// An integer of an integer expression saturates to a narrower integer type exactly.
template <class I> __host__ __device__ inline I saturateInteger(long long v) {
  const long long lo = static_cast<long long>(Limits<I>::lo), hi = sizeof(I) == 8 ? 9223372036854775807LL : static_cast<long long>(Limits<I>::hi);
  return static_cast<I>(v < lo ? lo : v > hi ? hi : v);
}
template <> struct Store<int8_t> {
  __device__ static int8_t from(double v) { return saturate<int8_t>(v); }
  __device__ static int8_t from(long long v) { return saturateInteger<int8_t>(v); }
};
template <> struct Store<uint8_t> {
  __device__ static uint8_t from(double v) { return saturate<uint8_t>(v); }
  __device__ static uint8_t from(long long v) { return saturateInteger<uint8_t>(v); }
};
template <> struct Store<int> {
  __device__ static int from(double v) { return saturate<int>(v); }
  __device__ static int from(long long v) { return saturateInteger<int>(v); }
};
template <> struct Store<long long> {
  __device__ static long long from(double v) { return saturate<long long>(v); }
  __device__ static long long from(long long v) { return v; }
};

// Integer arithmetic of i8, u8, i32 and i64 expressions, in 64 bits as the interpreter computes
// it: two's complement (sums, differences, products and negation wrap), division and remainder
// truncating (by zero: 0; INT64_MIN / -1 wraps), pow(x, y) by squaring (y < 0: 0 unless x is 1
// or -1).
__host__ __device__ inline long long iadd(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__host__ __device__ inline long long isub(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
__host__ __device__ inline long long imul(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
__host__ __device__ inline long long ineg(long long a) { return static_cast<long long>(0ULL - static_cast<unsigned long long>(a)); }
__host__ __device__ inline long long iabs(long long a) { return a < 0 ? ineg(a) : a; }
__host__ __device__ inline long long idiv(long long a, long long b) { return b == 0 ? 0 : b == -1 ? ineg(a) : a / b; }
__host__ __device__ inline long long imod(long long a, long long b) { return b == 0 || b == -1 ? 0 : a % b; }
__host__ __device__ inline long long ipow(long long x, long long y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
  unsigned long long r = 1, b = static_cast<unsigned long long>(x);
  for (unsigned long long e = static_cast<unsigned long long>(y); e; e >>= 1, b *= b)
    if (e & 1) r *= b;
  return static_cast<long long>(r);
}

// Rounding a value to a dtype inside an expression (casts).
__device__ inline float round_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ inline float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

__device__ inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ inline double gelu(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }

// ---- Dropout: the interpreter's counter-based generator -----------------------------------
__host__ __device__ inline unsigned long long splitmix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// A dropout's stream key: its seed and its stage's salt mixed, the same for every element
// (kernels compute it once per thread: it does not depend on the loop's index, and nvcc hoists
// it). Each element then costs one splitmix of key ^ index (with three per element the Megatron
// epilogue's kernel took 1.7x as long on H200; with one, 1.2x the time to move its bytes).
__host__ __device__ inline unsigned long long dropout_stream(unsigned long long seed, unsigned long long salt) {
  return splitmix(seed ^ splitmix(salt));
}
__host__ __device__ inline float dropout_uniform(unsigned long long seed, unsigned long long salt,
                                                 unsigned long long index) {
  const unsigned long long h = splitmix(dropout_stream(seed, salt) ^ index);
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// ---- Index maps of element-wise kernels ----------------------------------------------------
// An operand's element for output element (local coordinates c) is at
// base + sum_k c_k * stride_k (stride 0 where the operand is broadcast).
constexpr int kMaxRank = 8;
struct OperandMap {
  long long stride[kMaxRank];
  long long base;
};
struct OutputMap {
  int rank;
  long long shape[kMaxRank];     // local shape
  long long gstride[kMaxRank];   // strides of the global shape (dropout keys)
  long long gbase;               // global linear offset of this rank's slice
  unsigned long long keyXor;     // instance and rank bits mixed into dropout keys
  long long n;                   // elements this launch computes
  long long first;               // the local index of the first of them (chunked runs)
};

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
// slower at 12288), its exps rather than its memory setting its pace. For A/B benchmarks and
// tests (read at every call): COCONET_ROW_STREAM=1 streams every row kernel, =0 none.
inline bool streamRows(bool byDefault, long long bytes, const char* program, const char* stage) {
  if (const long long forced = envValue(Env::RowStream, -1); forced >= 0) return forced == 1;
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
// For A/B benchmarks (read at every call): COCONET_ROWWISE=long takes that kernel for every row;
// COCONET_ROW_PACKS=P (1 up to perThread) keeps at most P packs a thread (more threads a row).
inline int rowThreads(long long units, int perThread) {
  if (envValue(Env::RowWise, 0) == 1) return 0;
  perThread = static_cast<int>(std::min<long long>(perThread, envValue(Env::RowPacks, perThread)));
  for (int r = 1; r <= 512; r = r < 128 ? r * 2 : r + 32)
    if (units <= static_cast<long long>(r) * perThread) return r;
  return 0;
}
// Parts a row is split into over blocks (the `_split_stats` and `_split_write` kernels) where rows
// are too long for registers (rowThreads gave 0) and too few for `perSm` blocks on each of the
// GPU's `sms` (a block a row: `_long`): enough parts for about perSm blocks an SM, each part at
// least kRowSplitMin elements; 1 where a block takes a whole row. Measured on one H200: softmax
// over 131072 elements at T = 1 .. 64 rows 2-6x faster split than a block a row; 4 blocks an SM as
// fast as kRowSplitBlocks, 8 slower. Table row: norms softmax T=1 H=131072 f16, 1 GPU.
// For A/B benchmarks (read at every call): COCONET_ROWWISE=long never splits;
// COCONET_ROW_SPLIT_BLOCKS=B (1..64) aims at B blocks an SM instead of kRowSplitBlocks.
constexpr long long kRowSplitMin = 4096;
constexpr int kRowSplitBlocks = 2;
inline long long rowSplitPartsFor(long long rows, long long n, int sms, int perSm = kRowSplitBlocks) {
  const long long target = static_cast<long long>(perSm) * sms;
  if (rows <= 0 || rows >= target) return 1;
  const long long want = (target + rows - 1) / rows, most = (n + kRowSplitMin - 1) / kRowSplitMin;
  return std::max<long long>(1, std::min(want, most));
}
inline long long rowSplitParts(long long rows, long long n, const char* program, const char* stage) {
  if (envValue(Env::RowWise, 0) == 1) return 1;
  const int perSm = static_cast<int>(envValue(Env::RowSplitBlocks, kRowSplitBlocks));
  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), program, stage, "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), program, stage, "cudaDeviceGetAttribute");
  return rowSplitPartsFor(rows, n, sms, perSm);
}

// ---- Reductions along one dimension -------------------------------------------------------
// x viewed as [outer, len, inner]; output o = (o / inner, o % inner) reduces x[o/inner, :, o%inner].
// Op (generated per stage) gives Acc, init(), element(v) (v already in Acc), combine(a, b) and
// finish(r, count). The partition of each output's elements depends only on the sizes, so
// results are deterministic. Three shapes of work:
//   reduce_thread: one thread per output (short reductions, or many outputs along an inner
//                  dimension: neighbouring threads read neighbouring elements);
//   reduce_block:  one block per output (many long rows);
//   reduce_split:  few outputs with long reductions (a whole-tensor norm): `parts` blocks per
//                  output write partial results, reduce_final combines them in order.
// The reduced elements come from a source: Ptr reads a stored tensor; a generated Src_<id>
// computes each element from the element-wise stages that only the reduction reads (they are
// never stored). x(i) is element i of the reduced tensor's local storage.
template <class T> struct Ptr {
  const T* __restrict__ p;
  __device__ __forceinline__ auto operator()(long long i) const { return to_f(p[i]); }
};
template <class Op, class Src, class YT>
__global__ void reduce_thread(Src x, YT* __restrict__ y, long long outer, long long len, long long inner, double count) {
  const long long outs = outer * inner;
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < outs; o += (long long)gridDim.x * blockDim.x) {
    const long long base = (o / inner) * len * inner + o % inner;
    typename Op::Acc acc = Op::init();
    for (long long j = 0; j < len; ++j) acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}
// The block's values combined as a tree (blockDim.x a power of two): element i with element i + w,
// w halving from blockDim.x / 2, through shared memory while w >= 32, then the last five levels by
// shuffles in warp 0 (the same pairs, so the same bits, with five barriers fewer).
// blockReduceEach<OpA, OpB, ...>(shA, shB, ..., a, b, ...) runs that tree for several values at
// once, each with its own operator and shared array: every value gets exactly the bits it would
// get alone, and the barriers are taken once for all (a fused group's folded reductions at its
// end, a scalar chain's neighbouring reductions). Every thread gets the results, in place.
template <class Op>
__device__ __forceinline__ void warpTreeTail(typename Op::Acc* sh, int w, unsigned lanes) {
  typename Op::Acc x = sh[threadIdx.x];
  for (; w > 0; w /= 2) {
    const typename Op::Acc y = __shfl_down_sync(lanes, x, w);
    if (static_cast<int>(threadIdx.x) < w) x = Op::combine(x, y);
  }
  if (threadIdx.x == 0) sh[0] = x;
}
template <class... Ops>
__device__ void blockReduceEach(typename Ops::Acc*... sh, typename Ops::Acc&... v) {
  ((sh[threadIdx.x] = v), ...);
  __syncthreads();
  int w = blockDim.x / 2;
  for (; w >= 32; w /= 2) {
    if (threadIdx.x < w) ((sh[threadIdx.x] = Ops::combine(sh[threadIdx.x], sh[threadIdx.x + w])), ...);
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    const unsigned lanes = blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1u;
    (warpTreeTail<Ops>(sh, w, lanes), ...);
  }
  __syncthreads();
  ((v = sh[0]), ...);
  __syncthreads();
}
template <class Op>
__device__ typename Op::Acc blockReduce(typename Op::Acc v, typename Op::Acc* sh) {
  blockReduceEach<Op>(sh, v);
  return v;
}
template <class Op, class Src, class YT>
__global__ void reduce_block(Src x, YT* __restrict__ y, long long outer, long long len, long long inner, double count) {
  __shared__ typename Op::Acc sh[256];
  for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
    const long long base = (o / inner) * len * inner + o % inner;
    typename Op::Acc acc = Op::init();
    for (long long j = threadIdx.x; j < len; j += blockDim.x)
      acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    acc = blockReduce<Op>(acc, sh);
    if (threadIdx.x == 0) y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}
template <class Op, class Src>
__global__ void reduce_split(Src x, typename Op::Acc* __restrict__ part, long long outer, long long len, long long inner, long long parts) {
  __shared__ typename Op::Acc sh[256];
  const long long per = (len + parts - 1) / parts;
  for (long long b = blockIdx.x; b < outer * inner * parts; b += gridDim.x) {
    const long long o = b / parts, q = b % parts;
    const long long base = (o / inner) * len * inner + o % inner;
    const long long end = (q + 1) * per < len ? (q + 1) * per : len;
    typename Op::Acc acc = Op::init();
    for (long long j = q * per + threadIdx.x; j < end; j += blockDim.x)
      acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    acc = blockReduce<Op>(acc, sh);
    if (threadIdx.x == 0) part[b] = acc;
  }
}
template <class Op, class YT>
__global__ void reduce_final(const typename Op::Acc* __restrict__ part, YT* __restrict__ y, long long outs, long long parts,
                             double count) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < outs; o += (long long)gridDim.x * blockDim.x) {
    typename Op::Acc acc = Op::init();
    for (long long q = 0; q < parts; ++q) acc = Op::combine(acc, part[o * parts + q]);
    y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}

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
constexpr long long kGemvMinRows = 2048;  // fewer rows: cuBLAS (a warp per row leaves SMs idle)
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
// COCONET_GATHER_ROWS=1 (0) in the environment gathers wherever R > 1 (never), for A/B timings
// (tools/bench/gpu/driver-ab.sh --env); an all_to_all pipeline's read-bound test follows it too.
constexpr long long kGatherBatchMaxRows = 256;
inline int gatherRowsForced() {
  static const int forced = static_cast<int>(envValue(Env::GatherRows, -1));
  return forced;
}
inline bool gatherBatchedRows(long long M, long long K, long long N, long long R) {
  if (R > 1 && gatherRowsForced() >= 0) return gatherRowsForced() == 1;
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
constexpr long long kCeMinCopyBytes = 8LL << 20;
inline long long overlapChunks(long long scheduled, long long rowsPerRank, long long rowBytes, long long minCopyBytes) {
  for (long long c = scheduled; c > 1; --c)
    if (rowsPerRank % c == 0 && rowsPerRank / c * rowBytes >= minCopyBytes) return c;
  return 1;
}
// The copy-engine overlap's chunks where they merge (overlapChunks with kCeMinCopyBytes), and on
// more than two ranks one chunk while this rank's whole block to a peer, rowsPerRank x rowBytes,
// is under kOneChunkBelowPeerBytes: there the GEMM, then the group's one-chunk kernel (which
// pushes the slices itself) beat the GEMM in 2 or 3 chunks with copy-engine copies of 8-12 MiB.
// Measured with Megatron's layer on 4 H200: one chunk up to 5% faster or level from 16 to 24 MiB
// per peer, 4 chunks ahead from 32 MiB; on 2 H200 2 chunks beat one (6% at 16 MiB per peer), so
// on two ranks the chunks stay.
constexpr long long kOneChunkBelowPeerBytes = 32LL << 20;
inline long long mergedOverlapChunks(long long scheduled, long long rowsPerRank, long long rowBytes, long long ranks) {
  if (ranks > 2 && rowsPerRank * rowBytes < kOneChunkBelowPeerBytes) return 1;
  return overlapChunks(scheduled, rowsPerRank, rowBytes, kCeMinCopyBytes);
}

// A device allocation's size: whole 16-byte units, at least one. NCCL's kernels read a buffer
// rounded up to 16 bytes (NVIDIA/nccl issue 265), so a tensor of 7 f16 handed to ncclAllReduce
// in an allocation of 14 bytes is read past its end (harmless on the hardware, whose allocations
// are larger, but a finding for compute-sanitizer).
inline size_t roundUp16(size_t bytes) { return bytes == 0 ? 16 : (bytes + 15) / 16 * 16; }

// Workspace: device buffers for values the program computes, grown as needed (in 16-byte units).
struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  void ensure(size_t want, const char* program, const char* stage) {
    if (want <= bytes) return;
    want = roundUp16(want);
    if (ptr) check(cudaFree(ptr), program, stage, "cudaFree");
    ptr = nullptr;
    bytes = 0;
    check(cudaMalloc(&ptr, want), program, stage, "cudaMalloc");
    bytes = want;
  }
  ~Buffer() {
    if (ptr) cudaFree(ptr);
  }
};

// The timeline of one call of run() (`coconetc compile --timeline`): an event recorded on the
// stream that did the work after every stage, copy-engine round and overlap chunk, in the
// COCONET_TIMELINE_CALL-th call (default 10: past a benchmark's warm-up); when that call ends,
// the host waits for its events and prints one line per mark to stderr, in microseconds from the
// call's start: "timeline PROGRAM rank R call N: T us STREAM LABEL". The recorded call starts
// with an NCCL allreduce of one value on the program's communicator, so that the ranks' zeros
// agree within its skew (microseconds) and a kernel's end on one rank compares with another's
// (without it, the ranks' calls start at different moments and barrier waits look like work).
// The call before it counts its marks and creates their events and the allreduce's buffer, so
// that the recorded call creates none; other calls record nothing.
class Timeline {
 public:
  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  ~Timeline() {
    for (Mark& m : marks_)
      if (m.ev) cudaEventDestroy(m.ev);
    if (align_) cudaFree(align_);
  }
  void begin(cudaStream_t s, ncclComm_t comm, int rank, const char* program) {
    if (calls_ == 0) at_ = envValue(Env::TimelineCall, 10);
    ++calls_;
    on_ = calls_ == at_;
    counting_ = calls_ + 1 == at_;
    used_ = 0;
    rank_ = rank;
    program_ = program;
    if (counting_ && !align_) {
      check(cudaMalloc(&align_, sizeof(int)), program_, "timeline", "cudaMalloc");
      check(cudaMemsetAsync(align_, 0, sizeof(int), s), program_, "timeline", "cudaMemsetAsync");
    }
    if (on_ && align_)  // (align_ is null only where the recorded call is the first)
      check(ncclAllReduce(align_, align_, 1, ncclInt32, ncclMax, comm, s), program_, "timeline", "ncclAllReduce (aligning the ranks' starts)");
    mark(s, "stream_", "start");
  }
  void mark(cudaStream_t s, const char* stream, const char* label, long long index = -1) {
    if (counting_) ++used_;
    if (!on_) return;
    if (used_ == marks_.size()) {
      marks_.emplace_back();
      check(cudaEventCreate(&marks_.back().ev), program_, "timeline", "cudaEventCreate");
    }
    Mark& m = marks_[used_++];
    m.stream = stream;
    m.label = index >= 0 ? std::string(label) + " " + std::to_string(index) : std::string(label);
    check(cudaEventRecord(m.ev, s), program_, "timeline", "cudaEventRecord");
  }
  void end() {
    if (counting_) {
      counting_ = false;
      while (marks_.size() < used_) {
        marks_.emplace_back();
        check(cudaEventCreate(&marks_.back().ev), program_, "timeline", "cudaEventCreate");
      }
    }
    if (!on_) return;
    on_ = false;
    std::ostringstream o;
    for (size_t k = 0; k < used_; ++k) {
      check(cudaEventSynchronize(marks_[k].ev), program_, "timeline", "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, marks_[0].ev, marks_[k].ev), program_, "timeline", "cudaEventElapsedTime");
      char t[32];
      std::snprintf(t, sizeof t, "%.1f", ms * 1000.0);
      o << "timeline " << program_ << " rank " << rank_ << " call " << at_ << ": " << t << " us " << marks_[k].stream << " "
        << marks_[k].label << "\n";
    }
    std::fputs(o.str().c_str(), stderr);
  }

 private:
  struct Mark {
    cudaEvent_t ev = nullptr;
    const char* stream = "";
    std::string label;
  };
  std::vector<Mark> marks_;
  size_t used_ = 0;
  long long calls_ = 0, at_ = 10;
  bool on_ = false, counting_ = false;
  int rank_ = 0;
  const char* program_ = "";
  int* align_ = nullptr;  // the allreduce's value
};

}  // namespace coconet_rt
