// ---- coconet_device.cuh, part 4 of 7: a kernel's phases: push, sum, pull, and claimed tiles ----
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

// A thread's unit moves kPeersInFlight vectors at a time (coconet_tuning.h): loads from that many
// peers, then their stores.

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
// From 3 ranks tiles of `units` (the tuning table's push_tile_units, which coconetc tune measures;
// 0: never) where a round has at least kClaimTilesPerMover tiles per mover, else the fixed parts:
// - On 2 ranks each mover pushes to the one peer, its fixed part evens out, and the tiles' claims
//   only cost (measured on 2 H200: LAMB up to 3% slower claiming, at 2^26 and 2^28).
// - With 2 tiles per mover a round has nothing to even out by whole tiles (measured on 4 H200:
//   LAMB 2% slower claiming at 2^24, 32 movers, and 3-5% faster at 2^26 and 2^28, 4 and 8 tiles
//   per mover). 3 tiles per mover were not measured.
inline int claimedPushes(int P, long long roundElems, int movers, int V, int units = kPushTileUnits) {
  const long long tile = static_cast<long long>(kDevThreads) * V * units;
  return units > 0 && P > 2 && roundElems >= kClaimTilesPerMover * tile * movers ? units : 0;
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

