// ---- coconet_device.cuh, part 2 of 7: programmatic dependent launch ----
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
// is an ordinary one. The tuning table's pdl 0 (which coconetc tune measures) turns it off.
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
// device, and the tuning table's pdl).
inline bool pdlEnabled() {
  static std::atomic<int> known[64] = {};  // per device: 0 not read yet, 1 no, 2 yes
  int dev = 0;
  if (kPdl == 0 || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
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

