// Epilogue micro-benchmark: the Megatron overlap's per-chunk kernel body without its barriers,
// on one GPU: out = dropout(sum of 2 slots + bias, p) + residual over a rank's slice, stored
// twice (the published slice and the rank's own part of the output), as the generated
// k_*_f_device does. Variants of the dropout mask's hash and of the bias index, on 128 blocks
// (the device-API kernels' grid) and on 4 blocks per SM, against a kernel that only moves the
// same bytes. Every variant's output is checked against the reference variant's where they
// must agree (same hash). Times: median of 30 launches between CUDA events.
//   nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/epilogue-micro.cu -o epilogue-micro
//   ./epilogue-micro [rows] [H]     (default 1024 12288: one chunk's slice at 2 ranks, 8192 tokens)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coconet_runtime.cuh"

#include "micro.cuh"

using coconet_rt::Vec;

// i % b by a 32-bit remainder where both fit (session 15 tried it in generated code, as
// coconet_rt::wrap_index, and dropped it: no faster than the 64-bit remainder here).
__device__ __forceinline__ long long wrap_index(long long i, long long b) {
  return ((static_cast<unsigned long long>(i) | static_cast<unsigned long long>(b)) >> 32) == 0
             ? static_cast<long long>(static_cast<unsigned>(i) % static_cast<unsigned>(b))
             : i % b;
}

// The mask's hash before session 15: three splitmix per element.
__device__ inline float uniformOld(unsigned long long seed, unsigned long long salt, unsigned long long index) {
  const unsigned long long h = coconet_rt::splitmix(seed ^ coconet_rt::splitmix(salt ^ coconet_rt::splitmix(index)));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// HASH 0: the old hash; 1: the runtime's coconet_rt::dropout_uniform called per element, as
// generated code does (its stream key hoisted by the compiler); 3: the same with the stream
// key computed before the loop by hand; 2: no dropout (the memory floor with the same
// arithmetic otherwise). MOD32: the bias index by wrap_index (a 32-bit remainder),
// else by a 64-bit one.
template <int HASH, bool MOD32>
__global__ void __launch_bounds__(512) epi(const __half* __restrict__ slots, const __half* __restrict__ bias, long long b1,
                                           const __half* __restrict__ res, __half* __restrict__ mine, __half* __restrict__ own,
                                           long long n, long long off, double prm_p, long long seed, unsigned long long keyXor) {
  constexpr int V = 8;
  const unsigned long long salt = 12843695220559402709ULL;
  const unsigned long long k = coconet_rt::splitmix(static_cast<unsigned long long>(seed) ^ coconet_rt::splitmix(salt));
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;
  for (long long jv = tid; jv < n / V; jv += nth) {
    const long long i0 = jv * V;
    float sum[V];  // the two slots in rank order, as coconet_rt::sumSlots
    Vec<__half, V> s0, s1;
    coconet_rt::load_vec_rw(s0, slots + i0);
    coconet_rt::load_vec_rw(s1, slots + n + i0);
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = __fadd_rn(__fadd_rn(0.0f, coconet_rt::to_f(s0.v[e])), coconet_rt::to_f(s1.v[e]));
    Vec<__half, V> x1, x2, o;
    const long long bi = MOD32 ? wrap_index(off + i0, b1) : (off + i0) % b1;
    coconet_rt::load_vec(x1, bias + bi);
    coconet_rt::load_vec(x2, res + i0);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const unsigned long long key = static_cast<unsigned long long>(off + i0 + e) ^ keyXor;
      const float v0 = coconet_rt::to_f(coconet_rt::Store<__half>::from(static_cast<double>(sum[e])));
      const float v2 = __fadd_rn(v0, coconet_rt::to_f(x1.v[e]));
      const float p = prm_p;
      float u;
      if (HASH == 0) u = uniformOld(static_cast<unsigned long long>(seed), salt, key);
      else if (HASH == 1) u = coconet_rt::dropout_uniform(static_cast<unsigned long long>(seed), salt, key);
      else if (HASH == 3) u = static_cast<float>(coconet_rt::splitmix(k ^ key) >> 40) * (1.0f / 16777216.0f);
      else u = 1.0f;
      // The scale of kept elements: inside the select before session 15 (a division per
      // element, which nvcc does not hoist from the select), now computed first.
      const float scale = __fdiv_rn(1.0f, __fsub_rn(1.0f, p));
      const float kept = __fmul_rn(v2, scale);
      const float v5 = HASH == 0 ? (u < p ? 0.0f : __fmul_rn(v2, __fdiv_rn(1.0f, __fsub_rn(1.0f, p)))) : (u < p ? 0.0f : kept);
      const float v7 = __fadd_rn(v5, coconet_rt::to_f(x2.v[e]));
      o.v[e] = coconet_rt::Store<__half>::from(static_cast<double>(v7));
    }
    coconet_rt::store_vec(mine + i0, o);
    coconet_rt::store_vec(own + i0, o);
  }
}

