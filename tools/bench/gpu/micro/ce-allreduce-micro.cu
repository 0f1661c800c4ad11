// Copy-engine all-reduce micro-benchmark (one process, every visible GPU, NVLink peer access):
// can the GPUs' copy engines move a large all-reduce's bytes faster than NCCL's ring?
//
// Rows, each the median of ITERS runs timed on the host between whole-system synchronizations:
//   nccl      ncclAllReduce (f16 sum) over a communicator of all GPUs (ncclCommInitAll)
//   ce_copy1  one copy of S (G-1)/G bytes from each GPU to its next peer (one link's CE bandwidth)
//   ce_a2a    each GPU pushes the G-1 parts of S it does not own to their owners (a reduce-scatter's
//             traffic, no sum), one stream per peer
//   ce_a2a_1s the same traffic on one stream per GPU, peers in turn
//   ce_pull_1s the a2a traffic pulled by the receivers, one stream per GPU, peers in turn
//   ce1_arK   ce_arK with one copy stream per GPU (push of round r+1 queued before the gather of r)
//   ce1p_arK  ce1_arK with the gather by pulls (the receivers copy the sums), as coconetc's code
//   ce_arK    all-reduce in K rounds: push the parts to their owners' staging (CE), the owner sums
//             its part of the round (a kernel), pushes the sum to every peer's output (CE); rounds
//             overlap through per-round events (cross-device cudaStreamWaitEvent)
// Each all-reduce row is checked against NCCL's result before its time counts. Bus bandwidth is
// 2 (G-1)/G S / time, as nccl-tests report it.
//   nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/micro/ce-allreduce-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/cem
//   LD_LIBRARY_PATH=$NC/lib /tmp/cem [MiB ...]     (NC: NCCL's root; NCCL_NVLS_ENABLE=0 for multicast off)
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "micro.cuh"

constexpr int kMaxG = 8;
constexpr int kIters = 20, kWarm = 3;

// out[i] = own[i] + sum over s of stage[s * n + i], s < peers: 16-byte vectors (n % 8 == 0).
__global__ void __launch_bounds__(512) sum_parts(__half* __restrict__ out, const __half* __restrict__ own,
                                                 const __half* __restrict__ stage, long long n, int peers) {
  const long long nv = n / 8;
  for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < nv; v += (long long)gridDim.x * blockDim.x) {
    float acc[8];
    uint4 a = __ldcs(reinterpret_cast<const uint4*>(own) + v);
    const __half* ah = reinterpret_cast<const __half*>(&a);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = __half2float(ah[e]);
    for (int s = 0; s < peers; ++s) {
      uint4 b = __ldcs(reinterpret_cast<const uint4*>(stage + s * n) + v);
      const __half* bh = reinterpret_cast<const __half*>(&b);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += __half2float(bh[e]);
    }
    uint4 r;
    __half* rh = reinterpret_cast<__half*>(&r);
#pragma unroll
    for (int e = 0; e < 8; ++e) rh[e] = __float2half(acc[e]);
    reinterpret_cast<uint4*>(out)[v] = r;
  }
}

// *worst = max over i of |a[i] - b[i]| (as float bits: non-negative floats order as ints).
__global__ void max_diff(const __half* a, const __half* b, long long n, unsigned* worst) {
  float m = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    m = fmaxf(m, fabsf(__half2float(a[i]) - __half2float(b[i])));
  atomicMax(worst, __float_as_uint(m));
}

struct Gpu {
  __half *in, *out, *stage, *ref;
  cudaStream_t main, peer[kMaxG], sum;
  std::vector<cudaEvent_t> ev;  // pool, reused per run
  int sms;
};

