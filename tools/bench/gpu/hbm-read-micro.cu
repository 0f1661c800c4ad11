// HBM read ceiling: how fast one GPU streams a buffer larger than L2 from its memory when a kernel
// does nothing else with it (each thread sums 16-byte loads, U loads in flight, grid-stride over
// the buffer; one word per block written so nothing is dropped). The bound that a memory-bound
// kernel such as the GEMVs of samples/decode_gemv (2 x 256 MiB of f16 weights per rank at 2 GPUs,
// H = 8192) cannot beat. Every grid (blocks per SM x threads) and U is timed; the best line per
// size is marked. Times: median of 50 launches between CUDA events, after 5 warm-up launches.
//   nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/hbm-read-micro.cu -o hbm-read-micro
//   ./hbm-read-micro        (one line per size and grid: us, GB/s; then the best per size)
#include <algorithm>
#include <cstdio>
#include <vector>

#include "micro.cuh"

template <int U>
__global__ void readAll(const uint4* __restrict__ p, long long n, unsigned* out) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) acc += v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) {
    uint4 v = __ldcs(p + i);
    acc += v.x ^ v.y ^ v.z ^ v.w;
  }
  // The loads' result must reach memory for them to stay: thread 0 writes its warp's sum.
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int clockKHz = 0, busWidth = 0;
  CK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, 0));
  CK(cudaDeviceGetAttribute(&busWidth, cudaDevAttrGlobalMemoryBusWidth, 0));
  const double peak = 2.0 * clockKHz * 1e3 * (busWidth / 8) / 1e9;  // GB/s, double data rate
  std::printf("# %s, %d SMs, L2 %d MiB, memory %.0f MHz x %d bits: %.0f GB/s nominal\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, clockKHz / 1e3, busWidth, peak);
  const long long sizesMiB[] = {256, 512, 1024};
  unsigned* out;
  CK(cudaMalloc(&out, 64 * 1024 * sizeof(unsigned)));
  for (long long mib : sizesMiB) {
    const long long bytes = mib << 20, n = bytes / 16;
    __half* buf;
    CK(cudaMalloc(&buf, bytes));
    fill<<<1024, 256>>>(buf, bytes / 2, 7, 1.f);
    CK(cudaGetLastError());
    double best = 0;
    char bestName[64] = "";
    for (int perSM : {1, 2, 4, 8}) {
      for (int threads : {256, 512, 1024}) {
        if (perSM * threads > 2048) continue;
        for (int U : {1, 2, 4, 8}) {
          const int blocks = perSM * prop.multiProcessorCount;
          auto launch = [&] {
            const uint4* p = reinterpret_cast<const uint4*>(buf);
            switch (U) {
              case 1: readAll<1><<<blocks, threads>>>(p, n, out); break;
              case 2: readAll<2><<<blocks, threads>>>(p, n, out); break;
              case 4: readAll<4><<<blocks, threads>>>(p, n, out); break;
              default: readAll<8><<<blocks, threads>>>(p, n, out); break;
            }
          };
          const std::vector<float> ms = timeLaunches(launch, 5, 50);
          const double us = ms[ms.size() / 2] * 1e3, gbs = bytes / us / 1e3;
          char name[64];
          std::snprintf(name, sizeof name, "%dx%d U%d", perSM, threads, U);
          std::printf("%5lld MiB  %-12s %9.1f us %7.0f GB/s (%.1f%% of nominal)\n", mib, name, us, gbs,
                      100 * gbs / peak);
          if (gbs > best) {
            best = gbs;
            std::snprintf(bestName, sizeof bestName, "%s", name);
          }
        }
      }
    }
    std::printf("best %lld MiB: %s %.0f GB/s (%.1f%% of nominal)\n", mib, bestName, best, 100 * best / peak);
    CK(cudaFree(buf));
  }
  return 0;
}
