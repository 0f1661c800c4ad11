// GEMV micro-benchmark: y = W x (W row-major [M, K], f16, f32 sums) by cuBLAS (the m = 1 GEMM
// the backend emits below kGemvMinRows rows), by the runtime's coconet_rt::gemv (gemv_rows: R2U4
// in its vector form; "gemv_rows<scalar>" is its element-by-element form), and by the same kernel
// with other counts, RnUm (n rows per warp, m 16-byte loads per row in flight per lane), on one
// GPU. Every variant's output is checked against cuBLAS's before its time counts. Times: median of 50 launches between CUDA events;
// the matrices (32-512 MiB) are larger than L2, so each launch streams W from HBM.
//   nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime -I$NCCL/include tools/bench/gpu/micro/gemv-micro.cu -lcublas -o gemv-micro
//   ./gemv-micro            (prints one line per shape and variant: us, GB/s of W read)
#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coconet_runtime.cuh"

#include "micro.cuh"

int main() {
  cublasHandle_t blas;
  CK(cublasCreate(&blas));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const long long shapes[][2] = {{16384, 8192}, {8192, 16384}, {8192, 8192}, {4096, 4096}, {2048, 8192}};
  for (auto& sh : shapes) {
    const long long M = sh[0], K = sh[1];
    __half *W, *x, *y, *ref;
    CK(cudaMalloc(&W, M * K * 2));
    CK(cudaMalloc(&x, K * 2));
    CK(cudaMalloc(&y, M * 2));
    CK(cudaMalloc(&ref, M * 2));
    fill<<<1024, 256>>>(W, M * K, 1, 0.05f);
    fill<<<64, 256>>>(x, K, 2, 2.f);
    const float alpha = 1, beta = 0;
    auto cublas = [&](__half* out) {
      CK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, (int)M, (int)K, &alpha, x, CUDA_R_16F, 1, 0, W, CUDA_R_16F, (int)K, 0,
                                    &beta, out, CUDA_R_16F, 1, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    cublas(ref);
    CK(cudaDeviceSynchronize());
    std::vector<__half> hr(M), hy(M);
    CK(cudaMemcpy(hr.data(), ref, M * 2, cudaMemcpyDeviceToHost));
    struct Var { const char* name; std::function<void()> run; };
    auto g = [&](long long rowsPerWarp) { return coconet_rt::gridFor((M + rowsPerWarp - 1) / rowsPerWarp * 32); };
    std::vector<Var> vars = {
        {"cublas", [&] { cublas(y); }},
        {"gemv", [&] { coconet_rt::gemv<__half>(W, x, y, M, K, 0); }},
        {"gemv_rows<scalar>", [&] { coconet_rt::gemv_rows<__half, false><<<coconet_rt::gridFor(M * 32), 256>>>(W, x, y, M, K); }},
        {"R1U4", [&] { coconet_rt::gemv_rows<__half, true, 1, 4><<<g(1), 256>>>(W, x, y, M, K); }},
        {"R1U8", [&] { coconet_rt::gemv_rows<__half, true, 1, 8><<<g(1), 256>>>(W, x, y, M, K); }},
        {"R2U4", [&] { coconet_rt::gemv_rows<__half, true, 2, 4><<<g(2), 256>>>(W, x, y, M, K); }},
        {"R2U2", [&] { coconet_rt::gemv_rows<__half, true, 2, 2><<<g(2), 256>>>(W, x, y, M, K); }},
        {"R4U2", [&] { coconet_rt::gemv_rows<__half, true, 4, 2><<<g(4), 256>>>(W, x, y, M, K); }},
        {"R1U4grid2", [&] { coconet_rt::gemv_rows<__half, true, 1, 4><<<std::max(1, g(1) / 2), 256>>>(W, x, y, M, K); }},
    };
    for (auto& v : vars) {
      CK(cudaMemset(y, 0, M * 2));
      v.run();
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(hy.data(), y, M * 2, cudaMemcpyDeviceToHost));
      double worst = 0;
      for (long long i = 0; i < M; ++i) {
        double a = __half2float(hy[i]), b = __half2float(hr[i]);
        worst = std::max(worst, std::abs(a - b) / (std::abs(b) + 1e-2));
      }
      for (int w = 0; w < 5; ++w) v.run();
      std::vector<float> ts;
      for (int it = 0; it < 50; ++it) {
        CK(cudaEventRecord(e0));
        v.run();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ts.push_back(ms * 1000);
      }
      std::sort(ts.begin(), ts.end());
      const double us = ts[ts.size() / 2];
      std::printf("M=%lld K=%lld %-14s %8.1f us %7.0f GB/s  worst rel diff vs cublas %.2e%s\n", M, K, v.name, us, M * K * 2 / us / 1e3, worst,
                  worst > 1e-2 ? "  MISMATCH" : "");
    }
    cudaFree(W); cudaFree(x); cudaFree(y); cudaFree(ref);
  }
  return 0;
}
