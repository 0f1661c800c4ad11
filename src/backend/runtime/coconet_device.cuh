// coconet_device.cuh: collectives as kernels over NCCL's device API, for programs compiled with
// `coconetc compile --device-collectives`. Written into the output folder beside
// coconet_runtime.cuh when a program uses it.
//
// Every rank of the (single-node) communicator owns symmetric windows (ncclMemAlloc'd and
// registered with ncclCommWindowRegister); ncclGetLsaPointer turns (window, offset, peer) into
// an address this GPU loads from or stores to over NVLink. Kernels synchronize the ranks with
// LSA barriers, one per block index: block b of every rank handles the same elements, so a
// barrier of block b orders exactly the accesses that conflict.
//
// Reductions sum the ranks' values in rank order in f32 and round once, as the reference
// interpreter does.
#pragma once

#include <cuda/atomic>
#include <nccl_device.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coconet_runtime.cuh"

namespace coconet_rt {

constexpr int kDevThreads = 512;    // threads per block of every device-collective kernel
constexpr int kDevMaxBlocks = 128;  // blocks of a kernel whose blocks take LSA barriers, by default
constexpr int kDevBarriers = 512;   // LSA barriers of the device communicator (barrierBlocks' most)
// An allreduce (or a fused group's one-shot form) of at most oneShotMaxBytes(P) bytes per rank
// runs one-shot: every rank pushes its whole buffer to every rank and sums locally (one
// barrier); larger ones run two-shot: a reduce-scatter by pushes, then an all-gather by pulls
// (two barriers). Each rank sends (P - 1) times its bytes one-shot against 2 (P - 1) / P times
// two-shot: as many on two ranks, where the one-shot form stays ahead for longer. Chosen by
// measurement on H200: on 4 ranks one-shot ties two-shot at 512 KiB and loses from 1 MiB; on 2
// ranks it wins up to 8 MiB and loses or ties at 16 MiB.
constexpr size_t kOneShotMaxBytes = 512 * 1024;
// An allreduce of at most llMaxBytes(P) per rank runs in the LL form (dev_allreduce_ll: flags in
// the data, no barrier) instead, unless the schedule asks for another form; past that, up to
// ll128MaxBytes(P), in the LL128 form (dev_allreduce_ll128: 120 data bytes and a flag in 128):
// LL to 256 KiB and LL128 to 2 MiB on two ranks, LL to 32 KiB and LL128 to 512 KiB on four
// (LL sends twice the bytes, so it falls behind as they grow); chosen by measurement on 2 and 4
// H200, each form against the next at 16 KiB .. 8 MiB (LL128 not timed below 64 KiB). On more
// ranks neither form is measured (LL to kLLMaxBytes, no LL128).
// kLLMaxBytes is also the least LL window made (coconet_rt::llWindowBytes's floor).
constexpr size_t kLLMaxBytes = 256 * 1024;
constexpr size_t llMaxBytes(long long ranks) { return ranks == 4 ? size_t{32} << 10 : kLLMaxBytes; }
constexpr size_t ll128MaxBytes(long long ranks) {
  return ranks == 2 ? size_t(2) << 20 : ranks == 4 ? size_t{512} << 10 : 0;
}
// A fused group's one-shot form runs in LL form (its kernel's kProtoLL instantiation) up to
// llGroupMaxBytes(P) per rank: 64 KiB on two ranks, never on more. Chosen by measurement of
// Megatron's decode group on 2 and 4 H200: LL wins at 64 KiB and loses at 256 KiB on 2 ranks, and
// is no faster at either on 4 (why, where the allreduce alone wins, is not known).
constexpr size_t llGroupMaxBytes(long long ranks) { return ranks == 2 ? size_t{64} << 10 : 0; }
// ... and in LL128 form (kProtoLL128) past that up to ll128GroupMaxBytes(P): not yet measured (none).
constexpr size_t ll128GroupMaxBytes(long long /*ranks*/) { return 0; }
constexpr size_t kOneShotMaxBytesTwoRanks = size_t(8) << 20;
constexpr size_t oneShotMaxBytes(long long ranks) {
  return ranks == 2 ? kOneShotMaxBytesTwoRanks : kOneShotMaxBytes;
}
// An all_to_all outside pipelines of at most this many bytes per rank runs as one device kernel
// (dev_all_to_all); larger ones call NCCL. The kernel's copy out of its window costs a pass over
// the output. Chosen by measurement on 4 H200 against NCCL's pairs: 30% less time at 4 MiB, up
// to 10% less at 32 MiB, level or slower at 64 MiB.
constexpr size_t kAllToAllDeviceMaxBytes = size_t(32) << 20;
// Above this many bytes per rank an allreduce left to the backend calls NCCL: its ring moves
// large buffers faster than the two-shot kernel (measured on 4 H200: equal at 16 MiB, the kernel
// 8% slower at 64 MiB and 17% at 1 GiB).
constexpr size_t kTwoShotMaxBytes = 16 * 1024 * 1024;
// A fused [allreduce, members...] group past its one-shot limit runs its two-shot kernel (the
// members on each rank's slice, the last one's slices gathered) up to twoShotGroupMaxBytes(P) per
// rank, else the allreduce by the rules above and then the members' kernel: at every size on two
// and four ranks, up to kTwoShotMaxBytes on more (the allreduce's own kernel limit; not measured).
// Chosen by measurement of Megatron's epilogue (H = 4096, f16): the group's kernel took 6-19% less
// time than the allreduce and then the epilogue's kernel, 512 KiB to 128 MiB on 2 H200, 16 to
// 64 MiB on 4.
constexpr size_t twoShotGroupMaxBytes(long long ranks) { return ranks <= 4 ? ~size_t{0} : kTwoShotMaxBytes; }
// From this size per rank an allreduce left to the backend moves its bytes by copy engines
// (pushes to the owners of the parts, a sum kernel, pulls of the sums; two rounds unless
// tuned). On 2 GPUs it beats NCCL from 64 MiB (rows "allreduce 64 MiB" to "1 GiB, 2 GPUs"); on 4
// H200 it took 1.24x NCCL's time at 64 MiB, tied at 256 MiB and won at 1 GiB (row "allreduce
// 1 GiB, 4 GPUs"). The two-shot kernel runs up to 16 MiB, NCCL's call between.
inline size_t copyEngineMinBytes(int P) { return P == 2 ? size_t{64} << 20 : size_t{1} << 30; }

// Blocks for `units` work items of kDevThreads threads each: all ranks compute the same number.
inline int devBlocks(long long units) {
  long long b = (units + kDevThreads - 1) / kDevThreads;
  return static_cast<int>(b < 1 ? 1 : b > kDevMaxBlocks ? kDevMaxBlocks : b);
}

// Programmatic dependent launch (compute capability 9.0 and up). A device-group kernel is
// launched (launchDependent) so that the GPU may schedule it while the kernel before it on the
// stream still runs, once that kernel's blocks have all started and said so
// (pdlLaunchDependents, the first thing every device-group kernel does). Its blocks then wait
// at their own first statement (pdlWait: griddepcontrol.wait returns when every kernel before
// this one on the stream has completed and its writes are visible), so nothing is read sooner:
// only the launch and the blocks' start overlap the previous kernel's tail. A block scheduled
// early holds its SM slot and waits; it cannot keep the running kernel off the SMs, whose
// blocks were all resident before any of them let it launch, and the kernels whose blocks must
// all be resident at once (barriers, roles) find every SM free again when their wait returns.
// Before anything else on the stream (a copy, an event, NCCL's or cuBLAS's kernels) the launch
// is an ordinary one. COCONET_PDL=0 in the environment turns it off (A/B timings).
__device__ __forceinline__ void pdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdlLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Whether launches on the current device may overlap (its compute capability, read once per
// device, and COCONET_PDL).
inline bool pdlEnabled() {
  static const bool allowed = envValue(Env::Pdl, 1) == 1;
  static std::atomic<int> known[64] = {};  // per device: 0 not read yet, 1 no, 2 yes
  int dev = 0;
  if (!allowed || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
  int v = known[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    v = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9 ? 2 : 1;
    known[dev].store(v, std::memory_order_relaxed);
  }
  return v == 2;
}
// Whether `kernel` holds the instructions programmatic dependent launch relies on: pdlWait and
// pdlLaunchDependents are empty in code for compute capabilities below 9.0, and a kernel built so
// (nvcc's default architecture is sm_75 with CUDA 13) runs on a 9.0 device from its PTX. Launched
// with programmatic serialization, such a kernel could start before the kernel ahead of it has
// made its writes visible, and would not wait for them: launchDependent launches it as an
// ordinary kernel instead, and says so once. Asked of the CUDA runtime once per kernel.
inline bool pdlCompiled(const void* kernel) {
  static std::mutex m;
  static std::unordered_map<const void*, bool> known;
  std::lock_guard<std::mutex> lock(m);
  if (auto it = known.find(kernel); it != known.end()) return it->second;
  cudaFuncAttributes a{};
  bool ok = false;
  if (cudaFuncGetAttributes(&a, kernel) == cudaSuccess) {
    const int version = a.ptxVersion > 0 ? a.ptxVersion : a.binaryVersion;  // (0: no PTX in the image)
    ok = version >= 90;
    static bool told = false;
    if (!ok && !told) {
      std::fprintf(stderr,
                   "coconet: kernels built for compute capability %d.%d run on a newer GPU from their PTX, "
                   "launched one after another (no programmatic dependent launch); build for the GPU's "
                   "architecture (the generated CMakeLists.txt's default, or -DCMAKE_CUDA_ARCHITECTURES=90a)\n",
                   version / 10, version % 10);
      told = true;
    }
  } else {
    (void)cudaGetLastError();  // the launch itself reports a kernel that cannot run
  }
  known.emplace(kernel, ok);
  return ok;
}
template <class... Params, class... Args>
inline cudaError_t launchDependent(void (*kernel)(Params...), int grid, int block, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(static_cast<unsigned>(block));
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdlEnabled() && pdlCompiled(reinterpret_cast<const void*>(kernel)) ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

// Every rank's part of window w, as this GPU addresses it (ncclGetLsaPointer at offset 0).
static __global__ void window_bases(ncclWindow_t w, int P, void** out) {
  for (int p = threadIdx.x; p < P; p += blockDim.x) out[p] = ncclGetLsaPointer(w, 0, p);
}

// The peers' addresses of no window: what an overlap's code names its staging and slice windows'
// bases where the one-shot form runs without those windows.
inline const std::vector<void*> kNoPeerBases;

// A symmetric window: ncclMemAlloc'd memory registered on every rank of the communicator
// (registration is collective: every rank grows its windows at the same call, as sizes agree).
struct Window {
  void* ptr = nullptr;
  size_t bytes = 0;
  ncclWindow_t win{};
  std::vector<void*> bases;  // every rank's part, as this GPU addresses it (peerBases)
  // The addresses of every rank's part of the window (asked of the device API once per
  // registration): copy engines write to peers through them (cudaMemcpyAsync).
  const std::vector<void*>& peerBases(int P, cudaStream_t stream, const char* program, const char* stage) {
    if (static_cast<int>(bases.size()) == P) return bases;
    std::vector<void*> got(P, nullptr);  // kept only when every step succeeded
    void** dev = nullptr;
    check(cudaMalloc(&dev, P * sizeof(void*)), program, stage, "cudaMalloc");
    window_bases<<<1, 32, 0, stream>>>(win, P, dev);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(got.data(), dev, P * sizeof(void*), cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    cudaFree(dev);
    check(e, program, stage, "window_bases (the peers' addresses of a window)");
    bases = std::move(got);
    return bases;
  }
  // Grows the window to `want` bytes; true when it registered a new one.
  bool ensure(ncclComm_t comm, cudaStream_t stream, size_t want, const char* program, const char* stage) {
    if (want <= bytes) return false;
    if (ptr) {
      // Peers may still read or write this window in kernels of earlier calls: wait for this
      // rank's, then for everyone's (an allreduce no rank enters before its own work is done).
      check(cudaStreamSynchronize(stream), program, stage, "cudaStreamSynchronize");
      check(ncclAllReduce(ptr, ptr, 1, ncclInt8, ncclMax, comm, stream), program, stage, "ncclAllReduce (window barrier)");
      check(cudaStreamSynchronize(stream), program, stage, "cudaStreamSynchronize");
      release(comm);
    }
    check(ncclMemAlloc(&ptr, want), program, stage, "ncclMemAlloc");
    check(ncclCommWindowRegister(comm, ptr, want, &win, NCCL_WIN_COLL_SYMMETRIC), program, stage, "ncclCommWindowRegister");
    bytes = want;
    return true;
  }
  void release(ncclComm_t comm) {
    bases.clear();
    if (!ptr) return;
    ncclCommWindowDeregister(comm, win);
    ncclMemFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
};

// The device communicator: used where every rank of the communicator is load/store reachable
// (one NVLink domain, more than one rank, the NCCL library the code was compiled against), and
// created again after windows were registered, as NCCL's examples register windows before they
// create it. The calls are collective: every rank makes them at the same point of the same run.
struct DevComm {
  ncclDevComm comm{};
  bool decided = false, created = false, usable = false;
  // At the first use: is the device path usable? (false: the caller runs NCCL calls.) Every rank
  // must answer the same, so the ranks agree through an allreduce (min) of their answers.
  bool ready(ncclComm_t c, cudaStream_t stream, int rank, int nRanks, const char* program, const char* stage) {
    if (decided) return usable;
    decided = true;
    int ok = 0, version = 0;
    // The device API's structures must be those of the NCCL this code was compiled against.
    // (one rank too: the generated code asks only for the stages that move nothing there)
    if (nRanks >= 1 && ncclGetVersion(&version) == ncclSuccess && version == NCCL_VERSION_CODE) {
      const ncclDevCommRequirements reqs = requirements();
      if (ncclDevCommCreate(c, &reqs, &comm) == ncclSuccess) {
        created = true;
        ok = comm.lsaSize == nRanks && comm.lsaRank == rank;
      }
    }
    if (nRanks >= 2) {
      int* flag = nullptr;
      check(cudaMalloc(&flag, sizeof(int)), program, stage, "cudaMalloc");
      check(cudaMemcpyAsync(flag, &ok, sizeof(int), cudaMemcpyHostToDevice, stream), program, stage, "cudaMemcpyAsync");
      check(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMin, c, stream), program, stage, "ncclAllReduce (device path agreement)");
      check(cudaMemcpyAsync(&ok, flag, sizeof(int), cudaMemcpyDeviceToHost, stream), program, stage, "cudaMemcpyAsync");
      check(cudaStreamSynchronize(stream), program, stage, "cudaStreamSynchronize");
      cudaFree(flag);
    }
    usable = ok == 1;
    return usable;
  }
  // After windows grew: a fresh device communicator that knows them.
  void refresh(ncclComm_t c, cudaStream_t stream, const char* program, const char* stage) {
    check(cudaStreamSynchronize(stream), program, stage, "cudaStreamSynchronize");
    check(ncclDevCommDestroy(c, &comm), program, stage, "ncclDevCommDestroy");
    created = false;
    create(c, program, stage);
  }
  void destroy(ncclComm_t c) {
    if (created) ncclDevCommDestroy(c, &comm);
    created = false;
  }

 private:
  static ncclDevCommRequirements requirements() {  // one LSA barrier per block
    ncclDevCommRequirements reqs;
    std::memset(&reqs, 0, sizeof reqs);
    reqs.lsaBarrierCount = kDevBarriers;
    return reqs;
  }
  void create(ncclComm_t c, const char* program, const char* stage) {
    const ncclDevCommRequirements reqs = requirements();
    check(ncclDevCommCreate(c, &reqs, &comm), program, stage, "ncclDevCommCreate");
    created = true;
  }
};

template <class T> __device__ __forceinline__ T* peerPtr(ncclWindow_t w, size_t byteOffset, int peer) {
  return static_cast<T*>(ncclGetLsaPointer(w, byteOffset, peer));
}

// The exchange slots of a scalar chain computed at the start of a group's kernel: one 64-bit
// word per value, a float's bits in the low half and the call's epoch in the high half, stored
// and loaded whole, so that a reader that sees this call's epoch sees this call's value. No
// barrier: block 0 of every rank stores, every block of every rank waits for each slot.
// (epochWord: the word of any 32-bit value so; a tail's chunk counts, raised by a maximum: workerDone.)
__host__ __device__ __forceinline__ unsigned long long epochWord(unsigned low, unsigned epoch) {
  return (static_cast<unsigned long long>(epoch) << 32) | low;
}
__device__ __forceinline__ void putEpochSlot(ncclWindow_t w, size_t byteOffset, int peer, float v, unsigned epoch) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> slot(*peerPtr<unsigned long long>(w, byteOffset, peer));
  slot.store(epochWord(__float_as_uint(v), epoch), cuda::memory_order_relaxed);
}
__device__ __forceinline__ float waitEpochSlot(const unsigned long long* p, unsigned epoch) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> slot(*const_cast<unsigned long long*>(p));
  unsigned long long word = slot.load(cuda::memory_order_relaxed);
  while (static_cast<unsigned>(word >> 32) != epoch) {
    __nanosleep(20);
    word = slot.load(cuda::memory_order_relaxed);
  }
  return __uint_as_float(static_cast<unsigned>(word));
}

// Warp 0 of a block waits for an exchange's slots 32 ranks at a time: lane l takes value k of rank
// p0 + l (0 past the last rank), so that the 32 waits overlap instead of following one another
// (each a round trip to memory that peers write).
__device__ __forceinline__ float laneSlot(const unsigned long long* slots, int P, int width, int k, int p0, unsigned epoch) {
  const int p = p0 + static_cast<int>(threadIdx.x % 32);
  return p < P ? waitEpochSlot(slots + static_cast<long long>(p) * width + k, epoch) : 0.0f;
}

// A block's share of the work: part `index` of `count` (the grid's blocks, or in a kernel whose
// blocks take roles, the blocks of one role).
struct Part {
  int index, count;
};
__device__ __forceinline__ Part gridPart() { return Part{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)}; }

// Elements [lo, hi) of a kernel's work in units of V: thread t of the part's blocks (the grid's,
// unless the blocks take roles) takes the elements before the first whole unit one by one (none
// when lo is a multiple of V), units t, t + nth, ..., then the elements after the last whole unit one by one. An empty range does nothing
// (chunkLo clamps the chunks past the end to [m, m), and m need not be a multiple of V). `unit`
// handles a unit with vector accesses, `elem` one element; without `vec` the units' elements
// go through `elem` in turn. The partition is the same either way, so ranks that differ in the
// alignment of their buffers still give block b the same elements (per-block barriers order
// exactly the conflicting accesses).
template <int V, class Unit, class Elem>
__device__ __forceinline__ void forUnits(Part pt, long long lo, long long hi, bool vec, Unit&& unit, Elem&& elem) {
  const long long tid = pt.index * (long long)blockDim.x + threadIdx.x, nth = (long long)pt.count * blockDim.x;
  if (lo >= hi) return;
  const long long v0 = (lo + V - 1) / V, v1 = hi / V;
  if (v0 >= v1) {  // no whole unit inside
    for (long long i = lo + tid; i < hi; i += nth) elem(i);
    return;
  }
  for (long long i = lo + tid; i < v0 * V; i += nth) elem(i);
  for (long long jv = v0 + tid; jv < v1; jv += nth) {
    if (vec) {
      unit(jv * V);
    } else {
      for (int e = 0; e < V; ++e) elem(jv * V + e);
    }
  }
  for (long long i = v1 * V + tid; i < hi; i += nth) elem(i);
}
template <int V, class Unit, class Elem>
__device__ __forceinline__ void forUnits(long long lo, long long hi, bool vec, Unit&& unit, Elem&& elem) {
  forUnits<V>(gridPart(), lo, hi, vec, static_cast<Unit&&>(unit), static_cast<Elem&&>(elem));
}

// Peers whose loads a push or a pull issues together, before its stores: a thread's unit moves
// this many vectors at a time (a pull's loads cross NVLink and take microseconds each, so one at
// a time leaves the links idle unless very many blocks move; more than 4 at once doubled the
// registers of LAMB's reduce-scatter kernel, 64 -> 128).
constexpr int kPeersInFlight = 4;

// Phase "push" of a reduce-scatter, for the elements [lo, hi) of every slice (lo a multiple of
// V): slice p (m elements) of this rank's `in` goes to slot `me` of rank p's staging
// area (P slots of m elements at byte `stageOff` of window w), for every rank p but this one:
// its own slice stays in `in`, where the sums read it (OwnSlots), and slot `me` of its own area
// is never written (2 bytes per element less through HBM at f16: one store, its write-back, one
// load; measured on 4 H200, Adam 3% faster at 2^24).
template <class T, int V>
__device__ __forceinline__ void pushSlices(Part pt, ncclWindow_t w, size_t stageOff, int P, int me, const T* __restrict__ in, long long m,
                                           long long lo, long long hi, bool vec) {
  forUnits<V>(
      pt, lo, hi, vec,
      [&](long long i0) {
        for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
          Vec<T, V> x[kPeersInFlight];
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (p0 + q < P && p0 + q != me) load_vec(x[q], in + (p0 + q) * m + i0);
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (p0 + q < P && p0 + q != me) store_vec(peerPtr<T>(w, stageOff + (me * m + i0) * sizeof(T), p0 + q), x[q]);
        }
      },
      [&](long long i) {
        for (int p = 0; p < P; ++p)
          if (p != me) *peerPtr<T>(w, stageOff + (me * m + i) * sizeof(T), p) = in[p * m + i];
      });
}
template <class T, int V>
__device__ __forceinline__ void pushSlices(ncclWindow_t w, size_t stageOff, int P, int me, const T* __restrict__ in, long long m,
                                           long long lo, long long hi, bool vec) {
  pushSlices<T, V>(gridPart(), w, stageOff, P, me, in, m, lo, hi, vec);
}

// Asks L2 for the lines of elements [lo, hi) of `a`, the part's threads a 128-byte line each in
// turn (no register holds the data; every address asked lies within the range). A head with roles
// split has its movers so fetch the chunk of the own slice they left in the input (pushSlices)
// while the other slices travel, so that the workers' sums read it from L2 as they read
// the slots the peers wrote (read from HBM on the workers' path it cost LAMB's `moments` 10 us at
// 2^26 on 4 H200; copied into the staging area instead, LAMB ran 1.5-3.8% slower on 2 H200).
template <class T>
__device__ __forceinline__ void prefetchL2(Part pt, const T* a, long long lo, long long hi) {
  if (hi <= lo) return;
  const unsigned long long first = reinterpret_cast<unsigned long long>(a + lo);
  const unsigned long long end = reinterpret_cast<unsigned long long>(a + hi);
  const unsigned long long step = static_cast<unsigned long long>(pt.count) * blockDim.x;
  for (unsigned long long k = static_cast<unsigned long long>(pt.index) * blockDim.x + threadIdx.x;; k += step) {
    const unsigned long long line = (first & ~127ull) + k * 128;
    if (line >= end) break;
    const unsigned long long at = line < first ? first : line;
#if defined(__CUDA_ARCH__)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
#endif
  }
}

// A mover's push (roles split): the slices to the other ranks, then the own slice's part into L2
// for the workers' sums (prefetchL2).
template <class T, int V>
__device__ __forceinline__ void pushSlicesPrefetchOwn(Part pt, ncclWindow_t w, size_t stageOff, int P, int me, const T* __restrict__ in,
                                                      long long m, long long lo, long long hi, bool vec) {
  pushSlices<T, V>(pt, w, stageOff, P, me, in, m, lo, hi, vec);
  prefetchL2(pt, in + static_cast<long long>(me) * m, lo, hi);
}

// Runs tile(t) (every thread) for each tile t < `tiles` that this block claims through the
// counter `claimed`, one at a time: the next claim is asked before a tile and its answer kept in a
// register until after it, so that thread 0 (and the block after it) does not wait for the atomic's
// round trip. Every thread calls it; each call site has its own pair of shared words.
template <class Tile>
__device__ __forceinline__ void forClaimedTiles(unsigned* claimed, long long tiles, Tile&& tile) {
  __shared__ unsigned claim[2];
  if (threadIdx.x == 0) claim[0] = atomicAdd(claimed, 1u);
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const long long t = claim[k];
    if (t >= tiles) break;
    unsigned next = 0;
    if (threadIdx.x == 0) next = atomicAdd(claimed, 1u);
    tile(t);
    if (threadIdx.x == 0) claim[k ^ 1] = next;
    __syncthreads();
  }
  __syncthreads();  // (claim[k] read by every thread before a later call's first claim)
}

