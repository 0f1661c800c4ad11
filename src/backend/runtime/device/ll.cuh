// ---- coconet_device.cuh, part 7 of 7: the LL and LL128 forms ----
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

