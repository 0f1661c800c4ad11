// SM-driven NVLink transfer micro-benchmark (one process, every visible GPU, peer access): how
// fast do the device-group kernels' transfer loops move a reduce-scatter's and an all-gather's
// bytes, against NCCL's own reduce-scatter and all-gather of the same bytes, and which loop shape
// moves them faster? The generated kernels push (coconet_rt::pushSlices: slice p of this GPU's
// input to slot `me` of GPU p's staging area) and pull (coconet_rt::pullSlices: every peer's
// slice into this GPU's output); this file copies those loops with raw peer pointers in place of
// NCCL's windows and varies what the runtime fixes: blocks, threads per block, and units (16-byte
// vectors) per thread whose loads are issued before their stores (the runtime: 1 unit, up to 4
// peers' loads at once, 128 blocks of 512 threads).
//
// Rows, S bytes of f16 per GPU (a reduce-scatter's input, an all-gather's output); each GPU sends
// (G-1)/G S over NVLink:
//   nccl_rs               ncclReduceScatter (f16 sum) of S per GPU
//   nccl_ag               ncclAllGather of S/G per GPU into S
//   push B x T u U        every GPU pushes its G slices (its own into its own slot) on B blocks of
//                         T threads, U units per thread in flight
//   pull B x T u U        every GPU pulls the G-1 peers' slices into its output
// Each row runs on every GPU at once, queued behind a kernel that holds each stream until the host
// releases them all; its time is the slowest GPU's (events on each GPU's stream around the work),
// the median of kIters runs, each run between whole-system synchronizations; the
// first run of every row is checked byte for byte (push: every slot holds its sender's slice;
// pull: every output part its owner's slice). GB/s: (G-1)/G S / time, per GPU, each direction.
//   nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/micro/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt
//   LD_LIBRARY_PATH=$NC/lib /tmp/smt [dyn] [MiB ...]     (NC: NCCL's root; NCCL_NVLS_ENABLE=0 for multicast off)
// `dyn`: the runtime's static parts (128 and 64 blocks of 512 threads, one unit in flight) against
// the same blocks claiming tiles through a counter: the push in block tiles of 1, 2, 4 or 8 units
// per thread (push_dyn_k) and in warp tiles of 8 or 32 units (push_dyn_warp_k), the pull in warp
// tiles of 8 or 32 units (pull_dyn_k); each with its
// blocks' end spread (%globaltimer: the latest end less the earliest and less the mean, the last
// run's worst GPU).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "micro.cuh"

constexpr int kMaxG = 8;
constexpr int kIters = 20, kWarm = 3;

struct Peers {
  __half* p[kMaxG];
};