// A reduce-scatter head's movers (roles split, whole barriers) push a round's chunk [lo, hi) in
// tiles they claim one at a time through the round's counter `claimed` (roleClaimed; the next
// claim asked while the current tile travels), each tile by the whole block as
// pushSlicesPrefetchOwn, instead of a fixed part of every chunk each: then each mover counts
// itself in the round's `pushed` (moverPushed) and block 0 alone, once every mover counted, takes
// the rank's barrier for the chunk. With fixed parts each mover index met its own index on the
// other ranks at its own barrier, and the slowest of them set when the workers could start (on 4
// H200 LAMB's slowest mover ended each round up to 42 us after mover block 0 at 2^26 parameters).
// tools/bench/gpu/micro/sm-transfer-micro.cu's `dyn` rows time both forms (a push of 128 MiB on 64
// blocks: 292 us claiming tiles, 334 in fixed parts). A tile is kDevThreads x V x `units`
// elements of each slice (the kernel's `claimed`: claimedPushes).
template <class T, int V>
__device__ __forceinline__ void pushTilesPrefetchOwn(unsigned* claimed, int units, ncclWindow_t w, size_t stageOff, int P, int me,
                                                     const T* __restrict__ in, long long m, long long lo, long long hi, bool vec) {
  const long long kTile = static_cast<long long>(kDevThreads) * V * units;
  forClaimedTiles(claimed, (hi - lo + kTile - 1) / kTile, [&](long long t) {
    const long long a = lo + t * kTile;
    pushSlicesPrefetchOwn<T, V>(Part{0, 1}, w, stageOff, P, me, in, m, a, a + kTile < hi ? a + kTile : hi, vec);
  });
}
// A mover has no tile of the round left: its pushes are made visible to every GPU, then it adds 1
// to the round's `pushed` (rolePushed; every thread calls it).
__device__ __forceinline__ void moverPushed(unsigned* pushed) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*pushed).fetch_add(1u, cuda::memory_order_release);
  }
}
// A head's claimed pushes on P ranks (the kernel's `claimed`), for rounds of `roundElems` elements
// of each slice (the mean, where tapered) pushed by `movers` blocks in units of `V` elements per
// thread: the tile's units per thread, 0 for the fixed parts.
// From 3 ranks tiles of kPushTileUnits where a round has at least kClaimTilesPerMover tiles per
// mover, else the fixed parts:
// - On 2 ranks each mover pushes to the one peer, its fixed part evens out, and the tiles' claims
//   only cost (measured on 2 H200: LAMB up to 3% slower claiming, at 2^26 and 2^28).
// - With 2 tiles per mover a round has nothing to even out by whole tiles (measured on 4 H200:
//   LAMB 2% slower claiming at 2^24, 32 movers, and 3-5% faster at 2^26 and 2^28, 4 and 8 tiles
//   per mover). 3 tiles per mover were not measured.
// COCONET_CLAIMED_PUSH in the environment sets the units on any number of ranks and rounds, 0 the
// fixed parts (A/B timings; read at every call, so that the bench's BENCH_ENV_ROWS time both forms
// of one build side by side).
constexpr int kPushTileUnits = 4;
constexpr long long kClaimTilesPerMover = 4;
inline int claimedPushes(int P, long long roundElems, int movers, int V) {
  const long long tile = static_cast<long long>(kDevThreads) * V * kPushTileUnits;
  return static_cast<int>(
      envValue(Env::ClaimedPush, P > 2 && roundElems >= kClaimTilesPerMover * tile * movers ? kPushTileUnits : 0));
}

