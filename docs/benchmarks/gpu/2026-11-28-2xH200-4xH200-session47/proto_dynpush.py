#!/usr/bin/env python3
"""Prototype (session 47): LAMB's `moments` movers claim tiles of each round's chunk through a
counter (the next claim asked while the current tile travels) instead of pushing a fixed part
of every chunk with their own LSA barrier each; a mover that has no tile left in round r counts
itself done (its pushes made visible system-wide first), block 0 waits for every mover's count,
takes one LSA barrier for the rank (barrier 0) and marks chunk r ready for the workers. The
workers are unchanged; the staging slots' layout is unchanged. Why: sm-transfer-micro `dyn`
(call k) moved 128 MiB on 64 blocks of 512 threads in 193-194 us claiming tiles against 232 us
in static parts, whose blocks ended up to 74 us apart; LAMB's slowest mover ends each round
14-42 us after mover block 0 at 2^26 on 4 H200 (call i). Rewrites a folder `coconetc compile
samples/lamb/lamb.cnet` wrote (the mover loop of `moments` as main emits it).

Usage: proto_dynpush.py GENERATED_DIR OUT_DIR TILE   (TILE: K, block tiles of K units per thread;
wK, warp tiles of K units per lane: each warp claims its own through the same counter, the next
claim's atomic issued before the current tile's push and read after it, no block barrier per tile)
"""
import pathlib
import shutil
import sys

src, dst, tile = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
warp = tile.startswith("w")
tu = int(tile[1:] if warp else tile)
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst)
f = dst / "lamb.cu"
s = f.read_text()

HELPERS = r'''
// ---- proto_dynpush.py: movers claim tiles of each round's chunk ----
__device__ unsigned long long protoCtr[64];
__device__ unsigned protoPushed[64];
__device__ unsigned protoExits;
// Elements [lo, hi) of the slices in tiles of kDevThreads * V * %d elements, claimed one at a time
// (the next asked while `push` moves the current one) until none is left.
template <int V, class F>
__device__ __forceinline__ void protoPushTiles(int r, long long lo, long long hi, F&& push) {
  constexpr long long kTile = static_cast<long long>(coconet_rt::kDevThreads) * V * %d;
  __shared__ long long claim[2];
  const long long nT = (hi - lo + kTile - 1) / kTile;
  if (threadIdx.x == 0) claim[0] = static_cast<long long>(atomicAdd(&protoCtr[r], 1ull));
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const long long t = claim[k];
    if (t >= nT) break;
    if (threadIdx.x == 0) claim[k ^ 1] = static_cast<long long>(atomicAdd(&protoCtr[r], 1ull));
    const long long a = lo + t * kTile;
    push(a, a + kTile < hi ? a + kTile : hi);
    __syncthreads();
  }
  __syncthreads();
}
// The same by warps: tiles of 32 * V * %d elements, each warp claiming its own; `push(a, b, lane)`
// moves [a, b) with the warp's lanes.
template <int V, class F>
__device__ __forceinline__ void protoPushWarpTiles(int r, long long lo, long long hi, F&& push) {
  constexpr long long kTile = 32LL * V * %d;
  const long long nT = (hi - lo + kTile - 1) / kTile;
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned long long c = 0;
  if (lane == 0) c = atomicAdd(&protoCtr[r], 1ull);
  long long t = static_cast<long long>(__shfl_sync(0xffffffffu, c, 0));
  while (t < nT) {
    if (lane == 0) c = atomicAdd(&protoCtr[r], 1ull);  // the next, read after this tile's push
    const long long a = lo + t * kTile;
    push(a, a + kTile < hi ? a + kTile : hi, lane);
    t = static_cast<long long>(__shfl_sync(0xffffffffu, c, 0));
  }
  __syncthreads();
}
''' % (tu, tu, tu, tu)

anchor = "namespace {\n"
i = s.index(anchor) + len(anchor)
s = s[:i] + HELPERS + s[i:]

