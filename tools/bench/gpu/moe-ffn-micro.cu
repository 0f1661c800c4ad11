// MoE FFN micro-benchmark: one step of samples/moe_gemm's all_to_all pipeline on one GPU, i.e.
// the expert FFN y = gelu(x @ w1) @ w2 on one rank block (X experts, C tokens each), in the
// orders the generated code could take:
//   gemms       the two batched GEMMs alone (no GeLU): the floor
//   batched     batched GEMM, GeLU into a second buffer, batched GEMM (what moe_gemm.cu does)
//   inplace     the same with the GeLU in place (one buffer)
//   per-expert  for each expert: GEMM, GeLU in place, GEMM (its h is 1/X of the block, so the
//               GeLU may find it in L2)
//   side        per expert on two streams: expert e's GeLU (a higher-priority stream) beside
//               expert e+1's first GEMM or expert e's ... second GEMM waits for its GeLU
//   gelu        the GeLU alone over one block (out of place)
//   whole       the unfused path's shape: each GEMM once over every step's tokens (M = steps * C per
//               expert), batched GEMM, GeLU, batched GEMM, once per timed call
// Every variant's y is checked against `batched`'s (f16, relative 1e-2 of the largest |y|: the
// GEMMs may take other algorithms per expert). Times: median of 30 calls between CUDA events,
// after 10 warm-up calls; `steps` calls back to back per timed call (the pipeline runs P steps);
// the whole list twice (pass 1, pass 2), as the clocks follow the power drawn.
//   nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/moe-ffn-micro.cu -lcublas -o moe-ffn-micro
//   ./moe-ffn-micro [X C H F steps]   (default 2 1024 4096 8192 4: the bench's F = 8192 at 4 GPUs)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "coconet_runtime.cuh"

#include "micro.cuh"

// The generated GeLU kernel's body (moe_gemm.cu, k_*_h): 8 halves per thread per step.
__global__ void gelu8(__half* __restrict__ out, const __half* __restrict__ in, long long n) {
  const long long nv = n / 8, nth = (long long)gridDim.x * blockDim.x;
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < nv; j += nth) {
    coconet_rt::Vec<__half, 8> x, o;
    coconet_rt::load_vec(x, in + j * 8);
#pragma unroll
    for (int e = 0; e < 8; ++e) o.v[e] = __float2half(coconet_rt::gelu(__half2float(x.v[e])));
    coconet_rt::store_vec(out + j * 8, o);
  }
}