// Phase "push" of a one-shot allreduce, for the elements [lo, hi) of this rank's `in` (m
// elements): every rank p, this one included, gets them in slot `me` of its staging area (P slots
// of m elements at byte `stageOff` of window w).
template <class T, int V>
__device__ __forceinline__ void pushWhole(Part pt, ncclWindow_t w, size_t stageOff, int P, int me, const T* __restrict__ in, long long m,
                                          long long lo, long long hi, bool vec) {
  forUnits<V>(
      pt, lo, hi, vec,
      [&](long long i0) {
        Vec<T, V> x;
        load_vec(x, in + i0);
        for (int p = 0; p < P; ++p) store_vec(peerPtr<T>(w, stageOff + (me * m + i0) * sizeof(T), p), x);
      },
      [&](long long i) {
        const T x = in[i];
        for (int p = 0; p < P; ++p) *peerPtr<T>(w, stageOff + (me * m + i) * sizeof(T), p) = x;
      });
}

// The sum over the P slots of this rank's staging area of elements i0 .. i0+V-1, in rank order.
template <class T, int V>
__device__ __forceinline__ void sumSlots(const T* stage, long long m, int P, long long i0, float (&s)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) s[e] = 0.0f;
  for (int q = 0; q < P; ++q) {
    Vec<T, V> x;
    load_vec_rw(x, stage + q * m + i0);
#pragma unroll
    for (int e = 0; e < V; ++e) s[e] = __fadd_rn(s[e], to_f(x.v[e]));
  }
}
template <class T> __device__ __forceinline__ float sumSlot(const T* stage, long long m, int P, long long i) {
  float s = 0.0f;
  for (int q = 0; q < P; ++q) s = __fadd_rn(s, to_f(stage[q * m + i]));
  return s;
}

// The slots of a reduce-scatter whose push left this rank's own slice in its input (pushSlices):
// slot q is stage + q*m but for q == me, which is own (the input's slice me). On one rank (the
// kernels' kSolo form) stage may be the input itself, and then own == stage.
template <class T> struct OwnSlots {
  const T* stage;
  const T* own;
  int me;
  __device__ __forceinline__ const T* slot(int q, long long m) const { return q == me ? own : stage + q * m; }
};
// As sumSlots over the staging area: the same sums, in the same rank order (so bit for bit the
// same results), slot me read from own.
template <class T, int V>
__device__ __forceinline__ void sumSlots(const OwnSlots<T>& s, long long m, int P, long long i0, float (&sum)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) sum[e] = 0.0f;
  for (int q = 0; q < P; ++q) {
    Vec<T, V> x;
    load_vec_rw(x, s.slot(q, m) + i0);
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = __fadd_rn(sum[e], to_f(x.v[e]));
  }
}
template <class T> __device__ __forceinline__ float sumSlot(const OwnSlots<T>& s, long long m, int P, long long i) {
  float sum = 0.0f;
  for (int q = 0; q < P; ++q) sum = __fadd_rn(sum, to_f(s.slot(q, m)[i]));
  return sum;
}
// sumSlots' sums rounded to T, as one vector (what an allreduce's kernels store); `slots` the
// staging area (const T*) or OwnSlots<T>.
template <class T, int V, class Slots>
__device__ __forceinline__ Vec<T, V> sumSlotsRounded(const Slots& slots, long long m, int P, long long i0) {
  float sum[V];
  sumSlots<T, V>(slots, m, P, i0, sum);
  Vec<T, V> y;
#pragma unroll
  for (int e = 0; e < V; ++e) y.v[e] = Store<T>::from(sum[e]);
  return y;
}

// Phase "pull" of an all-gather, for the elements [lo, hi) of every slice (lo a multiple of V):
// out[p*m + i] = rank p's slice (m elements at byte `sliceOff` of window w), for
// every rank p but `skip` (this rank, which wrote its part already).
template <class T, int V>
__device__ __forceinline__ void pullSlices(Part pt, ncclWindow_t w, size_t sliceOff, int P, int skip, T* __restrict__ out, long long m,
                                           long long lo, long long hi, bool vec) {
  forUnits<V>(
      pt, lo, hi, vec,
      [&](long long i0) {
        for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
          Vec<T, V> y[kPeersInFlight];
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (p0 + q < P && p0 + q != skip) load_vec_rw(y[q], peerPtr<const T>(w, sliceOff + i0 * sizeof(T), p0 + q));
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (p0 + q < P && p0 + q != skip) store_vec(out + (p0 + q) * m + i0, y[q]);
        }
      },
      [&](long long i) {
        for (int p = 0; p < P; ++p)
          if (p != skip) out[p * m + i] = *peerPtr<const T>(w, sliceOff + i * sizeof(T), p);
      });
}
template <class T, int V>
__device__ __forceinline__ void pullSlices(ncclWindow_t w, size_t sliceOff, int P, int skip, T* __restrict__ out, long long m, long long lo,
                                           long long hi, bool vec) {
  pullSlices<T, V>(gridPart(), w, sliceOff, P, skip, out, m, lo, hi, vec);
}