k0 = s.index("k_5_moments_device(ncclDevComm")
k1 = s.index("k_23_apply_device(ncclDevComm")
body = s[k0:k1]
old = """    for (int r = 0; r < rounds; ++r) {
      coconet_rt::pushSlicesPrefetchOwn<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);
      // every rank pushed chunk r of this part
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
      coconet_rt::roleSignal(coconet_rt::roleReady(roles, r));
    }
"""
assert body.count(old) == 1, "mover loop not found"
new = """    for (int r = 0; r < rounds; ++r) {
      protoPushTiles<V>(r, edge(r), edge(r + 1), [&](long long lo, long long hi) {
        coconet_rt::pushSlicesPrefetchOwn<__half, V>(coconet_rt::Part{0, 1}, stageWin, 0, P, me, rsIn, nSlice, lo, hi, vec);
      });
      // this mover has no tile of chunk r left: count it, its stores made visible first
      if (threadIdx.x == 0) {
        __threadfence_system();
        cuda::atomic_ref<unsigned, cuda::thread_scope_device>(protoPushed[r]).fetch_add(1u, cuda::memory_order_release);
      }
      if (blockIdx.x == 0) {
        // every mover of this rank pushed chunk r; then every rank's (barrier 0); chunk r is ready
        coconet_rt::roleWait(&protoPushed[r], static_cast<unsigned>(movers));
        bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
        __syncthreads();
        if (threadIdx.x == 0) {
          __threadfence();
          cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*coconet_rt::roleReady(roles, r)).fetch_add(static_cast<unsigned>(movers), cuda::memory_order_release);
        }
      }
    }
    // the last mover to leave zeroes the claim counters for the next launch
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&protoExits, 1u) == static_cast<unsigned>(movers) - 1) {
      for (int r = 0; r < rounds; ++r) protoCtr[r] = 0, protoPushed[r] = 0;
      protoExits = 0;
      __threadfence();
    }
"""
CALL_BLOCK = """      protoPushTiles<V>(r, edge(r), edge(r + 1), [&](long long lo, long long hi) {
        coconet_rt::pushSlicesPrefetchOwn<__half, V>(coconet_rt::Part{0, 1}, stageWin, 0, P, me, rsIn, nSlice, lo, hi, vec);
      });
"""
CALL_WARP = """      protoPushWarpTiles<V>(r, edge(r), edge(r + 1), [&](long long a, long long b, int lane) {
        // slice p's [a, b) to slot me of rank p, every p but me (as pushSlices), then the own
        // slice's lines of [a, b) into L2 (as prefetchL2)
        for (long long i0 = a + lane * V; i0 < b; i0 += 32 * V) {
          if (vec && i0 + V <= b) {
            for (int p0 = 0; p0 < P; p0 += coconet_rt::kPeersInFlight) {
              coconet_rt::Vec<__half, V> x[coconet_rt::kPeersInFlight];
#pragma unroll
              for (int q = 0; q < coconet_rt::kPeersInFlight; ++q)
                if (p0 + q < P && p0 + q != me) coconet_rt::load_vec(x[q], rsIn + (p0 + q) * nSlice + i0);
#pragma unroll
              for (int q = 0; q < coconet_rt::kPeersInFlight; ++q)
                if (p0 + q < P && p0 + q != me) coconet_rt::store_vec(coconet_rt::peerPtr<__half>(stageWin, (me * nSlice + i0) * sizeof(__half), p0 + q), x[q]);
            }
          } else {
            for (long long i = i0; i < i0 + V && i < b; ++i)
              for (int p = 0; p < P; ++p)
                if (p != me) *coconet_rt::peerPtr<__half>(stageWin, (me * nSlice + i) * sizeof(__half), p) = rsIn[p * nSlice + i];
          }
        }
        const unsigned long long first = reinterpret_cast<unsigned long long>(rsIn + me * nSlice + a);
        const unsigned long long end = reinterpret_cast<unsigned long long>(rsIn + me * nSlice + b);
        for (unsigned long long line = (first & ~127ull) + lane * 128ull; line < end; line += 32 * 128ull)
          asm volatile("prefetch.global.L2 [%0];" ::"l"(line < first ? first : line));
      });
"""
if warp:
    assert new.count(CALL_BLOCK) == 1
    new = new.replace(CALL_BLOCK, CALL_WARP)
body = body.replace(old, new)
old_last = """    if (lastBarrier) {
      coconet_rt::roleWait(coconet_rt::roleDone(roles, rounds - 1), workers);
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }"""
assert body.count(old_last) == 1
body = body.replace(old_last, """    if (lastBarrier && blockIdx.x == 0) {
      coconet_rt::roleWait(coconet_rt::roleDone(roles, rounds - 1), workers);
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }""")
s = s[:k0] + body + s[k1:]
f.write_text(s)
print(f"proto_dynpush: {dst} ({'warp' if warp else 'block'} tiles of {tu} units per {'lane' if warp else 'thread'})")
