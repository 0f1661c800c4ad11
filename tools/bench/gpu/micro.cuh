// What the one-file GPU micro-benchmarks in this folder share: a macro that stops at the first
// failing CUDA, cuBLAS or NCCL call (naming it), and a deterministic f16 fill (a hash of the index
// and the seed, uniform in [-scale/2, scale/2)).
#pragma once

#include <cstdio>
#include <cstdlib>

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