// A fused group's kernel runs in `rounds` rounds over chunks of its slice (tune(f, chunks = K),
// else devAutoRounds): round r pushes chunk r, computes chunk r-1 (its slots arrived at the last
// barrier) and pulls chunk r-2 (published before the last barrier), then a barrier, so that
// transfers of one chunk overlap the computation of another. Chunk c is [chunkLo(c),
// chunkLo(c+1)), a multiple of `unit` long but for the last.
// With taper t > 0 (tune(f, taper = t); 0 without the knob) the chunks are not all alike: at the
// tapered ends (`ends`: kTaperFirst, kTaperLast or both, tune(f, taper_ends = ...)) they shrink
// by halves, 1/2^t, ..., 1/2 of a middle chunk, the first t growing and the last t shrinking,
// for t = min(taper, rounds / 2) at both ends and min(taper, rounds - 1) at one. A pipeline of
// movers and workers (roles split) waits for the first chunk's transfer before any computation
// starts and for the last chunk's computation (or pull) after the last transfer; small end chunks
// shorten that fill and drain while the middle chunks keep the transfers long. Where the
// transfers set the pace only one end is exposed: a reduce-scatter head's last computation, an
// all-gather tail's first. Not the default: measured with LAMB on 2 and 4 H200 and 4 H100, a
// taper gained at most 1.3% (`moments`' first chunks, 2 H200), cost `moments` up to 48 us
// elsewhere and left `apply` within the spread.
constexpr int kTaperFirst = 1, kTaperLast = 2, kTaperBoth = 3;
__host__ __device__ __forceinline__ long long chunkLo(int c, int rounds, long long m, int unit, int taper = 0,
                                                       int ends = kTaperBoth) {
  if (c >= rounds) return m;
  const long long units = (m + unit - 1) / unit;
  const bool first = (ends & kTaperFirst) != 0, last = (ends & kTaperLast) != 0;
  const int cap = first && last ? rounds / 2 : rounds - 1;
  const int t = !first && !last ? 0 : taper < cap ? taper : cap;
  long long lo;
  if (t <= 0) {
    lo = c * ((units + rounds - 1) / rounds) * unit;
  } else {
    // weights in units of 1/2^t of a middle chunk: 1, 2, ..., 2^(t-1) for the first t chunks
    // (where tapered), 2^t each in the middle, 2^(t-1), ..., 1 for the last t (where tapered);
    // s is the sum of the weights of chunks [0, c). A weight is `base` units, and chunk tf (a
    // chunk of the largest weight) takes the `rem` units left over.
    const int tf = first ? t : 0, tl = last ? t : 0;
    const long long full = 1LL << t, total = ((1LL << tf) - 1) + (rounds - tf - tl) * full + ((1LL << tl) - 1);
    const long long base = units / total, rem = units - base * total;
    long long s;
    if (c <= tf) s = (1LL << c) - 1;
    else if (c <= rounds - tl) s = ((1LL << tf) - 1) + (c - tf) * full;
    else s = total - ((1LL << (rounds - c)) - 1);
    lo = (s * base + (c > tf ? rem : 0)) * unit;
  }
  return lo < m ? lo : m;
}

// A tapered kernel's chunk edges, computed once at its start into shared memory (`tab`, at least
// kTaperTableRounds + 1 long), by every block's threads, up to kTaperTableRounds rounds; past
// that the kernel's chunks are alike (chunkLo without a taper). With chunkLo's tapered form in
// the rounds' loops LAMB's `moments` compiled differently and ran 10% slower on 4 H100. Every
// thread of the block calls it.
constexpr int kTaperTableRounds = 64;
__device__ __forceinline__ void fillTaperEdges(long long* tab, int rounds, long long m, int unit, int taper, int ends) {
  if (rounds > kTaperTableRounds) return;
  for (int c = threadIdx.x; c <= rounds; c += blockDim.x) tab[c] = chunkLo(c, rounds, m, unit, taper, ends);
  __syncthreads();
}

// Roles (tune(f, roles = split); in two rounds or more; not the default, see kDevMovers): the
// kernel's first `movers` blocks move the chunks (push, barrier, pull; part b of each chunk in
// block b, and the LSA barrier b) and the other blocks ("workers") compute them, so that one
// chunk's transfers overlap another's computation inside every rank. (With roles shared, each
// block pushes, then computes, and the two hardly overlap: on 4x H200 a 512 MiB LAMB
// reduce-scatter group took about the push's time plus the computation's.) The two roles split
// the chunk's elements differently, so they hand chunks over through counters in global memory
// (RoleFlags), one pair per round: ready[r] counts the movers whose slots of chunk r arrived (a
// mover adds 1 after its barrier), done[r] the workers that computed (and published) chunk r;
// chunk r is ready when ready[r] == movers, computed when done[r] == workers. (One counter summed
// over the rounds is wrong: a mover or worker that runs a round ahead of
// the others counts chunk r+1 before a slow one counted chunk r, and the sum reaches its mark
// while part of chunk r is missing. Movers meet only their own index's movers on other ranks and
// workers in a tail wait for nothing, so they do drift: LAMB's split form at 2^28 parameters, 16
// rounds, computed moments from slots that had not arrived.) The last block to finish (exits)
// resets the counters its kernel used, so every launch starts from 0. Every block of the grid
// must be resident at once, as for the LSA barriers: roleBlocks sizes the grid by the kernel's
// occupancy. Only the movers take LSA barriers (block b barrier b, b < kDevMaxBlocks): the
// workers, whose indices run up to the resident limit, never make a barrier session (a session
// reads its barrier's epoch when made and writes it back when destroyed; a worker's would have
// written past the barriers' epochs into other barriers' inboxes).
// Layout: [0] exits, then ready[kMaxRoleRounds], then done[kMaxRoleRounds], then a reduce-scatter
// head's claimed[kMaxRoleRounds] and pushed[kMaxRoleRounds] (pushTilesPrefetchOwn) (tune(f, chunks = K)
// allows K up to 65535).
constexpr int kMaxRoleRounds = 65535;
constexpr int kRoleCounterSets = 4;
__device__ __forceinline__ unsigned* roleReady(unsigned* roles, int r) { return roles + 1 + r; }
__device__ __forceinline__ unsigned* roleDone(unsigned* roles, int r) { return roles + 1 + kMaxRoleRounds + r; }
__device__ __forceinline__ unsigned* roleClaimed(unsigned* roles, int r) { return roles + 1 + 2 * kMaxRoleRounds + r; }
__device__ __forceinline__ unsigned* rolePushed(unsigned* roles, int r) { return roles + 1 + 3 * kMaxRoleRounds + r; }
// Makes the block's writes (and what it saw) visible on this GPU, then adds n to *counter (every
// thread calls it; n > 1: block 0 of a head whose movers claim tiles counts a chunk ready for
// every mover at once). A device-scope fence is enough for what peers read too: a worker's writes
// reach the movers through this release and their acquire in roleWait, and peers through the
// movers' system-scope barrier after it (causality order is transitive across the two scopes).
__device__ __forceinline__ void roleSignal(unsigned* counter, unsigned n = 1u) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*counter).fetch_add(n, cuda::memory_order_release);
  }
}
// Waits until *counter >= value (every thread calls it; thread 0 polls).
__device__ __forceinline__ void roleWait(unsigned* counter, unsigned value) {
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> c(*counter);
    while (c.load(cuda::memory_order_acquire) < value) __nanosleep(20);
  }
  __syncthreads();
}
// The block is done with the counters: the last of the grid's blocks resets those of rounds
// [0, rounds).
__device__ __forceinline__ void roleExit(unsigned* roles, int rounds) {
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> exits(roles[0]);
    if (exits.fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1) {
      for (int r = 0; r < rounds; ++r) {
        *roleReady(roles, r) = 0;
        *roleDone(roles, r) = 0;
        *roleClaimed(roles, r) = 0;
        *rolePushed(roles, r) = 0;
      }
      exits.store(0u, cuda::memory_order_release);
    }
  }
}

