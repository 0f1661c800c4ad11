// units-micro: one GPU, no NCCL. How should the workers of a split kernel share a chunk's units
// when the units are not a multiple of their threads? LAMB's `moments` at 2^24 parameters on 4
// ranks computes its last chunk (2^17 units of 8 elements) on 100 worker blocks of 512 threads,
// one per SM: 2.56 units per thread, so with the grid-strided partition (coconet_rt::forUnits:
// thread t takes units t, t + 51200, t + 102400) blocks 0-55 take 3 units a thread and 56-99 two,
// and the chunk ends on the first ones (session 50's stamps: the workers end ~8 us apart).
// Forms: `strided` (the generated loop), `blocked` (each block a contiguous equal share, 1310-1311
// units, its threads strided within it: every block the same work), `strided2` / `strided3` (the
// strided partition with 2 / 3 units a thread in flight: their loads issued before the first
// update, where the generated loop's stores to m and v keep the next unit's loads behind them),
// and the generated element code's own operations one by one (`gen`: its three divisions by
// invariants and the direction's division as `__fdiv_rn`, IEEE `sqrtf`, no contraction), with the
// divisions by invariants as products by the hoisted reciprocal (`gen-rcp`, not exact) or those
// corrected by one residual (`gen-mark`, Markstein's).
//
// Each unit is the update's traffic in `moments`: 4 slots of f16 (the ranks' pushed gradients,
// 16 bytes each) summed, m, v, w read (f32, 32 bytes each), m, v, u written, and u^2 and w^2 summed
// per block (the folded norms). The data rotates over 8 copies so that no pass finds its chunk in
// L2. Rows: blocks x units (units per thread), each form, median and fastest of `reps` launches
// timed alone between events (microseconds; the launch's few us included alike).
// 2026-11-28, 1 H200 (docs/benchmarks/gpu/2026-11-28-1xH200-session51): the forms within 0.5 us
// of each other at every size; a pass costs ~11 us plus ~3 us per unit a thread (the marginal
// rate ~4.4 TB/s on 100 blocks), so 2.56 units a thread took 16.6-17.8 us against 16.4-16.5 for 2;
// and the generated arithmetic is as fast as the lean one (units-micro-arith.txt): the pass is
// bound by HBM, not by its instructions, at one block of 512 threads per SM.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/units-micro.cu -o /tmp/units-micro
//   /tmp/units-micro [reps=200]
#include "micro.cuh"

#include <cmath>
#include <cstdint>

constexpr int kThreads = 512;
constexpr int kSlots = 4;
constexpr int kCopies = 8;

struct Chunk {
  const __half* slots;  // kSlots x n
  float *m, *v, *w, *u;
  long long n;          // elements (8 per unit)
};