// One 16-byte vector (8 halves).
__device__ __forceinline__ uint4 ld16(const __half* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void st16(__half* p, uint4 x) { *reinterpret_cast<uint4*>(p) = x; }

// Peers whose vectors a thread loads before it stores them, as the runtime's kPeersInFlight.
constexpr int kGroup = 4;

// The push loop: units of 8 elements of each slice (m elements, a multiple of 8); thread t takes
// units t, t + nth, ... and, U units at a time and kGroup peers at a time, loads their slices'
// vectors, then stores each to its slot (`me`) on the GPU that owns the slice. U = 1 is the
// runtime's loop. pushRange: units j, j + stride, ... below `end`.
template <int U>
__device__ __forceinline__ void pushRange(const Peers& stage, const __half* __restrict__ in, long long m, int G, int me, long long j,
                                          long long end, long long stride) {
  for (; j < end; j += stride * U) {
    for (int p0 = 0; p0 < G; p0 += kGroup) {
      uint4 x[U][kGroup];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < kGroup; ++q)
          if (p0 + q < G && j + u * stride < end) x[u][q] = ld16(in + (p0 + q) * m + (j + u * stride) * 8);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < kGroup; ++q)
          if (p0 + q < G && j + u * stride < end) st16(stage.p[p0 + q] + me * m + (j + u * stride) * 8, x[u][q]);
    }
  }
}
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// `stamps` (or null): every block's entry at [b] and end at [gridDim.x + b] (%globaltimer).
template <int U>
__global__ void push_k(Peers stage, const __half* __restrict__ in, long long m, int G, int me, unsigned long long* stamps) {
  const unsigned long long t0 = gtime();
  const long long nth = (long long)gridDim.x * blockDim.x;
  pushRange<U>(stage, in, m, G, me, blockIdx.x * (long long)blockDim.x + threadIdx.x, m / 8, nth);
  if (stamps) {
    __syncthreads();
    if (threadIdx.x == 0) stamps[blockIdx.x] = t0, stamps[gridDim.x + blockIdx.x] = gtime();
  }
}
// A claiming kernel's end: the block's entry and end into `stamps` (if any), and the last block
// to finish (ctr[1]) zeroes the counters for the next launch.
__device__ __forceinline__ void claimsExit(unsigned long long* ctr, unsigned long long* stamps, unsigned long long t0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (stamps) stamps[blockIdx.x] = t0, stamps[gridDim.x + blockIdx.x] = gtime();
    if (atomicAdd(&ctr[1], 1ull) == gridDim.x - 1) {
      ctr[0] = 0;
      ctr[1] = 0;
      __threadfence();
    }
  }
}
// Each warp claims tiles of 32 * tileUnits of `units` through ctr[0] (the next claim's atomic
// issued before the current tile moves, read after it) and moves each: move(first unit, end, 32).
template <class Move>
__device__ __forceinline__ void warpClaims(long long units, int tileUnits, unsigned long long* ctr, Move&& move) {
  const long long tile = 32LL * tileUnits, tiles = (units + tile - 1) / tile;
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned long long c = 0;
  if (lane == 0) c = atomicAdd(&ctr[0], 1ull);
  long long t = static_cast<long long>(__shfl_sync(0xffffffffu, c, 0));
  while (t < tiles) {
    if (lane == 0) c = atomicAdd(&ctr[0], 1ull);
    const long long lo = t * tile;
    move(lo + lane, lo + tile < units ? lo + tile : units);
    t = static_cast<long long>(__shfl_sync(0xffffffffu, c, 0));
  }
}
// The same bytes with each block claiming tiles of blockDim.x * tileUnits units through a counter
// (ctr[0]; the next claim asked while the current tile moves) instead of every nth unit: blocks
// that move faster take more.
template <int U>
__global__ void push_dyn_k(Peers stage, const __half* __restrict__ in, long long m, int G, int me, int tileUnits,
                           unsigned long long* ctr, unsigned long long* stamps) {
  const unsigned long long t0 = gtime();
  const long long units = m / 8, tile = (long long)blockDim.x * tileUnits, tiles = (units + tile - 1) / tile;
  __shared__ long long claim[2];
  if (threadIdx.x == 0) claim[0] = static_cast<long long>(atomicAdd(&ctr[0], 1ull));
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const long long t = claim[k];
    if (t >= tiles) break;
    if (threadIdx.x == 0) claim[k ^ 1] = static_cast<long long>(atomicAdd(&ctr[0], 1ull));
    const long long lo = t * tile;
    pushRange<U>(stage, in, m, G, me, lo + threadIdx.x, lo + tile < units ? lo + tile : units, blockDim.x);
    __syncthreads();
  }
  claimsExit(ctr, stamps, t0);
}
// The push with each warp claiming tiles of 32 * tileUnits units (the generated LAMB prototype's
// warp tiles, proto_dynpush.py).
template <int U>
__global__ void push_dyn_warp_k(Peers stage, const __half* __restrict__ in, long long m, int G, int me, int tileUnits,
                                unsigned long long* ctr, unsigned long long* stamps) {
  const unsigned long long t0 = gtime();
  warpClaims(m / 8, tileUnits, ctr, [&](long long j, long long end) { pushRange<U>(stage, in, m, G, me, j, end, 32); });
  claimsExit(ctr, stamps, t0);
}

