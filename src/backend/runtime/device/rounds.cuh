// ---- coconet_device.cuh, part 5 of 7: rounds, taper, roles and flags; grids and rounds by size ----
// A fused group's kernel runs in `rounds` rounds over chunks of its slice (tune(f, rounds = K),
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
// head's claimed[kMaxRoleRounds] and pushed[kMaxRoleRounds] (pushTilesPrefetchOwn) (tune(f, rounds = K)
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
// so, at 2^24 .. 2^28.) With `epoch` 0 (the tuning table's tail_flags 0: tailFlags) only the count.
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
// 0 for the fixed parts. From 3 ranks tiles of `units` (the tuning table's pull_tile_units, which
// coconetc tune measures; 0: never) where the kernel has at most kClaimPullMaxRounds rounds, else
// the fixed parts. Chosen by measurement of LAMB: on 4 H200 tiles of 1 unit ran 1-3% faster at
// 2^24 and 2^25 (4 rounds) and level or slower at 2^26 and 2^28 (8 and 16 rounds: the fixed parts'
// uneven ends weigh less there than the claims cost); on 2 H200 (each block pulls from the one
// peer) they lost at every size. Only the pulls by flags claim: with the table's tail_flags 0 (a
// barrier per round) the movers keep their fixed parts.
inline int claimedPulls(int P, int rounds, int units = kPullTileUnits) {
  return units > 0 && P > 2 && rounds <= kClaimPullMaxRounds ? units : 0;
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
// Whether tails pull by flags: the tuning table's tail_flags, which coconetc tune measures (0: a
// barrier per round).
inline bool tailFlags() { return kTailFlags != 0; }
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

// Movers of a split kernel unless the schedule sets them (tune(f, movers = K)): kDevMovers; each
// mover's pushes and pulls are latency-bound, so the transfers scale with the movers.
// tune(f, roles = auto): movers from kRolesAutoRounds rounds, every block both below (Adam's one
// kernel, push and pull in each round, lost split at every size, so it stays shared).
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

// The tuning table's solo_units = K (which coconetc tune measures): one block per K * kDevThreads
// units instead, however many are resident (K = 1: the flat grid); 0: the resident grid.
inline int soloBlocks(const void* kernel, long long units, const char* program, const char* stage) {
  const long long want = (units + kDevThreads - 1) / kDevThreads;
  if (constexpr long long k = kSoloUnits; k > 0)
    return static_cast<int>(std::max<long long>(1, std::min<long long>((want + k - 1) / std::max(k, 1LL), 1LL << 30)));
  return static_cast<int>(std::max<long long>(1, std::min<long long>(want, std::max(1, residentBlocks(kernel, program, stage)))));
}

// The grid of a device group's multi-rank kernel without roles, where block b takes LSA barrier b
// and waits there for block b of every other rank, so every block must be resident at once: one
// block per kDevThreads units, at most what fits on the GPU at once and at most the tuning table's
// dev_max_blocks (which coconetc tune measures; no more than the communicator's kDevBarriers).
// The same on every rank of one GPU model.
inline int barrierBlocks(const void* kernel, long long units, const char* program, const char* stage) {
  static_assert(kDevMaxBlocks >= 1 && kDevMaxBlocks <= kDevBarriers, "dev_max_blocks: 1 up to the barriers there are");
  const long long want = (units + kDevThreads - 1) / kDevThreads;
  const int most = std::min(kDevMaxBlocks, std::max(1, residentBlocks(kernel, program, stage)));
  return static_cast<int>(std::max<long long>(1, std::min<long long>(want, most)));
}

// tune(f, occupancy = auto): blocks per SM of a split kernel (its __launch_bounds__), from the
// ranks (splitOccupancy). Each rank computes on 1/P of the elements and moves (P - 1)/P of them,
// so the fewer the ranks, the more the workers weigh against the movers' transfers. Without
// movers the grid does not grow with the occupancy, so one block per SM.
inline int devAutoOccupancy(int ranks, int movers) { return movers > 0 ? splitOccupancy(ranks) : 1; }

// tune(f, barriers = auto), the default, in a device group's shared full form (every block
// pushes chunk r, computes chunk r-1 and pulls chunk r-2 each round): each round's barrier in two
// phases (arrive, pull, wait: the barrier's latency overlaps the pull) while a round's chunk of
// the reduce-scatter's input is under kSplitBarrierBytes, one whole barrier after the pull from
// there. The other forms (roles, head, tail) and a light epilogue's rounds keep whole barriers
// (Emitter::emitDevKernel): LAMB's kernels split were up to 22 us slower (`moments` in roles) or
// level (`apply`); the epilogues were not measured split.
__host__ __device__ inline bool devSplitBarriers(long long bytes, int rounds) {
  return rounds > 0 && bytes / rounds < kSplitBarrierBytes;
}

// The rounds of a light epilogue's two-shot kernel (a fused [allreduce, members] group's, an
// overlap's one-chunk kernel: Emitter::epilogueRounds): devAutoRounds' up to epilogueRoundsMax(P),
// where each round's slices are smaller and its barriers weigh more against the little compute
// there is to overlap.
inline int epilogueAutoRounds(long long bytes, long long ranks) { return std::min(devAutoRounds(bytes), epilogueRoundsMax(ranks)); }

// A device group's rounds when the schedule does not set them come from coconet_tuning.h by the
// bytes of the reduce-scatter's input (else the gathered tensor): devAutoRounds for kernels,
// ceAutoRounds by copy engines (each round costs every copy engine a fixed start and the ranks a
// barrier, so a copy-engine group wants few rounds).