__device__ __forceinline__ void load8(const float* p, float (&x)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
}
__device__ __forceinline__ void store8(float* p, const float (&x)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(x[0], x[1], x[2], x[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(x[4], x[5], x[6], x[7]);
}

// One unit's inputs: the slots' sum and m, v, w.
struct In {
  float g[8], m[8], v[8], w[8];
};
__device__ __forceinline__ void loadUnit(const Chunk& c, long long i, In& x) {
#pragma unroll
  for (int e = 0; e < 8; ++e) x.g[e] = 0.f;
#pragma unroll
  for (int p = 0; p < kSlots; ++p) {
    const uint4 h = *reinterpret_cast<const uint4*>(c.slots + p * c.n + i);
    const __half2* hh = reinterpret_cast<const __half2*>(&h);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = __half22float2(hh[e]);
      x.g[2 * e] += f.x, x.g[2 * e + 1] += f.y;
    }
  }
  load8(c.m + i, x.m);
  load8(c.v + i, x.v);
  load8(c.w + i, x.w);
}
// The invariants of the generated update (hoisted): the divisors (the ranks, 1 - beta1^t,
// 1 - beta2^t), their reciprocals (kArith 2, 3) and the coefficients.
struct Coef {
  float c0, c1, c2, r0, r1, r2, b1, nb1, b2, nb2, eps, wd;
};
// x / c as kArith says: 1 `__fdiv_rn` (as generated), 2 x * RN(1/c), 3 x * RN(1/c) corrected by
// one residual (Markstein: q + (x - q c) RN(1/c)).
template <int kArith>
__device__ __forceinline__ float divBy(float x, float c, float r) {
  if (kArith == 1) return __fdiv_rn(x, c);
  const float q = __fmul_rn(x, r);
  if (kArith == 2) return q;
  return __fmaf_rn(__fmaf_rn(-q, c, x), r, q);
}
// kArith 0: this file's lean update (one division, contracted); 1-3: the generated element code's
// operations one by one (LAMB's `moments`: the gradient averaged, both moments, their bias
// corrections, the direction, weight decay, both squares), its divisions by invariants as above.
template <int kArith>
__device__ __forceinline__ void updateUnit(const Chunk& c, long long i, In& x, float& uu, float& ww, const Coef& k) {
  float u[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (kArith == 0) {
      x.m[e] = 0.9f * x.m[e] + 0.1f * x.g[e];
      x.v[e] = 0.999f * x.v[e] + 0.001f * x.g[e] * x.g[e];
      u[e] = x.m[e] / (sqrtf(x.v[e]) + 1e-6f) + 0.01f * x.w[e];
      uu += u[e] * u[e];
      ww += x.w[e] * x.w[e];
    } else {
      const float g = divBy<kArith>(x.g[e], k.c0, k.r0);
      x.m[e] = __fadd_rn(__fmul_rn(k.b1, x.m[e]), __fmul_rn(k.nb1, g));
      x.v[e] = __fadd_rn(__fmul_rn(k.b2, x.v[e]), __fmul_rn(__fmul_rn(k.nb2, g), g));
      const float mh = divBy<kArith>(x.m[e], k.c1, k.r1), vh = divBy<kArith>(x.v[e], k.c2, k.r2);
      u[e] = __fadd_rn(__fdiv_rn(mh, __fadd_rn(sqrtf(vh), k.eps)), __fmul_rn(k.wd, x.w[e]));
      uu = __fadd_rn(uu, __fmul_rn(u[e], u[e]));
      ww = __fadd_rn(ww, __fmul_rn(x.w[e], x.w[e]));
    }
  }
  store8(c.m + i, x.m);
  store8(c.v + i, x.v);
  store8(c.u + i, u);
}

// kDepth units a thread in flight: their loads issued before the first one's update (kDepth 1: as
// the generated loop, whose stores to m and v keep the next unit's loads behind them).
template <bool kBlocked, int kDepth, int kArith = 0>
__global__ void __launch_bounds__(kThreads, 1) update(Chunk c, float* norms, Coef k) {
  extern __shared__ unsigned char pad[];  // more than half an SM's shared memory: one block per SM
  const long long units = c.n / 8;
  long long first, last, step;
  if (kBlocked) {
    first = units * blockIdx.x / gridDim.x + threadIdx.x;
    last = units * (blockIdx.x + 1) / gridDim.x;
    step = blockDim.x;
  } else {
    first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    last = units;
    step = (long long)gridDim.x * blockDim.x;
  }
  float uu = 0.f, ww = 0.f;
  for (long long j = first; j < last; j += kDepth * step) {
    In x[kDepth];
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
      if (j + d * step < last) loadUnit(c, (j + d * step) * 8, x[d]);
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
      if (j + d * step < last) updateUnit<kArith>(c, (j + d * step) * 8, x[d], uu, ww, k);
  }
  // the block's partial norms (as the folds): a warp shuffle tree, then one atomic per warp
  for (int o = 16; o > 0; o >>= 1) {
    uu += __shfl_down_sync(0xffffffffu, uu, o);
    ww += __shfl_down_sync(0xffffffffu, ww, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&norms[0], uu);
    atomicAdd(&norms[1], ww);
  }
  if (threadIdx.x == 0 && uu == -1.f) pad[0] = 1;  // never: keeps the shared memory asked for
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  int dev = 0, sms = 0, smemMax = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&smemMax, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int smem = smemMax / 2 + 1024;
  using Kernel = void (*)(Chunk, float*, Coef);
  const struct {
    const char* name;
    Kernel k;
  } forms[] = {{"strided", update<false, 1>}, {"blocked", update<true, 1>}, {"strided2", update<false, 2>}, {"strided3", update<false, 3>},
               {"gen", update<false, 1, 1>}, {"gen-rcp", update<false, 1, 2>}, {"gen-mark", update<false, 1, 3>}};
  for (auto& f : forms) CK(cudaFuncSetAttribute(f.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  // the largest chunk: 6 units a thread on every SM
  const long long maxUnits = 6LL * sms * kThreads, maxN = maxUnits * 8;
  std::vector<Chunk> copies(kCopies);
  for (auto& c : copies) {
    __half* s = nullptr;
    CK(cudaMalloc(&s, kSlots * maxN * sizeof(__half)));
    fill<<<1024, 256>>>(s, kSlots * maxN, 7u, 1.f);
    float* f[4];
    for (auto& p : f) {
      CK(cudaMalloc(&p, maxN * sizeof(float)));
      CK(cudaMemset(p, 0, maxN * sizeof(float)));
    }
    c = Chunk{s, f[0], f[1], f[2], f[3], maxN};
  }
  float* norms = nullptr;
  CK(cudaMalloc(&norms, 2 * sizeof(float)));
  CK(cudaDeviceSynchronize());
  std::printf("# units-micro: %s (%d SMs); %d launches each, median / fastest us; %d bytes per unit\n", prop.name, sms, reps,
              kSlots * 16 + 6 * 32);
  std::printf("%7s %8s %6s  %-8s %9s %9s %8s\n", "blocks", "units", "u/thr", "form", "median", "fastest", "GB/s");
  Coef coef{};
  coef.c0 = 4.f, coef.c1 = 1.f - std::pow(0.9f, 10.f), coef.c2 = 1.f - std::pow(0.999f, 10.f);
  coef.r0 = 1.f / coef.c0, coef.r1 = 1.f / coef.c1, coef.r2 = 1.f / coef.c2;
  coef.b1 = 0.9f, coef.nb1 = 0.1f, coef.b2 = 0.999f, coef.nb2 = 1.f - 0.999f, coef.eps = 1e-6f, coef.wd = 0.01f;
  const int blockCounts[] = {100, sms};
  const double perThread[] = {1.0, 2.0, 2.56, 3.0, 6.0};
  for (int blocks : blockCounts) {
    for (double k : perThread) {
      const long long units = static_cast<long long>(k * blocks * kThreads + 0.5);
      for (auto& f : forms) {
        int next = 0;
        auto launch = [&] {
          Chunk c = copies[next];
          next = (next + 1) % kCopies;
          c.n = units * 8;
          f.k<<<blocks, kThreads, smem>>>(c, norms, coef);
        };
        const std::vector<float> ms = timeLaunches(launch, 20, reps);
        const double med = ms[ms.size() / 2] * 1e3, fast = ms[0] * 1e3;
        std::printf("%7d %8lld %6.2f  %-8s %9.1f %9.1f %8.0f\n", blocks, units, static_cast<double>(units) / (blocks * kThreads), f.name,
                    med, fast, units * (kSlots * 16.0 + 6 * 32.0) / (med * 1e3));
      }
    }
  }
  return 0;
}
