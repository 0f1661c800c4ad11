// ---- coconet_device.cuh, part 3 of 7: symmetric windows, the device communicator, peers' addresses, exchange slots ----
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