// An all-gather tail's movers (roles split, whole barriers) pull without barriers where the kernel
// has `flagEpoch` (nonzero; tailFlags): each rank counts the chunks its workers published in slot
// `me` of every rank's flags (a window of its own, `off` its call's half: P words of epoch << 32 |
// chunks; workerDone), and a mover pulls chunk r once every other rank's word in this rank's flags
// holds this call's epoch and at least r + 1 chunks (needChunk). With a barrier per round (each
// mover index meeting its index on the other ranks before each pull) every pull waited for the
// slowest rank's previous one even where every chunk was long computed (on 4 H200 LAMB's `apply`
// at 2^24 parameters spent 1.2-4.7 us in each round's barrier with every chunk computed). Flags
// gain less (measured on 4 H200: LAMB's step under 1% faster at 2^26 and 2^28, level at 2^24):
// the pulls share the links, so most of a barrier's wait was the other ranks' pulls and remains.
//
// A tail's worker is done with chunk r (every thread calls it, in place of roleSignal(roleDone)):
// it counts itself in roleDone(r), and the last worker of chunk r (every chunk before it is then
// done too: each worker computes the rounds in order) makes their stores visible to every GPU
// (its acquire of the count, then __threadfence_system) and raises this rank's count in every
// rank's flags to r + 1, by a maximum: the last workers of two chunks may get there out of order.
// (Published by mover block 0 after its pull instead, a system fence stood behind the pull's own
// traffic: 4-10 us in the rounds that published; measured on 4 H200, LAMB's step up to 2% faster
// so, at 2^24 .. 2^28.) With `epoch` 0 (COCONET_TAIL_FLAGS=0) only the count.
__device__ __forceinline__ void workerDone(unsigned* roles, int r, unsigned workers, ncclWindow_t w, size_t off, int P, int me,
                                           unsigned epoch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned before =
        cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*roleDone(roles, r)).fetch_add(1u, cuda::memory_order_acq_rel);
    if (epoch != 0 && before + 1 == workers) {
      __threadfence_system();
      const unsigned long long word = epochWord(static_cast<unsigned>(r + 1), epoch);
      for (int p = 0; p < P; ++p)
        if (p != me)
          cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>(*peerPtr<unsigned long long>(w, off + me * sizeof(unsigned long long), p))
              .fetch_max(word, cuda::memory_order_relaxed);
    }
  }
}
// A mover needs chunk r (every thread calls it): where `*known` (shared: the fewest chunks any
// other rank had counted when last read) covers it, nothing, so that pulls follow one another with
// no synchronization between them; else warp 0's lanes wait until each other rank's word holds
// this call's epoch and at least r + 1 chunks, and `*known` becomes the fewest they then hold.
__device__ __forceinline__ void needChunk(ncclWindow_t w, size_t off, int P, int me, unsigned epoch, int r, unsigned* known) {
  const unsigned count = static_cast<unsigned>(r + 1);
  if (*known >= count) return;  // (every thread reads the same: *known changes only below, between barriers)
  unsigned fewest = ~0u;
  if (threadIdx.x < 32) {
    const unsigned long long* flags = static_cast<const unsigned long long*>(ncclGetLocalPointer(w, off));
    for (int p = static_cast<int>(threadIdx.x); p < P; p += 32) {
      if (p == me) continue;
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> slot(*const_cast<unsigned long long*>(flags + p));
      unsigned long long word = slot.load(cuda::memory_order_acquire);
      while (static_cast<unsigned>(word >> 32) != epoch || static_cast<unsigned>(word) < count) {
        __nanosleep(20);
        word = slot.load(cuda::memory_order_acquire);
      }
      fewest = min(fewest, static_cast<unsigned>(word));
    }
    for (int o = 16; o > 0; o >>= 1) fewest = min(fewest, __shfl_xor_sync(0xffffffffu, fewest, o));  // (any arch: no __reduce_min_sync)
  }
  __syncthreads();  // (every thread read *known above)
  if (threadIdx.x == 0) *known = fewest;
  __syncthreads();
}
// An all-gather tail's movers pull round r's chunk [lo, hi) in tiles they claim one at a time
// through the round's counter `claimed` (roleClaimed; the next claim asked while the current tile
// travels), each tile by the whole block, instead of a fixed part of every chunk each. A mover
// that claims a tile of round r first waits for chunk r on every rank (needChunk). With fixed
// parts each mover pulled its part of every chunk whatever the others did (on 4 H200 LAMB's
// `apply` ended 3-9 us after its mover block 0 at 2^24 parameters). The pulls are bound by the
// links, not by the blocks issuing them, so only the movers claim (measured on 4 H200: with the
// workers claiming too, LAMB's step ran 5-9% slower). A tile is kDevThreads x V x `units`
// elements of each slice.
template <class T, int V>
__device__ __forceinline__ void pullTiles(unsigned* claimed, int units, ncclWindow_t w, size_t sliceOff, int P, int me, T* __restrict__ out,
                                          long long m, long long lo, long long hi, bool vec, ncclWindow_t flagWin, size_t flagOff,
                                          unsigned epoch, int r, unsigned* known) {
  const long long kTile = static_cast<long long>(kDevThreads) * V * units;
  forClaimedTiles(claimed, (hi - lo + kTile - 1) / kTile, [&](long long t) {
    needChunk(flagWin, flagOff, P, me, epoch, r, known);  // (at once after the first: `known` covers r)
    const long long a = lo + t * kTile;
    pullSlices<T, V>(Part{0, 1}, w, sliceOff, P, me, out, m, a, a + kTile < hi ? a + kTile : hi, vec);
  });
}
// A tail's claimed pulls (pullTiles) on P ranks in `rounds` rounds: the tile's units per thread,
// 0 for the fixed parts. From 3 ranks tiles of kPullTileUnits where the kernel has at most
// kClaimPullMaxRounds rounds, else the fixed parts. Chosen by measurement of LAMB: on 4 H200
// tiles of 1 unit ran 1-3% faster at 2^24 and 2^25 (4 rounds) and level or slower at 2^26 and
// 2^28 (8 and 16 rounds: the fixed parts' uneven ends weigh less there than the claims cost); on
// 2 H200 (each block pulls from the one peer) they lost at every size.
// COCONET_CLAIMED_PULL in the environment sets the units on any ranks and rounds, 0 the fixed parts
// (A/B timings, read at every call as COCONET_CLAIMED_PUSH). Only the pulls by flags claim: under
// COCONET_TAIL_FLAGS=0 (a barrier per round) the movers keep their fixed parts.
constexpr int kPullTileUnits = 1;
constexpr int kClaimPullMaxRounds = 4;
inline int claimedPulls(int P, int rounds) {
  return static_cast<int>(envValue(Env::ClaimedPull, P > 2 && rounds <= kClaimPullMaxRounds ? kPullTileUnits : 0));
}
// A tail's flags' epoch for the next call (`epoch` the last call's; 0 is skipped: a word never
// written). Returns whether the flags must be zeroed on every rank (with a barrier) before the call:
// where the epoch wraps, since workerDone raises the counts by a maximum and the words of the calls
// before (epochs up to 2^32 - 1) would stand above every word of the new call's.
inline bool nextFlagEpoch(unsigned& epoch) {
  if (++epoch != 0) return false;
  epoch = 1;
  return true;
}
// Whether tails pull by flags (COCONET_TAIL_FLAGS=0: a barrier per round, for A/B timings; read at
// every call, as COCONET_CLAIMED_PUSH).
inline bool tailFlags() { return envValue(Env::TailFlags, 1) == 1; }
// A tail's flags window: two halves of P words (256-byte aligned), the call's epoch picking one.
inline size_t tailFlagBytes(int P) { return 2 * ((static_cast<size_t>(P) * sizeof(unsigned long long) + 255) / 256 * 256); }

// The counters of split kernels (see roleReady), zero between launches. One set serves every
// group of a program: its kernels run one after another on the program's stream.
struct RoleFlags {
  unsigned* ptr = nullptr;
  unsigned* get(cudaStream_t stream, const char* program, const char* stage) {
    if (!ptr) {
      const size_t bytes = (1 + kRoleCounterSets * static_cast<size_t>(kMaxRoleRounds)) * sizeof(unsigned);
      check(cudaMalloc(&ptr, bytes), program, stage, "cudaMalloc (role counters)");
      check(cudaMemsetAsync(ptr, 0, bytes, stream), program, stage, "cudaMemsetAsync (role counters)");
    }
    return ptr;
  }
  void release() {
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
  }
};

// Blocks of kDevThreads threads of `kernel` resident at once on the current device (its
// registers and shared memory per SM, times the SMs).
inline int residentBlocks(const void* kernel, const char* program, const char* stage) {
  int dev = 0, sms = 0, perSm = 0;
  check(cudaGetDevice(&dev), program, stage, "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), program, stage, "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kDevThreads, 0), program, stage,
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return perSm * sms;
}

// Movers of a split kernel unless the schedule sets them (tune(f, movers = K)): each mover's
// pushes and pulls are latency-bound, so the transfers scale with the movers (measured on 4 H200,
// Adam at 2^28 parameters: 4976, 3140 and 2582 us with 16, 32 and 64 movers).
constexpr int kDevMovers = 64;
// tune(f, roles = auto): movers from this many rounds (devAutoRounds: 32 MiB of the kernel's
// reduce-scatter input, or of its gathered tensor), every block both below. Chosen by
// measurement on 2 and 4 H200: LAMB's two kernels split ran 3-5% faster than shared at 2^24
// parameters (4 rounds). Adam's one kernel (push and pull in each round) lost split at every
// size, so it stays shared.
constexpr int kRolesAutoRounds = 4;
// The blocks of a split kernel over `units` vector units per rank: `movers` (at most kDevMaxBlocks,
// one LSA barrier each) and a block of workers per kDevThreads units, at most what stays
// resident beside the movers (the kernel's occupancy on this GPU). Returns the workers.
inline int roleBlocks(const void* kernel, long long units, int& movers, const char* program, const char* stage) {
  const int blocks = static_cast<int>(std::min<long long>(1 << 20, std::max<long long>(1, (units + kDevThreads - 1) / kDevThreads)));
  const int resident = std::max(2, residentBlocks(kernel, program, stage));
  movers = std::max(1, std::min({movers, blocks, kDevMaxBlocks, resident / 2}));
  return std::max(1, std::min(blocks, resident - movers));
}

// A device-group kernel's grid on one rank, where its blocks take no barrier (so kDevMaxBlocks
// does not bound them): as many as are resident at once, at most one per kDevThreads units.
// (A flat grid, one block per kDevThreads units, ran Adam's element loop alone 8% faster on one
// H100, but the generated one-rank kernel on it 1.39x slower than torch.compile on one H200,
// likely because each thread then computes the element-invariant values (two powf) for one unit;
// 256-thread blocks, 4 units per thread or three blocks per SM were no faster on one H200.
// tools/bench/gpu/micro/optim-micro.cu times the grids.)
// COCONET_MULTI_RANK_FORMS=1 (tests): at one rank a device group's kernels take their multi-rank
// forms (rounds by the schedule or the bytes, movers and workers, barriers over a team of one, the
// chains' exchanges, the tails' flags) instead of the one-rank form, so that one GPU checks that
// code, programmatic dependent launch included, against the one-rank vectors (tests/gpu/run.sh,
// GPU_TESTS_MULTI_AT_ONE=1). Peers' transfers are the one thing it cannot reach.
inline bool multiRankForms() {
  static const bool on = envValue(Env::MultiRankForms, 0) == 1;
  return on;
}
// Whether a device group runs its one-rank form: on one rank, unless COCONET_MULTI_RANK_FORMS=1.
inline bool soloRanks(int ranks) { return ranks == 1 && !multiRankForms(); }

// COCONET_SOLO_UNITS=K (for A/B runs of the grid, as COCONET_PDL for the launches): one block per
// K * kDevThreads units instead, however many are resident (K = 1: the flat grid); unset or 0:
// the resident grid.
inline long long soloUnitsPerThread() {
  static const long long k = envValue(Env::SoloUnits, 0);
  return k;
}
inline int soloBlocks(const void* kernel, long long units, const char* program, const char* stage) {
  const long long want = (units + kDevThreads - 1) / kDevThreads;
  if (const long long k = soloUnitsPerThread(); k > 0)
    return static_cast<int>(std::max<long long>(1, std::min<long long>((want + k - 1) / k, 1LL << 30)));
  return static_cast<int>(std::max<long long>(1, std::min<long long>(want, std::max(1, residentBlocks(kernel, program, stage)))));
}

// The grid of a device group's multi-rank kernel without roles, where block b takes LSA barrier b
// and waits there for block b of every other rank, so every block must be resident at once: one
// block per kDevThreads units, at most what fits on the GPU at once and at most kDevMaxBlocks, or
// COCONET_DEV_BLOCKS=K blocks at most instead (A/B runs, as COCONET_SOLO_UNITS for the one-rank
// grid; 1 to kDevBarriers, still no more than fit). The same on every rank of one GPU model.
inline int devBlocksCap() {
  static_assert(envSpec(Env::DevBlocks).hi == kDevBarriers, "COCONET_DEV_BLOCKS: up to the barriers there are");
  static const int k = [] {
    const long long v = envValue(Env::DevBlocks, 0);
    return v > 0 ? static_cast<int>(v) : kDevMaxBlocks;
  }();
  return k;
}
inline int barrierBlocks(const void* kernel, long long units, const char* program, const char* stage) {
  const long long want = (units + kDevThreads - 1) / kDevThreads;
  const int most = std::min(devBlocksCap(), std::max(1, residentBlocks(kernel, program, stage)));
  return static_cast<int>(std::max<long long>(1, std::min<long long>(want, most)));
}

