// pdl-micro: does programmatic dependent launch place a dependent kernel's blocks on the SMs
// that some of the running kernel's blocks have left, before its last block ends? (Session 44's
// stamps of LAMB found `apply`'s earliest block entering ~2 us after `moments`' latest block
// ended, though `moments`' 32 mover blocks had left ~20 us before its workers:
// docs/benchmarks/gpu/2026-11-28-4xH200-session44.)
//
// Kernel `primary`: one block of 512 threads per SM (its dynamic shared memory keeps a second
// off), every block first says its dependents may launch (griddepcontrol.launch_dependents, as
// the generated kernels do, after their own wait), then `early` blocks spin for `shortUs` and
// leave, the rest for `longUs`. Kernel `secondary`, launched next on the stream with
// cudaLaunchAttributeProgrammaticStreamSerialization (or without, for comparison), records
// %globaltimer at its entry, before its griddepcontrol.wait, and after it. Printed per form,
// medians over the repetitions, microseconds from the primary's earliest entry:
//   early blocks' latest exit | primary's latest exit | secondary's earliest entry | its median
//   entry | its earliest return from the wait | its latest (every block's thread 0)
// If PDL places blocks early, the secondary's earliest entry follows the early blocks' exit;
// if not, the primary's last exit.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o pdl-micro
//   ./pdl-micro [early=32] [shortUs=10] [longUs=60] [reps=50] [secBig=0] [chain=0] [regs=0] [bigParam=0] [peer=0] [local=0] [gapUs=0] [lmem=0] [printf=0] [nccl=0]
// secBig=1 gives the secondary as much shared memory as the primary, so that no SM holds a block of
// each: its blocks can enter only where the primary's have left. (With secBig=0 they share the SMs:
// 2026-11-28, 1 H200, they entered ~4 us after the primary's first block, before any had left.)
// The last three bring the pair closer to a generated step's (LAMB's `moments` then `apply`):
// regs=1 keeps the primary at one block per SM by its registers (128 a thread: the whole register
// file) instead of shared memory, and launches the secondary as 2 blocks per SM with 16 bytes of
// shared memory (it fits on no SM the primary holds); bigParam=1 gives the secondary a 1-KiB
// parameter by value (the device communicator and maps); peer=1 has every primary block store
// 8 KiB into GPU 1's memory before it leaves (a push over NVLink; needs 2 GPUs), peer=2 only the
// early blocks (as `moments`' movers, done pushing before its workers' last chunk), peer=3 those
// then __threadfence_system(), peer=4 every block, then the fence; local=K has every late block
// store K 16-byte units a thread into this GPU's memory as it leaves (session 51). gapUs=G has the
// host wait G us between the two launches, so that the secondary reaches the GPU after the primary's
// blocks have said `launch_dependents` (as where a call's host code runs between a step's launches
// while the GPU keeps up with it: the generated drivers' --bench; session 52). lmem=1 gives the
// secondary a stack frame (local memory, as ptxas's spills give LAMB's `apply`), printf=1 puts a
// printf (never reached) in the primary (as stamps.py's in `moments`). nccl=K first sets up what a
// generated program's process has: 1 an NCCL communicator of one rank (ncclCommInitRank), 2 also its
// device communicator (ncclDevCommCreate, 128 LSA barriers), 3 also a 1-MiB symmetric window
// (ncclMemAlloc, ncclCommWindowRegister), 4 also one ncclAllReduce on the micro's stream.
//   nvcc ... pdl-micro.cu -lnccl   (on the GPU machines: -I$NC/include -L$NC/lib, PyTorch's NCCL)
#include "micro.cuh"

#include <chrono>
#include <cstdint>
#include <cstring>

#include <nccl.h>
#include <nccl_device.h>

