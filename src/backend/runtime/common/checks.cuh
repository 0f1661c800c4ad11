// ---- coconet_runtime.cuh, part 1 of 6: checked calls and the checks of run()'s arguments ----
// ---- Checked calls: a failure names the program, the stage and the call ------------------
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void fail(const char* program, const char* stage, const char* what, const std::string& detail) {
  throw Error(std::string(program) + ": stage '" + stage + "': " + what + " failed: " + detail);
}
inline void check(cudaError_t e, const char* program, const char* stage, const char* what) {
  if (e != cudaSuccess) fail(program, stage, what, cudaGetErrorString(e));
}
inline void check(ncclResult_t e, const char* program, const char* stage, const char* what) {
  if (e != ncclSuccess && e != ncclInProgress) fail(program, stage, what, ncclGetErrorString(e));
}
inline void check(cublasStatus_t e, const char* program, const char* stage, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) fail(program, stage, what, "cuBLAS status " + std::to_string(static_cast<int>(e)));
}

// An integer scalar parameter arrives as a long long: an i8, u8 or i32 one must lie in its type's
// range [lo, hi], or the run refuses it rather than compute with another.
inline void checkIntegerScalar(long long v, long long lo, long long hi, const char* program, const char* name,
                               const char* type) {
  if (v >= lo && v <= hi) return;
  std::ostringstream os;
  os << program << ": scalar parameter '" << name << "' (" << type << ") is " << v << "; it must lie from " << lo << " to "
     << hi;
  throw Error(os.str());
}

// A run-time scalar that must be positive (layernorm's eps): names the stage and the parameter.
inline void checkPositiveScalar(double v, const char* program, const char* stage, const char* what, const char* name) {
  if (v > 0) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': " << what << " (scalar parameter '" << name << "') is " << v
     << "; it must be positive";
  throw Error(os.str());
}

// A dropout probability from a scalar parameter: in [0, 1), naming the stage and the parameter.
inline void checkProbability(double v, const char* program, const char* stage, const char* name) {
  if (v >= 0 && v < 1) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': dropout probability (scalar parameter '" << name << "') is " << v
     << "; it must lie in [0, 1)";
  throw Error(os.str());
}

// A dropout probability computed from scalar parameters (`1 - keep`): in [0, 1), naming the
// stage and the expression.
inline void checkProbabilityOf(double v, const char* program, const char* stage, const char* expr) {
  if (v >= 0 && v < 1) return;
  std::ostringstream os;
  os.precision(17);
  os << program << ": stage '" << stage << "': dropout probability " << expr << " is " << v
     << " with this run's parameters; it must lie in [0, 1)";
  throw Error(os.str());
}

// Size arithmetic on the caller's sizes (run(), localShape()): every sum, product and quotient is
// checked, and an element count must leave its bytes countable in 64 bits. The generated code
// writes size expressions as S_.mul(sz.s_B, sz.s_S) with `const SizeMath S_{"program"}`.
struct SizeMath {
  const char* program;
  [[noreturn]] void overflow(const char* what) const {
    throw Error(std::string(program) + ": " + what + " overflows 64 bits at these sizes");
  }
  long long add(long long a, long long b) const {
    long long r;
    if (__builtin_add_overflow(a, b, &r)) overflow("a size expression");
    return r;
  }
  long long mul(long long a, long long b) const {
    long long r;
    if (__builtin_mul_overflow(a, b, &r)) overflow("a size expression");
    return r;
  }
  long long div(long long a, long long b) const {
    if (b == 0) throw Error(std::string(program) + ": a size expression divides by zero at these sizes");
    if (b == -1) return mul(a, -1);
    return a / b;
  }
  long long mod(long long a, long long b) const {
    if (b == 0) throw Error(std::string(program) + ": a size expression divides by zero at these sizes");
    return b == -1 ? 0 : a % b;
  }
  // A rank's block of a sliced dimension of n elements cut into `parts` (torch.chunk's cut, as
  // ir::sliceBlock): blocks of ceil(n / parts) elements from the first rank on, the last ones
  // shorter or empty. Where parts divides n: n / parts elements from pos * (n / parts).
  long long blockStart(long long n, long long parts, long long pos) const {
    const long long b = blockSize(n, parts);
    return b == 0 || pos >= (n + b - 1) / b ? n : pos * b;  // (past the last block: the end)
  }
  long long blockLen(long long n, long long parts, long long pos) const {
    const long long b = blockSize(n, parts), rest = n - blockStart(n, parts, pos);
    return rest < b ? rest : b;
  }
  long long blockSize(long long n, long long parts) const { return div(add(n, parts - 1), parts); }
  // The elements of a value of this shape whose elements take `bytes` each.
  long long count(const long long* shape, int rank, int bytes, const char* value) const {
    long long n = 1, b;
    for (int k = 0; k < rank; ++k)
      if (__builtin_mul_overflow(n, shape[k], &n)) n = -1;
    if (n < 0 || __builtin_mul_overflow(n, static_cast<long long>(bytes), &b))
      throw Error(std::string(program) + ": '" + value + "' would take more than 2^63 - 1 bytes at these sizes");
    return n;
  }
};