// The pull loop: out[p * m + i] = GPU p's slice element i for every peer p != me, U units and
// kGroup peers at a time; pullRange: units j, j + stride, ... below `end`.
template <int U>
__device__ __forceinline__ void pullRange(const Peers& slice, __half* __restrict__ out, long long m, int G, int me, long long j,
                                          long long end, long long stride) {
  for (; j < end; j += stride * U) {
    for (int p0 = 0; p0 < G; p0 += kGroup) {
      uint4 y[U][kGroup];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < kGroup; ++q)
          if (p0 + q < G && p0 + q != me && j + u * stride < end) y[u][q] = ld16(slice.p[p0 + q] + (j + u * stride) * 8);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < kGroup; ++q)
          if (p0 + q < G && p0 + q != me && j + u * stride < end) st16(out + (p0 + q) * m + (j + u * stride) * 8, y[u][q]);
    }
  }
}
template <int U>
__global__ void pull_k(Peers slice, __half* __restrict__ out, long long m, int G, int me, unsigned long long* stamps) {
  const unsigned long long t0 = gtime();
  pullRange<U>(slice, out, m, G, me, blockIdx.x * (long long)blockDim.x + threadIdx.x, m / 8, (long long)gridDim.x * blockDim.x);
  if (stamps) {
    __syncthreads();
    if (threadIdx.x == 0) stamps[blockIdx.x] = t0, stamps[gridDim.x + blockIdx.x] = gtime();
  }
}
// The pull with each warp claiming tiles of 32 * tileUnits units (warpClaims).
template <int U>
__global__ void pull_dyn_k(Peers slice, __half* __restrict__ out, long long m, int G, int me, int tileUnits, unsigned long long* ctr,
                           unsigned long long* stamps) {
  const unsigned long long t0 = gtime();
  warpClaims(m / 8, tileUnits, ctr, [&](long long j, long long end) { pullRange<U>(slice, out, m, G, me, j, end, 32); });
  claimsExit(ctr, stamps, t0);
}

// Holds a stream until the host sets go[0], so that every GPU's work is queued before any starts
// and its start event is not delayed by the host's launches; gives up after a second (should a
// call on the host wait for the GPU meanwhile) and says so in go[1].
__global__ void gate(volatile int* go) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (go[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > 1000000000ull) {
      go[1] = 1;
      break;
    }
  }
}

