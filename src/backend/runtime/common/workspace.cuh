// ---- coconet_runtime.cuh, part 6 of 6: workspace buffers and the timeline ----
// A device allocation's size: whole 16-byte units, at least one. NCCL's kernels read a buffer
// rounded up to 16 bytes (NVIDIA/nccl issue 265), so a tensor of 7 f16 handed to ncclAllReduce
// in an allocation of 14 bytes is read past its end (harmless on the hardware, whose allocations
// are larger, but a finding for compute-sanitizer).
inline size_t roundUp16(size_t bytes) { return bytes == 0 ? 16 : (bytes + 15) / 16 * 16; }

// Workspace: device buffers for values the program computes, grown as needed (in 16-byte units).
struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  void ensure(size_t want, const char* program, const char* stage) {
    if (want <= bytes) return;
    want = roundUp16(want);
    if (ptr) check(cudaFree(ptr), program, stage, "cudaFree");
    ptr = nullptr;
    bytes = 0;
    check(cudaMalloc(&ptr, want), program, stage, "cudaMalloc");
    bytes = want;
  }
  ~Buffer() {
    if (ptr) cudaFree(ptr);
  }
};

// The timeline of one call of run() (`coconetc compile --timeline`): an event recorded on the
// stream that did the work after every stage, copy-engine round and overlap chunk, in the
// COCONET_TIMELINE_CALL-th call (default 10: past a benchmark's warm-up); when that call ends,
// the host waits for its events and prints one line per mark to stderr, in microseconds from the
// call's start: "timeline PROGRAM rank R call N: T us STREAM LABEL". The recorded call starts
// with an NCCL allreduce of one value on the program's communicator, so that the ranks' zeros
// agree within its skew (microseconds) and a kernel's end on one rank compares with another's
// (without it, the ranks' calls start at different moments and barrier waits look like work).
// The call before it counts its marks and creates their events and the allreduce's buffer, so
// that the recorded call creates none; other calls record nothing.
class Timeline {
 public:
  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  ~Timeline() {
    for (Mark& m : marks_)
      if (m.ev) cudaEventDestroy(m.ev);
    if (align_) cudaFree(align_);
  }
  void begin(cudaStream_t s, ncclComm_t comm, int rank, const char* program) {
    if (calls_ == 0) at_ = envValue(Env::TimelineCall, 10);
    ++calls_;
    on_ = calls_ == at_;
    counting_ = calls_ + 1 == at_;
    used_ = 0;
    rank_ = rank;
    program_ = program;
    if (counting_ && !align_) {
      check(cudaMalloc(&align_, sizeof(int)), program_, "timeline", "cudaMalloc");
      check(cudaMemsetAsync(align_, 0, sizeof(int), s), program_, "timeline", "cudaMemsetAsync");
    }
    if (on_ && align_)  // (align_ is null only where the recorded call is the first)
      check(ncclAllReduce(align_, align_, 1, ncclInt32, ncclMax, comm, s), program_, "timeline", "ncclAllReduce (aligning the ranks' starts)");
    mark(s, "stream_", "start");
  }
  void mark(cudaStream_t s, const char* stream, const char* label, long long index = -1) {
    if (counting_) ++used_;
    if (!on_) return;
    if (used_ == marks_.size()) {
      marks_.emplace_back();
      check(cudaEventCreate(&marks_.back().ev), program_, "timeline", "cudaEventCreate");
    }
    Mark& m = marks_[used_++];
    m.stream = stream;
    m.label = index >= 0 ? std::string(label) + " " + std::to_string(index) : std::string(label);
    check(cudaEventRecord(m.ev, s), program_, "timeline", "cudaEventRecord");
  }
  void end() {
    if (counting_) {
      counting_ = false;
      while (marks_.size() < used_) {
        marks_.emplace_back();
        check(cudaEventCreate(&marks_.back().ev), program_, "timeline", "cudaEventCreate");
      }
    }
    if (!on_) return;
    on_ = false;
    std::ostringstream o;
    for (size_t k = 0; k < used_; ++k) {
      check(cudaEventSynchronize(marks_[k].ev), program_, "timeline", "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, marks_[0].ev, marks_[k].ev), program_, "timeline", "cudaEventElapsedTime");
      char t[32];
      std::snprintf(t, sizeof t, "%.1f", ms * 1000.0);
      o << "timeline " << program_ << " rank " << rank_ << " call " << at_ << ": " << t << " us " << marks_[k].stream << " "
        << marks_[k].label << "\n";
    }
    std::fputs(o.str().c_str(), stderr);
  }

 private:
  struct Mark {
    cudaEvent_t ev = nullptr;
    const char* stream = "";
    std::string label;
  };
  std::vector<Mark> marks_;
  size_t used_ = 0;
  long long calls_ = 0, at_ = 10;
  bool on_ = false, counting_ = false;
  int rank_ = 0;
  const char* program_ = "";
  int* align_ = nullptr;  // the allreduce's value
};