int main(int argc, char** argv) {
  int G = 0;
  CK(cudaGetDeviceCount(&G));
  G = std::min(G, kMaxG);
  std::vector<long long> mibs;
  for (int a = 1; a < argc; ++a) mibs.push_back(std::atoll(argv[a]));
  if (mibs.empty()) mibs = {16, 64, 256, 1024};
  long long maxBytes = *std::max_element(mibs.begin(), mibs.end()) << 20;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int ver;
  CK(ncclGetVersion(&ver));
  std::printf("# %d x %s, NCCL %d, NCCL_NVLS_ENABLE=%s\n", G, prop.name, ver,
              std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "(unset)");
  std::vector<Gpu> g(G);
  std::vector<ncclComm_t> comms(G);
  std::vector<int> devs(G);
  for (int d = 0; d < G; ++d) devs[d] = d;
  CK(ncclCommInitAll(comms.data(), G, devs.data()));
  for (int d = 0; d < G; ++d) {
    CK(cudaSetDevice(d));
    for (int p = 0; p < G; ++p)
      if (p != d) CK(cudaDeviceEnablePeerAccess(p, 0));
    CK(cudaMalloc(&g[d].in, maxBytes));
    CK(cudaMalloc(&g[d].out, maxBytes));
    CK(cudaMalloc(&g[d].ref, maxBytes));
    CK(cudaMalloc(&g[d].stage, maxBytes));  // (G-1) parts of S / G per round, rounds in turn: < S
    CK(cudaStreamCreateWithFlags(&g[d].main, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g[d].sum, cudaStreamNonBlocking));
    for (int p = 0; p < G; ++p) CK(cudaStreamCreateWithFlags(&g[d].peer[p], cudaStreamNonBlocking));
    g[d].ev.resize(4096);
    for (auto& e : g[d].ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    g[d].sms = prop.multiProcessorCount;
    fill<<<1024, 256>>>(g[d].in, maxBytes / 2, 17u + d, 1.f);
    CK(cudaGetLastError());
  }
  auto syncAll = [&] {
    for (int d = 0; d < G; ++d) {
      CK(cudaSetDevice(d));
      CK(cudaDeviceSynchronize());
    }
  };
  syncAll();
  auto time = [&](const std::function<void()>& run) {
    for (int w = 0; w < kWarm; ++w) run();
    syncAll();
    std::vector<double> ts;
    for (int it = 0; it < kIters; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      run();
      syncAll();
      ts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
  };
  for (long long mib : mibs) {
    const long long bytes = mib << 20, n = bytes / 2;
    const double busFactor = 2.0 * (G - 1) / G * bytes / 1e3;  // bytes -> GB/s with time in us
    auto nccl = [&] {
      CK(ncclGroupStart());
      for (int d = 0; d < G; ++d) CK(ncclAllReduce(g[d].in, g[d].out, n, ncclFloat16, ncclSum, comms[d], g[d].main));
      CK(ncclGroupEnd());
    };
    nccl();
    syncAll();
    for (int d = 0; d < G; ++d) CK(cudaMemcpy(g[d].ref, g[d].out, bytes, cudaMemcpyDeviceToDevice));
    auto report = [&](const char* name, double us, bool checked) {
      double worst = 0;
      if (checked) {
        for (int d = 0; d < G; ++d) {
          CK(cudaSetDevice(d));
          unsigned* w;
          unsigned h = 0;
          CK(cudaMalloc(&w, sizeof(unsigned)));
          CK(cudaMemset(w, 0, sizeof(unsigned)));
          max_diff<<<1024, 256>>>(g[d].out, g[d].ref, n, w);
          CK(cudaGetLastError());
          CK(cudaMemcpy(&h, w, sizeof h, cudaMemcpyDeviceToHost));
          CK(cudaFree(w));
          float f;
          std::memcpy(&f, &h, sizeof f);
          worst = std::max(worst, (double)f);
        }
      }
      std::printf("S=%5lld MiB %-10s %9.1f us  busbw %6.1f GB/s%s", mib, name, us, busFactor / us, checked ? "" : "\n");
      if (checked) std::printf("  max |diff| vs nccl %.3g%s\n", worst, worst <= 0.02 ? "" : "  MISMATCH");
    };
    report("nccl", time(nccl), false);
    // One link: GPU d -> d+1, (G-1)/G of S.
    auto copy1 = [&] {
      const long long part = bytes / G * (G - 1);
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMemcpyAsync(g[(d + 1) % G].stage, g[d].in, part, cudaMemcpyDeviceToDevice, g[d].peer[0]));
      }
    };
    // A traffic row: each GPU moves (G-1)/G of S (out of it, or into it for pulls).
    auto traffic = [&](const char* name, const std::function<void()>& run, const char* dir) {
      double us = time(run);
      std::printf("S=%5lld MiB %-10s %9.1f us  %6.1f GB/s per GPU %s\n", mib, name, us, (double)(bytes / G * (G - 1)) / 1e3 / us, dir);
    };
    traffic("ce_copy1", copy1, "out");
    // Reduce-scatter traffic by CE: part p of d's input to p's stage slot.
    auto a2a = [&] {
      const long long part = n / G;
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        for (int p = 0; p < G; ++p) {
          if (p == d) continue;
          const int slot = (d - p + G) % G - 1;  // 0 .. G-2 at p
          CK(cudaMemcpyAsync(g[p].stage + slot * part, g[d].in + p * part, part * 2, cudaMemcpyDeviceToDevice, g[d].peer[p]));
        }
      }
    };
    traffic("ce_a2a", a2a, "out");
    // The same traffic on one stream per GPU, peers in turn (d -> d+1, d+2, ...: at any moment
    // every GPU sends to one peer and receives from one).
    auto a2a1 = [&] {
      const long long part = n / G;
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        for (int k = 1; k < G; ++k) {
          const int p = (d + k) % G, slot = (d - p + G) % G - 1;
          CK(cudaMemcpyAsync(g[p].stage + slot * part, g[d].in + p * part, part * 2, cudaMemcpyDeviceToDevice, g[d].peer[0]));
        }
      }
    };
    traffic("ce_a2a_1s", a2a1, "out");
    // The same traffic pulled: each GPU copies its part of every peer's input from that peer (the
    // copy runs on the receiver's stream), one stream per GPU, peers in turn.
    auto pull1 = [&] {
      const long long part = n / G;
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        for (int k = 1; k < G; ++k) {
          const int p = (d + k) % G, slot = k - 1;
          CK(cudaMemcpyAsync(g[d].stage + slot * part, g[p].in + d * part, part * 2, cudaMemcpyDeviceToDevice, g[d].peer[0]));
        }
      }
    };
    traffic("ce_pull_1s", pull1, "in");
    // All-reduce by CE in K rounds, one copy stream per GPU: push(r), gather(r-1), push(r+1), ...
    // pullGather: the gather by pulls (each GPU copies the other owners' sums from them, as the
    // generated code does: a user's output is no window, so no peer can push into it).
    for (int pullGather : {0, 1})
    for (int K : {1, 2, 4, 8, 16}) {
      const long long piece = n / ((long long)K * G);
      if (piece % 8 != 0 || piece == 0) continue;
      auto ar1 = [&] {
        for (int r = 0; r <= K; ++r) {
          if (r < K) {
            const long long base = (long long)r * n / K;
            for (int d = 0; d < G; ++d) {
              CK(cudaSetDevice(d));
              for (int k = 1; k < G; ++k) {
                const int p = (d + k) % G, slot = (d - p + G) % G - 1;
                if (r >= 2) CK(cudaStreamWaitEvent(g[d].peer[0], g[p].ev[(r - 2) * G + p + 2048], 0));
                __half* dst = g[p].stage + ((long long)(r % 2) * (G - 1) + slot) * piece;
                CK(cudaMemcpyAsync(dst, g[d].in + base + p * piece, piece * 2, cudaMemcpyDeviceToDevice, g[d].peer[0]));
              }
              CK(cudaEventRecord(g[d].ev[r], g[d].peer[0]));
            }
          }
          if (r >= 1) {
            const int q = r - 1;
            const long long base = (long long)q * n / K;
            for (int p = 0; p < G; ++p) {
              CK(cudaSetDevice(p));
              for (int d = 0; d < G; ++d)
                if (d != p) CK(cudaStreamWaitEvent(g[p].sum, g[d].ev[q], 0));
              const long long off = base + p * piece;
              sum_parts<<<g[p].sms * 2, 512, 0, g[p].sum>>>(g[p].out + off, g[p].in + off, g[p].stage + (long long)(q % 2) * (G - 1) * piece,
                                                           piece, G - 1);
              CK(cudaGetLastError());
              CK(cudaEventRecord(g[p].ev[q * G + p + 2048], g[p].sum));
              if (pullGather) continue;
              CK(cudaStreamWaitEvent(g[p].peer[0], g[p].ev[q * G + p + 2048], 0));
              for (int k = 1; k < G; ++k) {
                const int t = (p + k) % G;
                CK(cudaMemcpyAsync(g[t].out + off, g[p].out + off, piece * 2, cudaMemcpyDeviceToDevice, g[p].peer[0]));
              }
            }
            if (pullGather)
              for (int t = 0; t < G; ++t) {
                CK(cudaSetDevice(t));
                for (int k = 1; k < G; ++k) {
                  const int p = (t + k) % G;
                  const long long off = base + p * piece;
                  CK(cudaStreamWaitEvent(g[t].peer[0], g[p].ev[q * G + p + 2048], 0));
                  CK(cudaMemcpyAsync(g[t].out + off, g[p].out + off, piece * 2, cudaMemcpyDeviceToDevice, g[t].peer[0]));
                }
              }
          }
        }
      };
      char name[32];
      std::snprintf(name, sizeof name, pullGather ? "ce1p_ar%d" : "ce1_ar%d", K);
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMemset(g[d].out, 0, bytes));
      }
      ar1();
      syncAll();
      double us = time(ar1);
      report(name, us, true);
    }
    // All-reduce by CE in K rounds.
    for (int K : {1, 2, 4, 8, 16}) {
      const long long piece = n / ((long long)K * G);
      if (piece % 8 != 0 || piece == 0) continue;
      auto ar = [&] {
        int e = 0;  // events: per round, per device: arrived[d][src], summed[d]
        std::vector<cudaEvent_t> pushed((size_t)G * G), summed(G);
        for (int r = 0; r < K; ++r) {
          const long long base = (long long)r * n / K;
          // Push the parts to their owners: d's part p of round r into p's stage slot (r, slot).
          for (int d = 0; d < G; ++d) {
            CK(cudaSetDevice(d));
            for (int p = 0; p < G; ++p) {
              if (p == d) continue;
              const int slot = (d - p + G) % G - 1;
              // The stage's round buffers alternate (2 in use: round r's slot reused at r + 2,
              // after round r's sum, which the push stream waits for below).
              __half* dst = g[p].stage + ((long long)(r % 2) * (G - 1) + slot) * piece;
              if (r >= 2) CK(cudaStreamWaitEvent(g[d].peer[p], g[p].ev[(r - 2) * G + p + 2048], 0));
              CK(cudaMemcpyAsync(dst, g[d].in + base + p * piece, piece * 2, cudaMemcpyDeviceToDevice, g[d].peer[p]));
              pushed[d * G + p] = g[d].ev[e + d * G + p];
              CK(cudaEventRecord(pushed[d * G + p], g[d].peer[p]));
            }
          }
          // Owners sum their part of the round, then push the sum to every peer's output.
          for (int p = 0; p < G; ++p) {
            CK(cudaSetDevice(p));
            for (int d = 0; d < G; ++d)
              if (d != p) CK(cudaStreamWaitEvent(g[p].sum, pushed[d * G + p], 0));
            const long long off = base + p * piece;
            sum_parts<<<g[p].sms * 2, 512, 0, g[p].sum>>>(g[p].out + off, g[p].in + off, g[p].stage + (long long)(r % 2) * (G - 1) * piece,
                                                         piece, G - 1);
            CK(cudaGetLastError());
            summed[p] = g[p].ev[r * G + p + 2048];
            CK(cudaEventRecord(summed[p], g[p].sum));
            for (int q = 0; q < G; ++q) {
              if (q == p) continue;
              CK(cudaStreamWaitEvent(g[p].peer[q], summed[p], 0));
              CK(cudaMemcpyAsync(g[q].out + off, g[p].out + off, piece * 2, cudaMemcpyDeviceToDevice, g[p].peer[q]));
            }
          }
          e += G * G;
        }
      };
      char name[32];
      std::snprintf(name, sizeof name, "ce_ar%d", K);
      for (int d = 0; d < G; ++d) {
        CK(cudaSetDevice(d));
        CK(cudaMemset(g[d].out, 0, bytes));
      }
      ar();
      syncAll();
      double us = time(ar);
      report(name, us, true);
    }
  }
  for (auto c : comms) ncclCommDestroy(c);
  return 0;
}