// The same bytes moved: two slot reads, bias, residual, two stores, no arithmetic.
__global__ void __launch_bounds__(512) moveOnly(const __half* __restrict__ slots, const __half* __restrict__ bias, long long b1,
                                                const __half* __restrict__ res, __half* __restrict__ mine, __half* __restrict__ own, long long n) {
  constexpr int V = 8;
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;
  for (long long jv = tid; jv < n / V; jv += nth) {
    const long long i0 = jv * V;
    Vec<__half, V> a, b, c, d, o;
    coconet_rt::load_vec(a, slots + i0);
    coconet_rt::load_vec(b, slots + n + i0);
    coconet_rt::load_vec(c, bias + i0 % b1);
    coconet_rt::load_vec(d, res + i0);
#pragma unroll
    for (int e = 0; e < V; ++e) o.v[e] = __hadd(__hadd(a.v[e], b.v[e]), __hadd(c.v[e], d.v[e]));
    coconet_rt::store_vec(mine + i0, o);
    coconet_rt::store_vec(own + i0, o);
  }
}

int main(int argc, char** argv) {
  const long long rows = argc > 1 ? atoll(argv[1]) : 1024, H = argc > 2 ? atoll(argv[2]) : 12288, n = rows * H;
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  __half *slots, *bias, *res, *mine, *own, *ref;
  CK(cudaMalloc(&slots, 2 * n * sizeof(__half)));
  CK(cudaMalloc(&bias, H * sizeof(__half)));
  CK(cudaMalloc(&res, n * sizeof(__half)));
  CK(cudaMalloc(&mine, n * sizeof(__half)));
  CK(cudaMalloc(&own, n * sizeof(__half)));
  CK(cudaMalloc(&ref, n * sizeof(__half)));
  fill<<<1024, 256>>>(slots, 2 * n, 1, 1.f);
  fill<<<1024, 256>>>(bias, H, 2, 1.f);
  fill<<<1024, 256>>>(res, n, 3, 1.f);
  CK(cudaDeviceSynchronize());
  const double bytes = 6.0 * n * sizeof(__half);
  std::printf("# epilogue-micro: %s, %d SMs; %lld rows x %lld (%.1f MB moved per launch)\n", prop.name, sms, rows, H, bytes / 1e6);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto time = [&](const char* name, int blocks, auto launch, const __half* check) {
    for (int w = 0; w < 3; ++w) launch(blocks);
    std::vector<float> ts;
    for (int r = 0; r < 30; ++r) {
      CK(cudaEventRecord(e0));
      launch(blocks);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      ts.push_back(ms * 1000.0f);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    const char* verdict = "";
    if (check) {
      std::vector<__half> a(n), b(n);
      CK(cudaMemcpy(a.data(), mine, n * sizeof(__half), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(b.data(), check, n * sizeof(__half), cudaMemcpyDeviceToHost));
      long long bad = 0;
      for (long long i = 0; i < n; ++i) bad += __half2float(a[i]) != __half2float(b[i]);
      verdict = bad ? " MISMATCH" : " (matches)";
    }
    std::printf("%-26s blocks %4d: %8.1f us (p10 %.1f, p90 %.1f), %6.0f GB/s%s\n", name, blocks, ts[15], ts[3], ts[27], bytes / ts[15] / 1e3, verdict);
  };
  const double p = 0.1;
  const long long seed = 1234, off = 5 * n;
  const unsigned long long kx = 0;
  for (int blocks : {128, 4 * sms}) {
    time("move only", blocks, [&](int b) { moveOnly<<<b, 512>>>(slots, bias, H, res, mine, own, n); }, nullptr);
    time("hash 3x splitmix, mod64", blocks, [&](int b) { epi<0, false><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, nullptr);
    CK(cudaMemcpy(ref, mine, n * sizeof(__half), cudaMemcpyDeviceToDevice));
    time("hash 3x splitmix, mod32", blocks, [&](int b) { epi<0, true><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, ref);
    time("hash 1x splitmix, mod64", blocks, [&](int b) { epi<1, false><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, nullptr);
    CK(cudaMemcpy(ref, mine, n * sizeof(__half), cudaMemcpyDeviceToDevice));
    time("hash 1x splitmix, mod32", blocks, [&](int b) { epi<1, true><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, ref);
    time("hash 1x by hand, mod32", blocks, [&](int b) { epi<3, true><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, ref);
    time("no dropout, mod32", blocks, [&](int b) { epi<2, true><<<b, 512>>>(slots, bias, H, res, mine, own, n, off, p, seed, kx); }, nullptr);
  }
  return 0;
}