#define NC(x)                                                                                   \
  do {                                                                                         \
    ncclResult_t r_ = (x);                                                                     \
    if (r_ != ncclSuccess) {                                                                   \
      std::printf("pdl-micro: %s failed: %s\n", #x, ncclGetErrorString(r_));                    \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Stamps {
  unsigned long long primEntry, earlyExit, primExit, secEntry, secWait, secWaitLast;
};

constexpr int kLive = 112;  // regs=1: values live across the spin (ptxas: 128 registers)

template <bool Regs, bool Printf>
__global__ void __launch_bounds__(512, 1) primary(Stamps* s, int early, unsigned shortNs, unsigned longNs, float4* peer, int peerMode,
                                                  float4* local, int localUnits) {
  extern __shared__ unsigned char pad[];  // one block per SM (regs=0)
  const unsigned long long t0 = gtime();
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");  // as the generated kernels: wait, then let go
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  if (threadIdx.x == 0) atomicMin(&s->primEntry, t0);
  if constexpr (Printf)
    if (shortNs == 1u) printf("pdl-micro: block %d\n", static_cast<int>(blockIdx.x));  // never: shortUs is not 0.001
  const unsigned long long until = t0 + (static_cast<int>(blockIdx.x) < early ? shortNs : longNs);
  if constexpr (Regs) {
    float r[kLive];
#pragma unroll
    for (int j = 0; j < kLive; ++j) r[j] = __int_as_float(static_cast<int>(threadIdx.x) + j);
    while (gtime() < until) {
#pragma unroll
      for (int j = 0; j < kLive; ++j) r[j] = fmaf(r[j], 1.0001f, r[(j + 1) % kLive]);
    }
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kLive; ++j) sum += r[j];
    if (sum == 1.2345f) s->secWait = 0;  // never: keeps the values live
  } else {
    while (gtime() < until) {
    }
    if (threadIdx.x == 0) pad[0] = 1;
  }
  // peer=1, 4: every block stores into GPU 1 before it leaves; 2, 3: only the early blocks (as
  // `moments`' movers, whose pushes end before its workers' last chunk); 3, 4: then a system fence
  // local=K: every late block stores K 16-byte units a thread into this GPU's memory as it leaves
  // (as `moments`' workers end on their last chunk's m, v and u)
  if (local && static_cast<int>(blockIdx.x) >= early)
    for (int k = 0; k < localUnits; ++k)
      local[(static_cast<size_t>(k) * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x] = make_float4(1.f, 2.f, 3.f, 4.f);
  const bool stores = peer && (peerMode == 1 || peerMode == 4 || static_cast<int>(blockIdx.x) < early);
  if (stores) {
    peer[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = make_float4(1.f, 2.f, 3.f, 4.f);
    if (peerMode >= 3) __threadfence_system();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned long long t1 = gtime();
    if (static_cast<int>(blockIdx.x) < early) atomicMax(&s->earlyExit, t1);
    atomicMax(&s->primExit, t1);
  }
}

// chain=1: a kernel before the primary, which then is launched dependent on it too (the generated
// step: every device-group kernel launched so, after the one before it)
__global__ void pre(unsigned ns) {
  const unsigned long long until = gtime() + ns;
  while (gtime() < until) {
  }
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// (each block's entry in `entries`, averaged on the host: a sum of %globaltimer values overflows)
struct Small {
  unsigned char b[8];
};
struct Big {
  unsigned char b[1024];
};
template <class Param, bool Lmem>
__global__ void __launch_bounds__(512) secondary(Stamps* s, unsigned long long* entries, Param param) {
  extern __shared__ unsigned char spad[];
  const unsigned long long t0 = gtime();
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const unsigned long long t1 = gtime();
  if constexpr (Lmem) {  // an array indexed at run time: a stack frame
    unsigned buf[24];
    for (int j = 0; j < 24; ++j) buf[j] = threadIdx.x * (j + 1) + param.b[j % sizeof param.b];
    if (buf[(threadIdx.x + param.b[0]) % 24] == 0xffffffffu) s->secWait = 0;  // never
  }
  if (threadIdx.x == 0) {
    atomicMin(&s->secEntry, t0);
    atomicMin(&s->secWait, t1);
    atomicMax(&s->secWaitLast, t1);
    entries[blockIdx.x] = t0;
    spad[0] = static_cast<unsigned char>(param.b[blockIdx.x % sizeof param.b]);
  }
}

int main(int argc, char** argv) {
  const int early = argc > 1 ? std::atoi(argv[1]) : 32;
  const double shortUs = argc > 2 ? std::atof(argv[2]) : 10.0;
  const double longUs = argc > 3 ? std::atof(argv[3]) : 60.0;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 50;
  const bool secBig = argc > 5 && std::atoi(argv[5]) != 0;
  const bool chain = argc > 6 && std::atoi(argv[6]) != 0;
  const bool regs = argc > 7 && std::atoi(argv[7]) != 0;
  const bool bigParam = argc > 8 && std::atoi(argv[8]) != 0;
  const int peerMode = argc > 9 ? std::atoi(argv[9]) : 0;
  const bool usePeer = peerMode != 0;
  const int localUnits = argc > 10 ? std::atoi(argv[10]) : 0;
  const double gapUs = argc > 11 ? std::atof(argv[11]) : 0.0;
  int dev = 0, sms = 0, smemMax = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&smemMax, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int smem = smemMax / 2 + 1024;  // more than half an SM's shared memory: one block per SM
  const bool lmem = argc > 12 && std::atoi(argv[12]) != 0;
  const bool withPrintf = argc > 13 && std::atoi(argv[13]) != 0;
  const int ncclMode = argc > 14 ? std::atoi(argv[14]) : 0;
  auto* const prim = regs ? (withPrintf ? &primary<true, true> : &primary<true, false>)
                          : (withPrintf ? &primary<false, true> : &primary<false, false>);
  auto* const secSmall = lmem ? &secondary<Small, true> : &secondary<Small, false>;
  auto* const secBigP = lmem ? &secondary<Big, true> : &secondary<Big, false>;
  CK(cudaFuncSetAttribute(prim, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(secSmall, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(secBigP, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int primSmem = regs ? 0 : smem;
  const int secSmem = secBig && !regs ? smem : 16;  // (16 bytes: room for the write below)
  const int secBlocks = regs ? 2 * sms : sms;
  // peer=1: a buffer on GPU 1 the primary's blocks store into
  float4* peer = nullptr;
  if (usePeer) {
    int n = 0, can = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
      std::printf("pdl-micro: peer=1 needs 2 GPUs\n");
      return 1;
    }
    CK(cudaDeviceCanAccessPeer(&can, dev, 1));
    if (!can) {
      std::printf("pdl-micro: GPU %d cannot access GPU 1\n", dev);
      return 1;
    }
    CK(cudaDeviceEnablePeerAccess(1, 0));
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&peer, static_cast<size_t>(sms) * 512 * sizeof(float4)));
    CK(cudaSetDevice(dev));
  }
  float4* local = nullptr;
  if (localUnits > 0) CK(cudaMalloc(&local, static_cast<size_t>(localUnits) * sms * 512 * sizeof(float4)));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("pdl-micro: %s, %d SMs; primary %d blocks (%d leave after %.1f us, the rest after %.1f us; one per SM by its %s)%s, "
              "secondary %d blocks (%s)%s%s; %d repetitions\n", prop.name, sms, sms, early, shortUs, longUs,
              regs ? "registers" : "shared memory",
              !usePeer           ? ""
              : peerMode == 1    ? ", each storing 8 KiB into GPU 1"
              : peerMode == 2    ? ", the early ones storing 8 KiB each into GPU 1"
              : peerMode == 3    ? ", the early ones storing 8 KiB each into GPU 1, then a system fence"
                                 : ", each storing 8 KiB into GPU 1, then a system fence",
              secBlocks,
              regs ? "2 per SM, 16 bytes of shared memory: no SM holds both"
              : secBig ? "as much shared memory as the primary's: no SM holds both" : "16 bytes of shared memory: fits beside it",
              bigParam ? ", a 1-KiB parameter" : "", chain ? ", after a 5-us kernel the primary depends on" : "", reps);
  if (localUnits > 0) std::printf("pdl-micro: the late blocks store %d x 16 bytes a thread into this GPU as they leave\n", localUnits);
  if (lmem || withPrintf)
    std::printf("pdl-micro:%s%s\n", lmem ? " the secondary with a stack frame (local memory)" : "", withPrintf ? " a printf in the primary" : "");
  if (gapUs > 0) std::printf("pdl-micro: the host waits %.1f us between the primary's launch and the secondary's\n", gapUs);
  Stamps* s = nullptr;
  CK(cudaMalloc(&s, sizeof(Stamps)));
  unsigned long long* entries = nullptr;
  CK(cudaMalloc(&entries, secBlocks * sizeof(unsigned long long)));
  std::vector<unsigned long long> hostEntries(secBlocks);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  ncclComm_t comm = nullptr;
  ncclDevComm devComm;
  void* winPtr = nullptr;
  ncclWindow_t win{};
  if (ncclMode >= 1) {
    ncclUniqueId id;
    NC(ncclGetUniqueId(&id));
    NC(ncclCommInitRank(&comm, 1, id, 0));
  }
  if (ncclMode >= 2) {
    ncclDevCommRequirements reqs;
    std::memset(&reqs, 0, sizeof reqs);
    reqs.lsaBarrierCount = 128;
    NC(ncclDevCommCreate(comm, &reqs, &devComm));
  }
  if (ncclMode >= 3) {
    NC(ncclMemAlloc(&winPtr, 1 << 20));
    NC(ncclCommWindowRegister(comm, winPtr, 1 << 20, &win, NCCL_WIN_COLL_SYMMETRIC));
  }
  if (ncclMode >= 4) {
    float* one = nullptr;
    CK(cudaMalloc(&one, sizeof(float)));
    NC(ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(one));
  }
  if (ncclMode > 0) std::printf("pdl-micro: NCCL set up first (nccl=%d)\n", ncclMode);
  const Stamps init{~0ull, 0, 0, ~0ull, ~0ull, 0};
  Small small{};
  Big big{};
  for (int pdl = 1; pdl >= 0; --pdl) {
    std::vector<double> col[6];
    for (int k = 0; k < reps + 5; ++k) {
      CK(cudaMemcpyAsync(s, &init, sizeof init, cudaMemcpyHostToDevice, st));
      // blocks of 512 threads, launched dependent on the kernel before (PDL) or not
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      auto config = [&](int blocks, int smemBytes, bool dependent) {
        cudaLaunchConfig_t c = {};
        c.gridDim = dim3(static_cast<unsigned>(blocks));
        c.blockDim = dim3(512);
        c.dynamicSmemBytes = static_cast<size_t>(smemBytes);
        c.stream = st;
        c.attrs = attr;
        c.numAttrs = dependent ? 1 : 0;
        return c;
      };
      if (chain) {
        pre<<<1, 32, 0, st>>>(5000);
        CK(cudaGetLastError());
      }
      const cudaLaunchConfig_t pc = config(sms, primSmem, chain && pdl);
      CK(cudaLaunchKernelEx(&pc, prim, s, early, static_cast<unsigned>(shortUs * 1000), static_cast<unsigned>(longUs * 1000), peer, peerMode,
                            local, localUnits));
      if (gapUs > 0) {  // the host's own work between the launches
        const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<long long>(gapUs * 1000));
        while (std::chrono::steady_clock::now() < until) {
        }
      }
      const cudaLaunchConfig_t sc = config(secBlocks, secSmem, pdl);
      if (bigParam)
        CK(cudaLaunchKernelEx(&sc, secBigP, s, entries, big));
      else
        CK(cudaLaunchKernelEx(&sc, secSmall, s, entries, small));
      Stamps h;
      CK(cudaMemcpyAsync(&h, s, sizeof h, cudaMemcpyDeviceToHost, st));
      CK(cudaMemcpyAsync(hostEntries.data(), entries, secBlocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost, st));
      CK(cudaStreamSynchronize(st));
      if (k < 5) continue;  // warm-up
      const double z = static_cast<double>(h.primEntry);
      col[0].push_back((h.earlyExit - z) / 1000.0);
      col[1].push_back((h.primExit - z) / 1000.0);
      col[2].push_back((h.secEntry - z) / 1000.0);
      double sum = 0;
      for (unsigned long long t : hostEntries) sum += static_cast<double>(t - h.primEntry);
      col[3].push_back(sum / secBlocks / 1000.0);
      col[4].push_back((h.secWait - z) / 1000.0);
      col[5].push_back((h.secWaitLast - z) / 1000.0);
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%s: early blocks' exit %.1f | primary's exit %.1f | secondary's first entry %.1f | "
                "mean entry %.1f | first past its wait %.1f | last past its wait %.1f us\n",
                pdl ? "PDL" : "plain", med(col[0]), med(col[1]), med(col[2]), med(col[3]), med(col[4]), med(col[5]));
  }
  if (ncclMode >= 3) {
    NC(ncclCommWindowDeregister(comm, win));
    NC(ncclMemFree(winPtr));
  }
  if (ncclMode >= 2) NC(ncclDevCommDestroy(comm, &devComm));
  if (comm) NC(ncclCommDestroy(comm));
  CK(cudaFree(entries));
  CK(cudaFree(s));
  if (peer) CK(cudaFree(peer));
  if (local) CK(cudaFree(local));
  return 0;
}
