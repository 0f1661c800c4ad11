// ---- coconet_runtime.cuh, part 2 of 6: element types, dropout, index maps ----
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