// tune(f, occupancy = auto): blocks per SM of a split kernel (its __launch_bounds__), from the
// ranks and the movers. Each rank computes on 1/P of the elements and moves (P - 1)/P of them,
// so the fewer the ranks, the more the workers weigh against the movers' transfers: at two
// ranks two blocks per SM (registers spilled, about twice the workers) are faster, at four they
// are not (measured on 4 H200, LAMB at 2^26 and 2^28 parameters: 8% faster so on 2 GPUs, level
// on 4).
// Without movers the grid does not grow with the occupancy, so one block per SM.
inline int devAutoOccupancy(int ranks, int movers) { return movers > 0 && ranks <= 2 ? 2 : 1; }

// Rounds when the schedule does not set them, from the bytes of the reduce-scatter's input:
// one below 16 MiB (the barriers would cost more than the overlap gains), then
// 2^(1 + floor(log2(bytes / 8 MiB) / 2)), at most 16: 4 at 32 MiB, 8 at 128 MiB, 16 at 512 MiB.
// Measured on 4 H200 (Adam, f16 gradients): the fastest of 1, 4 and 16 rounds was 1 up to 2^22
// elements, 4 at 2^24 and 2^26 (16 within 4%), 16 at 2^28.
inline int devAutoRounds(long long bytes) {
  if (bytes < (16LL << 20)) return 1;
  int l = 0;
  for (long long q = bytes / (8LL << 20); q > 1; q >>= 1) ++l;
  return std::min(16, 1 << (1 + l / 2));
}

// tune(f, barriers = auto), the default, in a device group's shared full form (every block
// pushes chunk r, computes chunk r-1 and pulls chunk r-2 each round): each round's barrier in two
// phases (arrive, pull, wait: the barrier's latency overlaps the pull) while a round's chunk of
// the reduce-scatter's input is under kSplitBarrierBytes, one whole barrier after the pull from
// there. Measured on 4 H200 (Adam): split 5-7% faster at 2^24 parameters (4 rounds of 8 MiB),
// 1-2% at 2^26 (8 of 16 MiB), slower at 2^28 (16 of 32 MiB). The other forms (roles, head, tail)
// and a light epilogue's rounds keep whole barriers (Emitter::emitDevKernel): LAMB's kernels split
// were up to 22 us slower (`moments` in roles) or level (`apply`); the epilogues were not measured
// split.
constexpr long long kSplitBarrierBytes = 32LL << 20;
__host__ __device__ inline bool devSplitBarriers(long long bytes, int rounds) {
  return rounds > 0 && bytes / rounds < kSplitBarrierBytes;
}

// The same for a light epilogue's two-shot kernel (a fused [allreduce, members] group's, an
// overlap's one-chunk kernel: Emitter::epilogueRounds): devAutoRounds on two ranks, at most 2
// rounds on more, where each round's slices are smaller and its barriers weigh more against the
// little compute there is to overlap. Measured with Megatron's epilogue (f16, H = 4096) at 16 to
// 64 MiB: on 4 H200 4 rounds took 5-16% longer than 1 or 2; on 2 they took up to 7% less.
inline int epilogueAutoRounds(long long bytes, long long ranks) {
  const int r = devAutoRounds(bytes);
  return ranks <= 2 ? r : std::min(r, 2);
}

// Rounds of a device group by copy engines when the schedule does not set them (tune(f, chunks = R)),
// from the bytes of the reduce-scatter's input (else the gathered tensor): one below 64 MiB, else two.
// Each round costs every copy engine a fixed start and the ranks a barrier, so a copy-engine
// group wants few rounds: tools/bench/gpu/micro/ce-allreduce-micro.cu times the all-reduce in 1 to
// 16 rounds (on 4 H200 one round was fastest at 16 and 64 MiB, two at 1 GiB; groups in
// devAutoRounds' rounds took 1.4-1.9x the time of the kernels' own transfers).
inline int ceAutoRounds(long long bytes) { return bytes < (64LL << 20) ? 1 : 2; }

// Two-shot allreduce (sum) of P*m elements: push slices, barrier, sum this rank's slice into
// `out` and the slice window, barrier, pull the other ranks' slices. The staging area is at
// byte 0 of `stage`, the slice at byte 0 of `slice`.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_two_shot(ncclDevComm dc, ncclWindow_t stage, ncclWindow_t slice, const T* __restrict__ in, T* __restrict__ out, long long m,
                           int vec) {
  pdlLaunchDependents();
  pdlWait();  // launched with PDL (launchDependent): the kernel before this one is done
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  const int P = dc.lsaSize, me = dc.lsaRank;
  pushSlices<T, V>(stage, 0, P, me, in, m, 0, m, vec);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank's slot of my slice has arrived
  // (my own slot: my input's slice me, which the push left there)
  const OwnSlots<T> st{static_cast<const T*>(ncclGetLocalPointer(stage, 0)), in + me * m, me};
  T* mine = static_cast<T*>(ncclGetLocalPointer(slice, 0));
  forUnits<V>(
      0, m, vec,
      [&](long long i0) {
        const Vec<T, V> y = sumSlotsRounded<T, V>(st, m, P, i0);
        store_vec(mine + i0, y);
        store_vec(out + me * m + i0, y);
      },
      [&](long long i) {
        const T y = Store<T>::from(sumSlot(st, m, P, i));
        mine[i] = y;
        out[me * m + i] = y;
      });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank published its slice
  pullSlices<T, V>(slice, 0, P, me, out, m, 0, m, vec);
}

// Every rank of the device communicator reaches this point before any goes on (one CTA, LSA
// barrier `index`): copy-engine transfers issued before it on each rank's stream are complete
// and visible everywhere after it. No other device-API kernel using the same barrier may run
// beside it: the all_to_all pipeline launches it on its second stream (index 0); the
// copy-engine allreduce on its copy stream (index 0) and on the main stream (index 1).
static __global__ void __launch_bounds__(kDevThreads) dev_barrier(ncclDevComm dc, int index) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, static_cast<uint32_t>(index)};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// The copy-engine allreduce's sum of one round: this rank's part of the round, `piece`
// elements, summed over the ranks in rank order (rank me's from `own`, this rank's input; rank
// q's from slot q of `stage`, where q's copy engine put it), rounded once, stored into `out`
// (this rank's result) and `red` (the window the other ranks' copy engines pull it from).
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads) ce_sum_parts(T* __restrict__ out, T* __restrict__ red, const T* __restrict__ own,
                                                            const T* __restrict__ stage, long long piece, int P, int me, int vec) {
  forUnits<V>(
      0, piece, vec,
      [&](long long i0) {
        float s[V];
#pragma unroll
        for (int e = 0; e < V; ++e) s[e] = 0.0f;
        for (int q = 0; q < P; ++q) {
          Vec<T, V> x;
          load_vec(x, (q == me ? own : stage + q * piece) + i0);
#pragma unroll
          for (int e = 0; e < V; ++e) s[e] = __fadd_rn(s[e], to_f(x.v[e]));
        }
        Vec<T, V> y;
#pragma unroll
        for (int e = 0; e < V; ++e) y.v[e] = Store<T>::from(s[e]);
        store_vec(out + i0, y);
        store_vec(red + i0, y);
      },
      [&](long long i) {
        float s = 0.0f;
        for (int q = 0; q < P; ++q) s = __fadd_rn(s, to_f(q == me ? own[i] : stage[q * piece + i]));
        const T y = Store<T>::from(s);
        out[i] = y;
        red[i] = y;
      });
}

// Point-to-point exchange of n elements where every rank sends to one rank (`to`) and receives
// from one (the ranks' targets are a permutation: a send to the next or previous rank or group):
// push into `to`'s window at byte `base`, a barrier, then copy what arrived into `out`. Callers
// alternate between two such areas, as for the one-shot allreduce.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_send_recv(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long n, int to, int vec) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  forUnits<V>(
      0, n, vec,
      [&](long long i0) {
        Vec<T, V> x;
        load_vec(x, in + i0);
        store_vec(peerPtr<T>(w, base + i0 * sizeof(T), to), x);
      },
      [&](long long i) { *peerPtr<T>(w, base + i * sizeof(T), to) = in[i]; });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // what this block's elements of every rank's window receive has arrived
  const T* got = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, n, vec,
      [&](long long i0) {
        Vec<T, V> x;
        load_vec_rw(x, got + i0);
        store_vec(out + i0, x);
      },
      [&](long long i) { out[i] = got[i]; });
}

// All-to-all within a group of `size` ranks, world ranks first..first+size-1, this rank at `pos`:
// block j (`chunk` elements) of `in` goes to slot `pos` of group rank j's window at byte `base`,
// a barrier, then the window's `size` slots are this rank's output. The blocks of every rank
// take the same elements i of each slot (forUnits over one chunk), so after block b's barrier
// what it reads was written by block b everywhere. Callers alternate between two areas, as for
// the one-shot allreduce.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_all_to_all(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long chunk,
                   int first, int size, int pos, int vec) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  forUnits<V>(
      0, chunk, vec,
      [&](long long i0) {
        for (int j = 0; j < size; ++j) {
          Vec<T, V> x;
          load_vec(x, in + j * chunk + i0);
          store_vec(peerPtr<T>(w, base + (pos * chunk + i0) * sizeof(T), first + j), x);
        }
      },
      [&](long long i) {
        for (int j = 0; j < size; ++j) *peerPtr<T>(w, base + (pos * chunk + i) * sizeof(T), first + j) = in[j * chunk + i];
      });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // this block's elements of every slot have arrived
  const T* got = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, chunk, vec,
      [&](long long i0) {
        for (int j = 0; j < size; ++j) {
          Vec<T, V> x;
          load_vec_rw(x, got + j * chunk + i0);
          store_vec(out + j * chunk + i0, x);
        }
      },
      [&](long long i) {
        for (int j = 0; j < size; ++j) out[j * chunk + i] = got[j * chunk + i];
      });
}

// One-shot allreduce (sum) of n elements: push, barrier, sum the P slots locally. The slots
// start at byte `base` of w; callers alternate between two such areas, so that a fast rank's next call cannot
// overwrite a slot that a slow rank still reads (it would first have to pass the next call's
// barrier, which the slow rank reaches only after this call's kernel ended).
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_one_shot(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long n, int vec) {
  pdlLaunchDependents();
  pdlWait();  // launched with PDL (launchDependent): the kernel before this one is done
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  const int P = dc.lsaSize, me = dc.lsaRank;
  pushWhole<T, V>(gridPart(), w, base, P, me, in, n, 0, n, vec);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank's buffer has arrived
  const T* stage = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, n, vec,
      [&](long long i0) { store_vec(out + i0, sumSlotsRounded<T, V>(stage, n, P, i0)); },
      [&](long long i) { out[i] = Store<T>::from(sumSlot(stage, n, P, i)); });
}