// A tensor the caller passes must lie inside one allocation of device memory on the current
// device, whole: its bytes are checked against the allocation's range (cuMemGetAddressRange,
// reached through the runtime's driver entry point; a caching allocator's block counts as one
// allocation). role: "tensor", "state" or "output".
inline void checkDeviceSpan(const void* p, long long bytes, const char* program, const char* role, const char* name) {
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static const GetRange getRange = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<GetRange>(nullptr);
    return reinterpret_cast<GetRange>(f);
  }();
  auto where = [&] {
    std::ostringstream os;
    os << program << ": " << role << " '" << name << "' (" << p << ", " << bytes << " bytes)";
    return os.str();
  };
  if (bytes == 0) return;  // (an empty tensor, such as an empty block of uneven slices: never read)
  if (!getRange) throw Error(where() + ": cannot be checked: the driver has no cuMemGetAddressRange");
  cudaPointerAttributes a{};
  int dev = -1;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess || (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)) {
    cudaGetLastError();  // (clears the error an unknown host pointer leaves)
    throw Error(where() + " is not device memory");
  }
  if (cudaGetDevice(&dev) == cudaSuccess && a.type == cudaMemoryTypeDevice && a.device != dev)
    throw Error(where() + " is on device " + std::to_string(a.device) + ", the run on device " + std::to_string(dev));
  CUdeviceptr base = 0;
  size_t size = 0;
  if (getRange(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    throw Error(where() + " is not inside an allocation of device memory");
  const unsigned long long end = static_cast<unsigned long long>(base) + size,
                           at = reinterpret_cast<unsigned long long>(p);
  if (bytes > 0 && end - at < static_cast<unsigned long long>(bytes))
    throw Error(where() + " runs past the end of its allocation (" + std::to_string(end - at) + " bytes from it)");
}

// Every rank must run a call with the same sizes (a rank that grows a symmetric window alone
// would wait for the others forever): the first call with new sizes compares them over the
// communicator, one all-reduce of each size's largest value and (negated) smallest.
class SizeAgreement {
public:
  SizeAgreement() = default;
  SizeAgreement(const SizeAgreement&) = delete;
  SizeAgreement& operator=(const SizeAgreement&) = delete;
  ~SizeAgreement() {
    if (dev_) cudaFree(dev_);
  }
  void check(ncclComm_t comm, cudaStream_t stream, int ranks, const long long* sizes, const char* const* names, int count,
             const char* program) {
    if (ranks <= 1 || count == 0) return;
    if (static_cast<int>(agreed_.size()) == count && std::equal(agreed_.begin(), agreed_.end(), sizes)) return;
    std::vector<long long> v(2 * count);
    for (int i = 0; i < count; ++i) v[i] = sizes[i], v[count + i] = -sizes[i];
    if (!dev_) check_(cudaMalloc(&dev_, v.size() * sizeof(long long)), program, "cudaMalloc");
    check_(cudaMemcpyAsync(dev_, v.data(), v.size() * sizeof(long long), cudaMemcpyHostToDevice, stream), program,
           "cudaMemcpyAsync");
    check_(ncclAllReduce(dev_, dev_, v.size(), ncclInt64, ncclMax, comm, stream), program, "ncclAllReduce");
    check_(cudaMemcpyAsync(v.data(), dev_, v.size() * sizeof(long long), cudaMemcpyDeviceToHost, stream), program,
           "cudaMemcpyAsync");
    check_(cudaStreamSynchronize(stream), program, "cudaStreamSynchronize");
    for (int i = 0; i < count; ++i)
      if (v[i] != -v[count + i])
        throw Error(std::string(program) + ": the ranks run with different sizes: " + names[i] + " is " +
                    std::to_string(sizes[i]) + " here, from " + std::to_string(-v[count + i]) + " to " + std::to_string(v[i]) +
                    " across the ranks; every rank must pass the same sizes");
    agreed_.assign(sizes, sizes + count);
  }

private:
  template <class E>
  static void check_(E e, const char* program, const char* what) {
    coconet_rt::check(e, program, "size agreement", what);
  }
  std::vector<long long> agreed_;
  long long* dev_ = nullptr;
};

// A size the program was compiled for: the run must pass that value.
inline void checkBoundSize(long long v, long long compiled, const char* program, const char* name) {
  if (v == compiled) return;
  throw Error(std::string(program) + ": size " + name + " is " + std::to_string(v) + ", but the program was compiled for " +
              name + " = " + std::to_string(compiled));
}

