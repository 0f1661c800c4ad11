// What the one-file GPU micro-benchmarks in this folder share: a macro that stops at the first
// failing CUDA, cuBLAS or NCCL call (naming it), a deterministic f16 fill (a hash of the index
// and the seed, uniform in [-scale/2, scale/2)), and the timing of a launch between events.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_fp16.h>

#define CK(x)                                                                   \
  do {                                                                          \
    auto e_ = (x);                                                              \
    if ((int)e_ != 0) {                                                         \
      std::printf("error %d at %s:%d: %s\n", (int)e_, __FILE__, __LINE__, #x); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void fill(__half* p, long long n, unsigned seed, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2half(((h & 0xffff) / 65536.f - 0.5f) * scale);
  }
}

// `warm` launches, then `reps` launches each timed alone between CUDA events on the default
// stream: their times in milliseconds, sorted (the median is [reps / 2], the fastest [0]).
template <class Launch>
std::vector<float> timeLaunches(Launch launch, int warm, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int k = 0; k < warm; ++k) launch();
  CK(cudaGetLastError());
  std::vector<float> ms;
  for (int k = 0; k < reps; ++k) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float x = 0;
    CK(cudaEventElapsedTime(&x, e0, e1));
    ms.push_back(x);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms;
}