// The LL form ("low latency", after NCCL's protocol of that name) of the one-shot allreduce: no
// barrier. Every 8 bytes of a rank's buffer travel in a 16-byte line {data[0:4], flag, data[4:8],
// flag}, stored whole (one 16-byte store); each 8-byte half arrives whole, so a reader that sees
// the call's flag in both halves sees the call's data. Rank me stores line j of its buffer into
// line j of slot me of every other rank's area; every rank then waits for line j of each slot
// (llSumLines) and sums in rank order (its own line from its input; the thread that pushed line
// j, so that an output that is the input too is safe). The flag is the call's epoch
// (never 0; the window is zeroed when it grows). Callers alternate between two areas: a rank
// writes into area a again two calls later, after it received every rank's lines of the call
// between, which each rank sent only after its kernel of this call, the last reader of area a,
// had ended. No barrier also means no block waits for another rank's block of its own index, so
// the grid need not match across ranks; every block must be resident at once (a block waits for
// lines other ranks' blocks send), hence at most kDevMaxBlocks blocks.
constexpr size_t kLLLineBytes = 16;  // 8 bytes of data and two 4-byte flags
__host__ __device__ constexpr long long llLines(long long n, size_t elemBytes) {
  return (n * static_cast<long long>(elemBytes) + 7) / 8;
}
// Bytes of an LL window for n elements per rank: two areas of P slots of llLines(n) lines.
inline size_t llWindowBytes(long long n, size_t elemBytes, int P) {
  return 2 * static_cast<size_t>(P) * static_cast<size_t>(llLines(n, elemBytes)) * kLLLineBytes;
}
// Grows an LL window to `want` bytes. A new window is zeroed on every rank before any rank's
// next kernel can store into it: the memset, then an allreduce every rank enters after its own
// memset, all on the stream. True when it registered a new window.
inline bool ensureZeroed(Window& w, ncclComm_t comm, cudaStream_t stream, size_t want, const char* program, const char* stage) {
  if (!w.ensure(comm, stream, want, program, stage)) return false;
  check(cudaMemsetAsync(w.ptr, 0, w.bytes, stream), program, stage, "cudaMemsetAsync (LL window)");
  check(ncclAllReduce(w.ptr, w.ptr, 1, ncclInt8, ncclMax, comm, stream), program, stage, "ncclAllReduce (window barrier)");
  return true;
}
// The next epoch of an LL exchange (flags are never 0, what a zeroed window holds).
inline unsigned nextLLEpoch(unsigned& epoch) {
  if (++epoch == 0) epoch = 1;
  return epoch;
}
__device__ __forceinline__ void llStore(void* line, uint2 d, unsigned flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(d.x), "r"(flag), "r"(d.y), "r"(flag) : "memory");
}
// One load of a line, whatever its flags say.
__device__ __forceinline__ uint4 llLoad(const void* line) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(line) : "memory");
  return v;
}
// The data of a line loaded as `v`, once both its flags are the call's (loaded again until then).
__device__ __forceinline__ uint2 llData(uint4 v, const void* line, unsigned flag) {
  while (v.y != flag || v.w != flag) v = llLoad(line);
  return make_uint2(v.x, v.z);
}
__device__ __forceinline__ uint2 llWait(const void* line, unsigned flag) { return llData(llLoad(line), line, flag); }
// Line j (8 bytes: 8 / sizeof(T) elements) of a buffer of n elements, zeros past its end. (Host
// callable too, for tests/runtime/ll_test.cu.)
template <class T> __host__ __device__ __forceinline__ uint2 llPack(const T* p, long long n, long long j, bool aligned) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  const long long i0 = j * E;
#ifdef __CUDA_ARCH__
  if (aligned && i0 + E <= n) return __ldg(reinterpret_cast<const uint2*>(p + i0));
#else
  if (aligned && i0 + E <= n) return *reinterpret_cast<const uint2*>(p + i0);
#endif
  unsigned long long w = 0;
  for (int e = 0; e < E && i0 + e < n; ++e) {
    unsigned long long bits = 0;
    memcpy(&bits, p + i0 + e, sizeof(T));
    w |= bits << (8 * sizeof(T) * e);
  }
  return make_uint2(static_cast<unsigned>(w), static_cast<unsigned>(w >> 32));
}
// Element e of a line.
template <class T> __host__ __device__ __forceinline__ T llElem(uint2 d, int e) {
  const unsigned long long w = (static_cast<unsigned long long>(d.y) << 32 | d.x) >> (8 * sizeof(T) * e);
  T x;
  memcpy(&x, &w, sizeof(T));
  return x;
}
// The sum over the P ranks, in rank order, of lines j0 .. j0+L-1 (E = 8 / sizeof(T) elements
// each) of every rank's slot in this rank's area (P slots of `lines` lines), rank me's from `own`:
// sum[l E + k] is element k of line j0 + l. The lines of kPeersInFlight ranks are loaded at once
// before any flag is checked (a wait per line, one after another, left a rank's lines to arrive
// one round trip at a time); a line whose flags are not yet the call's is loaded again until
// they are.
template <class T, int L>
__device__ __forceinline__ void llSumLines(const char* area, long long lines, int P, int me, unsigned flag, long long j0, const uint2 (&own)[L],
                                           float (&sum)[L * (8 / sizeof(T))]) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
#pragma unroll
  for (int e = 0; e < L * E; ++e) sum[e] = 0.0f;
  for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
    uint4 v[kPeersInFlight][L];
#pragma unroll
    for (int q = 0; q < kPeersInFlight; ++q)
      if (p0 + q < P && p0 + q != me)
#pragma unroll
        for (int l = 0; l < L; ++l) v[q][l] = llLoad(area + ((p0 + q) * lines + j0 + l) * static_cast<long long>(kLLLineBytes));
#pragma unroll
    for (int q = 0; q < kPeersInFlight; ++q) {
      if (p0 + q >= P) continue;
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const uint2 d =
            p0 + q == me ? own[l] : llData(v[q][l], area + ((p0 + q) * lines + j0 + l) * static_cast<long long>(kLLLineBytes), flag);
#pragma unroll
        for (int k = 0; k < E; ++k) sum[l * E + k] = __fadd_rn(sum[l * E + k], to_f(llElem<T>(d, k)));
      }
    }
  }
}

// The LL pushes: rank me's whole input (n elements) as lines with flags into slot me of every
// other rank's area at byte `off` of w (dev_allreduce_ll, a fused group's one-shot LL form).
template <class T>
__device__ __forceinline__ void pushWholeLL(Part pt, ncclWindow_t w, size_t off, int P, int me, const T* __restrict__ in, long long n,
                                            unsigned flag) {
  const long long lines = llLines(n, sizeof(T));
  const bool aligned = (reinterpret_cast<uintptr_t>(in) & 7u) == 0;
  const long long tid = pt.index * (long long)blockDim.x + threadIdx.x, nth = (long long)pt.count * blockDim.x;
  for (long long j = tid; j < lines; j += nth) {
    const uint2 d = llPack(in, n, j, aligned);
    for (int p = 0; p < P; ++p)
      if (p != me) llStore(peerPtr<char>(w, off + (me * lines + j) * kLLLineBytes, p), d, flag);
  }
}
// Stores the sums s[0 .. E) of 8-byte word j (E = 8 / sizeof(T) elements) of a buffer of n
// elements: one 8-byte store where whole and aligned, else element by element up to n.
template <class T>
__device__ __forceinline__ void llStoreWord(T* __restrict__ out, long long n, long long j, const float* s, bool aligned) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  const long long i0 = j * E;
  if (aligned && i0 + E <= n) {
    Vec<T, E> y;
#pragma unroll
    for (int e = 0; e < E; ++e) y.v[e] = Store<T>::from(s[e]);
    store_vec(out + i0, y);
  } else {
    for (int e = 0; e < E && i0 + e < n; ++e) out[i0 + e] = Store<T>::from(s[e]);
  }
}
template <class T>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_ll(ncclWindow_t w, size_t base, int P, int me, const T* __restrict__ in, T* __restrict__ out, long long n, unsigned flag,
                     int aligned) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  pdlLaunchDependents();
  pdlWait();  // the kernel before this one (this call's input, the last call's reads) is done
  pushWholeLL(gridPart(), w, base, P, me, in, n, flag);
  const long long lines = llLines(n, sizeof(T));
  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;
  const char* area = static_cast<const char*>(ncclGetLocalPointer(w, base));
  for (long long j = tid; j < lines; j += nth) {
    float s[E];
    const uint2 own[1] = {llPack(in, n, j, aligned)};
    llSumLines<T, 1>(area, lines, P, me, flag, j, own, s);
    llStoreWord(out, n, j, s, aligned);
  }
}
// Blocks of an LL allreduce of n elements: a line per thread, at most kDevMaxBlocks (resident at
// once on any GPU the device path runs on). Blocks of 64 to 256 threads took the same time as
// kDevThreads on 4 H200.
inline int llBlocks(long long n, size_t elemBytes) { return devBlocks(llLines(n, elemBytes)); }
// What a one-shot group's kernel sums (sumSlots, sumSlot): in LL form this rank's own input and the
// other ranks' lines as they arrive (waiting for each), else the slots after the barrier.
template <class T> struct LLSlots {
  const char* area;  // this rank's area: P slots of `lines` lines
  long long lines;
  int me;
  const T* own;
  unsigned flag;
};
// ... in LL128 form (the same fields; 128-byte lines: kLL128LineWords words of data, then the flag).
template <class T> struct LL128Slots : LLSlots<T> {};
// Element i summed over the ranks in rank order, as sumSlot.
template <class T> __device__ __forceinline__ float sumSlot(const LLSlots<T>& s, long long m, int P, long long i) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  (void)m;
  float r = 0.0f;
  for (int q = 0; q < P; ++q) {
    const float x = q == s.me ? to_f(s.own[i])
                              : to_f(llElem<T>(llWait(s.area + (q * s.lines + i / E) * static_cast<long long>(kLLLineBytes), s.flag),
                                               static_cast<int>(i % E)));
    r = __fadd_rn(r, x);
  }
  return r;
}
// Elements i0 .. i0+V-1 (i0 a multiple of V) summed over the ranks in rank order, as sumSlots.
template <class T, int V>
__device__ __forceinline__ void sumSlots(const LLSlots<T>& s, long long m, int P, long long i0, float (&sum)[V]) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  if constexpr (V % E == 0) {  // whole lines (i0 is then a multiple of E)
    Vec<T, V> x;
    load_vec(x, s.own + i0);
    uint2 own[V / E];
    memcpy(own, x.v, sizeof own);
    llSumLines<T, V / E>(s.area, s.lines, P, s.me, s.flag, i0 / E, own, sum);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = sumSlot(s, m, P, i0 + e);
  }
}