int main(int argc, char** argv) {
  const long long X = argc > 1 ? atoll(argv[1]) : 2, C = argc > 2 ? atoll(argv[2]) : 1024;
  const long long H = argc > 3 ? atoll(argv[3]) : 4096, F = argc > 4 ? atoll(argv[4]) : 8192;
  const int steps = argc > 5 ? atoi(argv[5]) : 4;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("moe-ffn-micro on %s (L2 %d MiB): X=%lld C=%lld H=%lld F=%lld, %d steps per call\n", prop.name,
              prop.l2CacheSize >> 20, X, C, H, F, steps);
  __half *x, *w1, *w2, *h, *g, *y, *yref, *xw, *hw, *yw;
  CK(cudaMalloc(&x, X * C * H * 2));
  CK(cudaMalloc(&w1, X * H * F * 2));
  CK(cudaMalloc(&w2, X * F * H * 2));
  CK(cudaMalloc(&h, X * C * F * 2));
  CK(cudaMalloc(&g, X * C * F * 2));
  CK(cudaMalloc(&y, X * C * H * 2));
  CK(cudaMalloc(&yref, X * C * H * 2));
  CK(cudaMalloc(&xw, steps * X * C * H * 2));
  CK(cudaMalloc(&hw, steps * X * C * F * 2));
  CK(cudaMalloc(&yw, steps * X * C * H * 2));
  fill<<<1024, 256>>>(xw, steps * X * C * H, 4, 4.f);
  fill<<<1024, 256>>>(x, X * C * H, 1, 4.f);
  fill<<<1024, 256>>>(w1, X * H * F, 2, 4.f / std::sqrt((float)H));
  fill<<<1024, 256>>>(w2, X * F * H, 3, 4.f / std::sqrt((float)F));
  CK(cudaGetLastError());
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t s, s2;
  CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, hi));
  cublasHandle_t blas;
  CK(cublasCreate(&blas));
  std::vector<cudaEvent_t> ev(2 * X + 2);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const float one = 1, zero = 0;
  // row-major C[M,N] = A[M,K] B[K,N] for `batch` experts from expert e0 (cuBLAS sees the transposes)
  auto gemm = [&](const __half* A, const __half* B, __half* Cm, long long M, long long K, long long N, long long e0, long long batch) {
    CK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, B + e0 * K * N, CUDA_R_16F, (int)N,
                                  K * N, A + e0 * M * K, CUDA_R_16F, (int)K, M * K, &zero, Cm + e0 * M * N, CUDA_R_16F, (int)N, M * N,
                                  (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  auto gelu = [&](__half* out, const __half* in, long long n, cudaStream_t st) {
    gelu8<<<coconet_rt::gridFor(n / 8 + 1), 256, 0, st>>>(out, in, n);
    CK(cudaGetLastError());
  };
  const long long nh = C * F;  // one expert's h
  std::vector<std::pair<std::string, std::function<void()>>> variants = {
      {"batched", [&] { CK(cublasSetStream(blas, s)); gemm(x, w1, h, C, H, F, 0, X); gelu(g, h, X * nh, s); gemm(g, w2, y, C, F, H, 0, X); }},
      {"gemms", [&] { CK(cublasSetStream(blas, s)); gemm(x, w1, h, C, H, F, 0, X); gemm(h, w2, y, C, F, H, 0, X); }},
      {"inplace", [&] { CK(cublasSetStream(blas, s)); gemm(x, w1, h, C, H, F, 0, X); gelu(h, h, X * nh, s); gemm(h, w2, y, C, F, H, 0, X); }},
      {"per-expert", [&] {
         CK(cublasSetStream(blas, s));
         for (long long e = 0; e < X; ++e) { gemm(x, w1, h, C, H, F, e, 1); gelu(h + e * nh, h + e * nh, nh, s); gemm(h, w2, y, C, F, H, e, 1); }
       }},
      {"side", [&] {
         CK(cublasSetStream(blas, s));
         CK(cudaEventRecord(ev[2 * X], s));
         CK(cudaStreamWaitEvent(s2, ev[2 * X], 0));
         for (long long e = 0; e < X; ++e) {
           gemm(x, w1, h, C, H, F, e, 1);
           CK(cudaEventRecord(ev[2 * e], s));
           CK(cudaStreamWaitEvent(s2, ev[2 * e], 0));
           gelu(h + e * nh, h + e * nh, nh, s2);
           CK(cudaEventRecord(ev[2 * e + 1], s2));
         }
         for (long long e = 0; e < X; ++e) {
           CK(cudaStreamWaitEvent(s, ev[2 * e + 1], 0));
           gemm(h, w2, y, C, F, H, e, 1);
         }
       }},
      {"gelu", [&] { gelu(g, h, X * nh, s); }},
      {"whole", [&] {
         CK(cublasSetStream(blas, s));
         gemm(xw, w1, hw, steps * C, H, F, 0, X); gelu(hw, hw, steps * X * nh, s); gemm(hw, w2, yw, steps * C, F, H, 0, X);
       }},
  };
  // the reference y
  variants[0].second();
  CK(cudaMemcpyAsync(yref, y, X * C * H * 2, cudaMemcpyDeviceToDevice, s));
  CK(cudaStreamSynchronize(s));
  std::vector<__half> a(X * C * H), b(X * C * H);
  CK(cudaMemcpy(a.data(), yref, a.size() * 2, cudaMemcpyDeviceToHost));
  float amax = 0;
  for (auto v : a) amax = std::max(amax, std::fabs(__half2float(v)));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  for (int pass = 1; pass <= 2; ++pass)  // twice: the GPU's clocks follow its power, so order matters
  for (auto& [name, run] : variants) {
    CK(cudaMemsetAsync(y, 0, X * C * H * 2, s));
    run();
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamSynchronize(s2));
    std::string check = "-";
    if (name != "gemms" && name != "gelu" && name != "whole") {
      CK(cudaMemcpy(b.data(), y, b.size() * 2, cudaMemcpyDeviceToHost));
      float worst = 0;
      for (size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::fabs(__half2float(b[i]) - __half2float(a[i])));
      check = worst <= 1e-2f * amax ? "ok" : "WRONG";
      check += " (max |dy| " + std::to_string(worst) + " of |y| " + std::to_string(amax) + ")";
    }
    for (int i = 0; i < 10; ++i) run();
    std::vector<float> ms;
    for (int it = 0; it < 30; ++it) {
      CK(cudaEventRecord(t0, s));
      for (int st = 0; st < (name == "whole" ? 1 : steps); ++st) run();
      CK(cudaStreamWaitEvent(s, ev[2 * X - 1], 0));  // `side`'s last GeLU (recorded earlier for the others: no wait)
      CK(cudaEventRecord(t1, s));
      CK(cudaEventSynchronize(t1));
      float m = 0;
      CK(cudaEventElapsedTime(&m, t0, t1));
      ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("pass %d %-11s median %8.1f us per call (%d steps; p10 %.1f, p90 %.1f) = %7.1f us per step  check %s\n", pass,
                name.c_str(), ms[15] * 1e3, steps, ms[3] * 1e3, ms[26] * 1e3, ms[15] * 1e3 / steps, check.c_str());
  }
  CK(cublasDestroy(blas));
  return 0;
}