struct Shape {
  int blocks, threads, units;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int G = 0;
  CK(cudaGetDeviceCount(&G));
  if (G < 2) {
    std::printf("sm-transfer-micro: needs 2 or more GPUs, found %d\n", G);
    return 1;
  }
  G = std::min(G, kMaxG);
  for (int a = 0; a < G; ++a) {
    CK(cudaSetDevice(a));
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      int ok = 0;
      CK(cudaDeviceCanAccessPeer(&ok, a, b));
      if (!ok) {
        std::printf("sm-transfer-micro: GPU %d cannot address GPU %d\n", a, b);
        return 1;
      }
      CK(cudaDeviceEnablePeerAccess(b, 0));
    }
  }
  // `dyn` first: only the push's static parts against tiles claimed by the blocks, with their
  // blocks' end spread
  const bool dyn = argc > 1 && std::strcmp(argv[1], "dyn") == 0;
  std::vector<int> mibs;
  for (int i = dyn ? 2 : 1; i < argc; ++i) mibs.push_back(std::atoi(argv[i]));
  if (mibs.empty()) mibs = {8, 32, 128};
  std::vector<ncclComm_t> comms(G);
  std::vector<int> devs(G);
  for (int g = 0; g < G; ++g) devs[g] = g;
  CK(ncclCommInitAll(comms.data(), G, devs.data()));
  std::vector<cudaStream_t> st(G);
  std::vector<cudaEvent_t> e0(G), e1(G);
  for (int g = 0; g < G; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
  }
  volatile int* go = nullptr;  // the gate's flags, in host memory every GPU reads
  CK(cudaHostAlloc((void**)&go, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  go[1] = 0;
  const Shape shapes[] = {{128, 512, 1}, {128, 512, 2}, {128, 512, 4}, {64, 512, 1}, {64, 512, 4},  {32, 512, 4},
                          {32, 1024, 2}, {132, 512, 2}, {264, 512, 1}, {264, 512, 2}, {128, 256, 4}, {16, 1024, 2}};
  int nsm = 0;
  CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# sm-transfer-micro: %d x %s (%d SMs), NCCL %d.%d.%d; median of %d runs; GB/s per GPU each way = (G-1)/G S / time\n", G, prop.name,
              nsm, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, kIters);
  for (int mib : mibs) {
    const long long S = (long long)mib << 20, n = S / 2, m = n / G;  // elements: per GPU, per slice
    if (m % 8 != 0 || m * G != n) {
      std::printf("sm-transfer-micro: %d MiB does not split into %d slices of whole 16-byte vectors\n", mib, G);
      return 1;
    }
    std::vector<__half*> in(G), stage(G), slice(G), out(G);
    for (int g = 0; g < G; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaMalloc(&in[g], S));
      CK(cudaMalloc(&stage[g], S));
      CK(cudaMalloc(&out[g], S));
      CK(cudaMalloc(&slice[g], S / G));
      fill<<<1024, 256>>>(in[g], n, 1000u + g, 2.0f);
      fill<<<1024, 256>>>(slice[g], m, 2000u + g, 2.0f);
      CK(cudaGetLastError());
    }
    for (int g = 0; g < G; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaDeviceSynchronize());
    }
    auto freeBuffers = [&] {
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaFree(in[g]));
        CK(cudaFree(stage[g]));
        CK(cudaFree(out[g]));
        CK(cudaFree(slice[g]));
      }
    };
    Peers stageP{}, sliceP{};
    for (int g = 0; g < G; ++g) stageP.p[g] = stage[g], sliceP.p[g] = slice[g];
    const double bytesOut = double(G - 1) / G * S;
    // Runs `launch(g)` on every GPU kIters times (after kWarm), returns the median of the slowest
    // GPU's event time per run, in microseconds; `check` after the first run.
    auto timeRow = [&](auto launch, auto check) {
      std::vector<double> t;
      for (int it = 0; it < kWarm + kIters; ++it) {
        go[0] = 0;
        for (int g = 0; g < G; ++g) {
          CK(cudaSetDevice(g));
          gate<<<1, 1, 0, st[g]>>>(go);
          CK(cudaGetLastError());
          CK(cudaEventRecord(e0[g], st[g]));
        }
        CK(ncclGroupStart());  // (NCCL's calls on several GPUs from one thread; kernels unaffected)
        for (int g = 0; g < G; ++g) {
          CK(cudaSetDevice(g));
          launch(g);
        }
        CK(ncclGroupEnd());
        for (int g = 0; g < G; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaEventRecord(e1[g], st[g]));
        }
        __sync_synchronize();
        go[0] = 1;
        double worst = 0;
        for (int g = 0; g < G; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaStreamSynchronize(st[g]));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
          worst = std::max(worst, 1000.0 * ms);
        }
        if (it == 0 && !check()) return -1.0;
        if (go[1] != 0) return -2.0;
        if (it >= kWarm) t.push_back(worst);
      }
      return median(t);
    };
    auto report = [&](const char* row, double us) {
      if (us == -2.0)
        std::printf("%4d MiB  %-22s  NOT TIMED (a gate gave up: the host waited for a GPU while the streams were held)\n", mib, row);
      else if (us < 0)
        std::printf("%4d MiB  %-22s  CHECK FAILED\n", mib, row);
      else
        std::printf("%4d MiB  %-22s  %9.1f us  %6.1f GB/s\n", mib, row, us, bytesOut / (us * 1e-6) / 1e9);
    };
    // host copies for the checks
    std::vector<std::vector<__half>> hin(G, std::vector<__half>(n)), hslice(G, std::vector<__half>(m));
    for (int g = 0; g < G; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaMemcpy(hin[g].data(), in[g], S, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hslice[g].data(), slice[g], S / G, cudaMemcpyDeviceToHost));
    }
    std::vector<__half> h(n);
    auto checkPush = [&]() {  // slot q of GPU g's stage = slice g of GPU q's input
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaMemcpy(h.data(), stage[g], S, cudaMemcpyDeviceToHost));
        for (int q = 0; q < G; ++q)
          if (std::memcmp(h.data() + q * m, hin[q].data() + g * m, m * sizeof(__half)) != 0) return false;
      }
      return true;
    };
    auto checkPull = [&]() {  // part p of GPU g's output = GPU p's slice, p != g
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaMemcpy(h.data(), out[g], S, cudaMemcpyDeviceToHost));
        for (int p = 0; p < G; ++p)
          if (p != g && std::memcmp(h.data() + p * m, hslice[p].data(), m * sizeof(__half)) != 0) return false;
      }
      return true;
    };
    auto clear = [&](std::vector<__half*>& bufs) {
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaMemset(bufs[g], 0, S));
        CK(cudaDeviceSynchronize());
      }
    };
    if (dyn) {
      // per GPU: the claim counters and every block's entry and end
      std::vector<unsigned long long*> ctr(G), stamps(G);
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaMalloc(&ctr[g], 2 * sizeof(unsigned long long)));
        CK(cudaMemset(ctr[g], 0, 2 * sizeof(unsigned long long)));
        CK(cudaMalloc(&stamps[g], 2 * 1024 * sizeof(unsigned long long)));
        CK(cudaDeviceSynchronize());
      }
      // the last run's block ends, us: the latest end less the earliest and less the mean, worst GPU
      auto spread = [&](int blocks) {
        double worstRange = 0, worstMean = 0;
        std::vector<unsigned long long> h(2 * blocks);
        for (int g = 0; g < G; ++g) {
          CK(cudaSetDevice(g));
          CK(cudaMemcpy(h.data(), stamps[g], h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          unsigned long long lo = ~0ull, hi = 0;
          double sum = 0;
          for (int b = 0; b < blocks; ++b) lo = std::min(lo, h[blocks + b]), hi = std::max(hi, h[blocks + b]);
          for (int b = 0; b < blocks; ++b) sum += double(hi - h[blocks + b]);
          worstRange = std::max(worstRange, (hi - lo) / 1000.0);
          worstMean = std::max(worstMean, sum / blocks / 1000.0);
        }
        std::printf("%4d MiB  %-22s  block ends: latest - earliest %.1f us, latest - mean %.1f us (last run, worst GPU)\n", mib, "", worstRange,
                    worstMean);
      };
      char name[64];
      for (int blocks : {128, 64}) {
        // one row: `dst` cleared, then timed and checked, then its blocks' ends
        auto row = [&](std::vector<__half*>& dst, auto launch, auto check) {
          clear(dst);
          report(name, timeRow([&](int g) {
            launch(g);
            CK(cudaGetLastError());
          }, check));
          spread(blocks);
        };
        std::snprintf(name, sizeof name, "push %dx512 u1", blocks);
        row(stage, [&](int g) { push_k<1><<<blocks, 512, 0, st[g]>>>(stageP, in[g], m, G, g, stamps[g]); }, checkPush);
        for (int tu : {1, 2, 4, 8}) {
          std::snprintf(name, sizeof name, "push dyn %dx512 t%d", blocks, tu);
          row(stage, [&](int g) { push_dyn_k<1><<<blocks, 512, 0, st[g]>>>(stageP, in[g], m, G, g, tu, ctr[g], stamps[g]); }, checkPush);
        }
        for (int tu : {8, 32}) {
          std::snprintf(name, sizeof name, "push dyn-warp %dx512 w%d", blocks, tu);
          row(stage, [&](int g) { push_dyn_warp_k<1><<<blocks, 512, 0, st[g]>>>(stageP, in[g], m, G, g, tu, ctr[g], stamps[g]); }, checkPush);
        }
        std::snprintf(name, sizeof name, "pull %dx512 u1", blocks);
        row(out, [&](int g) { pull_k<1><<<blocks, 512, 0, st[g]>>>(sliceP, out[g], m, G, g, stamps[g]); }, checkPull);
        for (int tu : {8, 32}) {
          std::snprintf(name, sizeof name, "pull dyn-warp %dx512 w%d", blocks, tu);
          row(out, [&](int g) { pull_dyn_k<1><<<blocks, 512, 0, st[g]>>>(sliceP, out[g], m, G, g, tu, ctr[g], stamps[g]); }, checkPull);
        }
      }
      for (int g = 0; g < G; ++g) {
        CK(cudaSetDevice(g));
        CK(cudaFree(ctr[g]));
        CK(cudaFree(stamps[g]));
      }
      freeBuffers();
      continue;
    }
    // NCCL's first calls set up their connections: made once outside the gate, then synchronized.
    CK(ncclGroupStart());
    for (int g = 0; g < G; ++g) {
      CK(ncclReduceScatter(in[g], out[g], m, ncclHalf, ncclSum, comms[g], st[g]));
      CK(ncclAllGather(slice[g], out[g], m, ncclHalf, comms[g], st[g]));
    }
    CK(ncclGroupEnd());
    for (int g = 0; g < G; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaStreamSynchronize(st[g]));
    }
    // NCCL's reduce-scatter and all-gather (their results are NCCL's business: unchecked here)
    report("nccl_rs", timeRow([&](int g) { CK(ncclReduceScatter(in[g], out[g], m, ncclHalf, ncclSum, comms[g], st[g])); }, [] { return true; }));
    report("nccl_ag", timeRow([&](int g) { CK(ncclAllGather(slice[g], out[g], m, ncclHalf, comms[g], st[g])); }, [] { return true; }));
    for (const Shape& sh : shapes) {
      char name[64];
      // a shape whose blocks cannot run at its registers is reported, not launched
      auto fits = [&](const void* k) {
        int per = 0;
        CK(cudaSetDevice(0));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, sh.threads, 0));
        return per > 0;
      };
      const void* pk = sh.units == 1 ? (const void*)push_k<1> : sh.units == 2 ? (const void*)push_k<2> : (const void*)push_k<4>;
      const void* lk = sh.units == 1 ? (const void*)pull_k<1> : sh.units == 2 ? (const void*)pull_k<2> : (const void*)pull_k<4>;
      if (!fits(pk) || !fits(lk)) {
        std::printf("%4d MiB  %dx%d u%d: not run (a block of this size does not fit an SM at these kernels' registers)\n", mib, sh.blocks,
                    sh.threads, sh.units);
        continue;
      }
      auto launchPush = [&](int g) {
        switch (sh.units) {
          case 1: push_k<1><<<sh.blocks, sh.threads, 0, st[g]>>>(stageP, in[g], m, G, g, nullptr); break;
          case 2: push_k<2><<<sh.blocks, sh.threads, 0, st[g]>>>(stageP, in[g], m, G, g, nullptr); break;
          default: push_k<4><<<sh.blocks, sh.threads, 0, st[g]>>>(stageP, in[g], m, G, g, nullptr); break;
        }
        CK(cudaGetLastError());
      };
      auto launchPull = [&](int g) {
        switch (sh.units) {
          case 1: pull_k<1><<<sh.blocks, sh.threads, 0, st[g]>>>(sliceP, out[g], m, G, g, nullptr); break;
          case 2: pull_k<2><<<sh.blocks, sh.threads, 0, st[g]>>>(sliceP, out[g], m, G, g, nullptr); break;
          default: pull_k<4><<<sh.blocks, sh.threads, 0, st[g]>>>(sliceP, out[g], m, G, g, nullptr); break;
        }
        CK(cudaGetLastError());
      };
      clear(stage);
      std::snprintf(name, sizeof name, "push %dx%d u%d", sh.blocks, sh.threads, sh.units);
      report(name, timeRow(launchPush, checkPush));
      clear(out);
      std::snprintf(name, sizeof name, "pull %dx%d u%d", sh.blocks, sh.threads, sh.units);
      report(name, timeRow(launchPull, checkPull));
    }
    freeBuffers();
  }
  for (int g = 0; g < G; ++g) CK(ncclCommDestroy(comms[g]));
  CK(cudaFreeHost((void*)go));
  return 0;
}