// The LL128 form of the one-shot allreduce (after NCCL's protocol of that name): as the LL form,
// no barrier and flags in the data, but a line is 128 bytes with one 8-byte flag, 120 bytes of
// data (the LL form's lines carry 8 data bytes in 16). Eight threads of a warp hold a line, 16
// bytes each: thread t < 7 words 15 L + 2t and 15 L + 2t + 1 of line L (8-byte words of the
// buffer, zeros past its end), thread 7 word 15 L + 14 and the flag (the call's epoch, never 0,
// as a 64-bit word). A warp stores four lines (512 bytes) with one instruction, each line's
// eight 16-byte parts to one 128-byte aligned line of the peer's area: NVLink carries such a
// store whole, so a reader that sees a line's flag sees its data (the assumption NCCL's LL128
// makes on NVLink). Readers load a line, wait (the warp together) until its flag thread sees
// the call's flag, then load the line again, as NCCL's LL128 does: the first load's data parts
// may have been read before the flag's. Rank order of the sums, the areas used in turn and the
// in-place safety (a thread sums and stores the words it pushed) are the LL form's. Its own
// window (dev_->ll128[k]): another form's data left in a window could read as a flag.
constexpr size_t kLL128LineBytes = 128;
constexpr long long kLL128LineWords = 15;  // 8-byte words of data per line
__host__ __device__ constexpr long long ll128Lines(long long n, size_t elemBytes) {
  return (n * static_cast<long long>(elemBytes) + 8 * kLL128LineWords - 1) / (8 * kLL128LineWords);
}
// Bytes of an LL128 window for n elements per rank: two areas of P slots of ll128Lines(n) lines.
inline size_t ll128WindowBytes(long long n, size_t elemBytes, int P) {
  return 2 * static_cast<size_t>(P) * static_cast<size_t>(ll128Lines(n, elemBytes)) * kLL128LineBytes;
}
// Part t (0..7) of line L of a buffer of n elements, with the flag in part 7.
template <class T>
__host__ __device__ __forceinline__ uint4 ll128Part(const T* p, long long n, long long L, int t, bool aligned, unsigned flag) {
  const long long j = kLL128LineWords * L + 2 * t;
  const uint2 a = llPack(p, n, j, aligned);
  const uint2 b = t < 7 ? llPack(p, n, j + 1, aligned) : make_uint2(flag, 0u);
  return make_uint4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void ll128Store(void* part, uint4 d) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(part), "r"(d.x), "r"(d.y), "r"(d.z), "r"(d.w) : "memory");
}
// A warp's lines of a part's threads: line L = 4 (warp + k nwarps) + lane / 8, part lane % 8.
struct LL128Lanes {
  int t;                      // this thread's part of its line
  long long first, step;      // line of this thread's first step, lines per step of the part's warps
};
__device__ __forceinline__ LL128Lanes ll128Lanes(Part pt) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const long long warp = (pt.index * (long long)blockDim.x + threadIdx.x) >> 5, nwarps = ((long long)pt.count * blockDim.x) >> 5;
  return LL128Lanes{lane & 7, 4 * warp + (lane >> 3), 4 * nwarps};
}
// The LL128 pushes: rank me's whole input (n elements) as 128-byte lines into slot me of every
// other rank's area at byte `off` of w.
template <class T>
__device__ __forceinline__ void pushWholeLL128(Part pt, ncclWindow_t w, size_t off, int P, int me, const T* __restrict__ in, long long n,
                                               unsigned flag) {
  const long long lines = ll128Lines(n, sizeof(T));
  const bool aligned = (reinterpret_cast<uintptr_t>(in) & 7u) == 0;
  const LL128Lanes ln = ll128Lanes(pt);
  for (long long L = ln.first; L < lines; L += ln.step) {  // the eight threads of a line together
    const uint4 d = ll128Part(in, n, L, ln.t, aligned, flag);
    for (int p = 0; p < P; ++p)
      if (p != me) ll128Store(peerPtr<char>(w, off + (me * lines + L) * kLL128LineBytes + 16 * ln.t, p), d);
  }
}
template <class T>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_ll128(ncclWindow_t w, size_t base, int P, int me, const T* __restrict__ in, T* __restrict__ out, long long n,
                        unsigned flag, int aligned) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  pdlLaunchDependents();
  pdlWait();  // the kernel before this one (this call's input, the last call's reads) is done
  pushWholeLL128(gridPart(), w, base, P, me, in, n, flag);
  const long long lines = ll128Lines(n, sizeof(T));
  const LL128Lanes ln = ll128Lanes(gridPart());
  const char* area = static_cast<const char*>(ncclGetLocalPointer(w, base));
  const int words = ln.t < 7 ? 2 : 1;  // data words of this thread's part
  // Steps are the warp's together (the first step's line differs by lane / 8 only): the wait below
  // is a warp vote.
  for (long long L = ln.first; L - (threadIdx.x & 31) / 8 < lines; L += ln.step) {
    const bool valid = L < lines;
    float s[2 * E];
#pragma unroll
    for (int e = 0; e < 2 * E; ++e) s[e] = 0.0f;
    const uint4 own = valid ? ll128Part(in, n, L, ln.t, aligned, flag) : make_uint4(0, 0, 0, 0);
    for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
      uint4 v[kPeersInFlight];
      auto load = [&]() {
        bool wait = false;
#pragma unroll
        for (int q = 0; q < kPeersInFlight; ++q)
          if (valid && p0 + q < P && p0 + q != me) {
            v[q] = llLoad(area + ((p0 + q) * lines + L) * static_cast<long long>(kLL128LineBytes) + 16 * ln.t);
            wait |= ln.t == 7 && (v[q].z != flag || v[q].w != 0u);
          }
        return wait;
      };
      while (__any_sync(0xffffffffu, load())) {
      }
      load();  // every line of the warp has its flag: its data as stored with it
#pragma unroll
      for (int q = 0; q < kPeersInFlight; ++q) {
        if (p0 + q >= P) continue;
        const uint4 d = p0 + q == me ? own : v[q];
#pragma unroll
        for (int k = 0; k < 2; ++k)
          if (k < words)
#pragma unroll
            for (int e = 0; e < E; ++e)
              s[k * E + e] = __fadd_rn(s[k * E + e], to_f(llElem<T>(k ? make_uint2(d.z, d.w) : make_uint2(d.x, d.y), e)));
      }
    }
    if (!valid) continue;
    for (int k = 0; k < words; ++k) llStoreWord(out, n, kLL128LineWords * L + 2 * ln.t + k, s + k * E, aligned);
  }
}
// Blocks of an LL128 allreduce of n elements: eight threads a line, at most kDevMaxBlocks.
inline int ll128Blocks(long long n, size_t elemBytes) { return devBlocks(8 * ll128Lines(n, elemBytes)); }
// One 8-byte load, whatever the memory holds.
__device__ __forceinline__ uint2 llLoad8(const void* p) {
  uint2 v;
  asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
  return v;
}
// The LL128 form's reads for a group's sums, by any partition of the elements: a word's line
// flag is loaded (again until it is the call's), then the word (a line arrives whole, so its
// data is there once its flag is; loaded after the flag was seen, as NCCL's LL128 reloads).
template <class T> __device__ __forceinline__ const char* ll128Line(const LL128Slots<T>& s, int q, long long j) {
  return s.area + (q * s.lines + j / kLL128LineWords) * static_cast<long long>(kLL128LineBytes);
}
template <class T> __device__ __forceinline__ bool ll128Ready(uint2 f, const LL128Slots<T>& s) { return f.x == s.flag && f.y == 0u; }
// Element i summed over the ranks in rank order, as sumSlot.
template <class T> __device__ __forceinline__ float sumSlot(const LL128Slots<T>& s, long long m, int P, long long i) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  (void)m;
  float r = 0.0f;
  for (int q = 0; q < P; ++q) {
    float x;
    if (q == s.me) {
      x = to_f(s.own[i]);
    } else {
      const char* line = ll128Line(s, q, i / E);
      while (!ll128Ready(llLoad8(line + 8 * kLL128LineWords), s)) {
      }
      x = to_f(llElem<T>(llLoad8(line + 8 * ((i / E) % kLL128LineWords)), static_cast<int>(i % E)));
    }
    r = __fadd_rn(r, x);
  }
  return r;
}
// Elements i0 .. i0+V-1 (i0 a multiple of V) summed over the ranks in rank order, as sumSlots:
// the flags of kPeersInFlight ranks' lines loaded together, then their words together.
template <class T, int V>
__device__ __forceinline__ void sumSlots(const LL128Slots<T>& s, long long m, int P, long long i0, float (&sum)[V]) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  if constexpr (V % E == 0) {  // whole words (i0 is then a multiple of E)
    constexpr int W = V / E;
    Vec<T, V> x;
    load_vec(x, s.own + i0);
    uint2 own[W];
    memcpy(own, x.v, sizeof own);
    const long long j0 = i0 / E;
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = 0.0f;
    for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
      uint2 f[kPeersInFlight][W], d[kPeersInFlight][W];
#pragma unroll
      for (int q = 0; q < kPeersInFlight; ++q)
        if (p0 + q < P && p0 + q != s.me)
#pragma unroll
          for (int w = 0; w < W; ++w) f[q][w] = llLoad8(ll128Line(s, p0 + q, j0 + w) + 8 * kLL128LineWords);
#pragma unroll
      for (int q = 0; q < kPeersInFlight; ++q)
        if (p0 + q < P && p0 + q != s.me)
#pragma unroll
          for (int w = 0; w < W; ++w) {
            while (!ll128Ready(f[q][w], s)) f[q][w] = llLoad8(ll128Line(s, p0 + q, j0 + w) + 8 * kLL128LineWords);
          }
#pragma unroll
      for (int q = 0; q < kPeersInFlight; ++q)
        if (p0 + q < P && p0 + q != s.me)
#pragma unroll
          for (int w = 0; w < W; ++w) d[q][w] = llLoad8(ll128Line(s, p0 + q, j0 + w) + 8 * ((j0 + w) % kLL128LineWords));
#pragma unroll
      for (int q = 0; q < kPeersInFlight; ++q) {
        if (p0 + q >= P) continue;
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const uint2 v = p0 + q == s.me ? own[w] : d[q][w];
#pragma unroll
          for (int k = 0; k < E; ++k) sum[w * E + k] = __fadd_rn(sum[w * E + k], to_f(llElem<T>(v, k)));
        }
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] = sumSlot(s, m, P, i0 + e);
  }
}

// The forms of a group's one-shot kernel (its template argument kProto): pushes then a barrier,
// LL lines, LL128 lines.
constexpr int kProtoBarrier = 0, kProtoLL = 1, kProtoLL128 = 2;
template <int kProto, class T>
__device__ __forceinline__ auto oneShotSlots(ncclWindow_t w, size_t off, int me, const T* own, long long n, unsigned flag) {
  if constexpr (kProto == kProtoLL)
    return LLSlots<T>{static_cast<const char*>(ncclGetLocalPointer(w, off)), llLines(n, sizeof(T)), me, own, flag};
  else if constexpr (kProto == kProtoLL128)
    return LL128Slots<T>{{static_cast<const char*>(ncclGetLocalPointer(w, off)), ll128Lines(n, sizeof(T)), me, own, flag}};
  else
    return static_cast<const T*>(ncclGetLocalPointer(w, off));
}
// Host side: do the byte ranges [a, a + an) and [b, b + bn) share no byte?
inline bool disjoint(const void* a, size_t an, const void* b, size_t bn) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + an <= y || y + bn <= x;
}
// Host side: may the LL kernel load and store whole lines (8 bytes) at p?
template <class T> inline bool aligned8(const T* p) { return (reinterpret_cast<uintptr_t>(p) & 7u) == 0; }

}  // namespace coconet_rt
