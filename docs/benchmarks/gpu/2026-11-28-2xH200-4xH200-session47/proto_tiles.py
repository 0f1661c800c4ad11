#!/usr/bin/env python3
"""Prototype (session 47): LAMB's `moments` workers claim tiles of each round's chunk one at a time
(an atomic counter per round) instead of a fixed share of every chunk, so that the workers on
faster SMs take more and all end together. Timing only: the norms' per-block partial sums then
depend on which block took which tile (not deterministic run to run); a real form would keep one
partial per tile. Rewrites a folder `coconetc compile samples/lamb/lamb.cnet` wrote.

Usage: proto_tiles.py GENERATED_DIR OUT_DIR TILE_ELEMENTS
"""
import pathlib
import shutil
import sys

src, dst, tile = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
assert tile % 8 == 0
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst)
f = dst / "lamb.cu"
s = f.read_text()

HELPERS = r'''
// ---- proto_tiles.py: workers claim tiles of each round's chunk ----
__device__ unsigned long long protoCtr[64];
__device__ unsigned protoExits;
template <class F>
__device__ __forceinline__ void protoTiles(int r, long long lo, long long hi, F&& compute) {
  constexpr long long kTile = %d;
  __shared__ long long claim[2];
  const long long nT = (hi - lo + kTile - 1) / kTile;
  if (threadIdx.x == 0) claim[0] = static_cast<long long>(atomicAdd(&protoCtr[r], 1ull));
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const long long t = claim[k];
    if (t >= nT) break;
    if (threadIdx.x == 0) claim[k ^ 1] = static_cast<long long>(atomicAdd(&protoCtr[r], 1ull));  // the next, while this one runs
    const long long a = lo + t * kTile;
    compute(a, a + kTile < hi ? a + kTile : hi);
    __syncthreads();
  }
  __syncthreads();
}
// the last worker to leave zeroes the counters for the next launch
__device__ __forceinline__ void protoExit(int rounds, unsigned workers) {
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(&protoExits, 1u) == workers - 1) {
    for (int r = 0; r < rounds; ++r) protoCtr[r] = 0;
    protoExits = 0;
    __threadfence();
  }
}
''' % tile

anchor = "namespace {\n"
i = s.index(anchor) + len(anchor)
s = s[:i] + HELPERS + s[i:]

k0 = s.index("k_5_moments_device(ncclDevComm")
k1 = s.index("k_23_apply_device(ncclDevComm")
body = s[k0:k1]
old_pt = "  const coconet_rt::Part pt = movers == 0"
assert body.count(old_pt) == 1
body = body.replace(old_pt, "  coconet_rt::Part pt = movers == 0")
old_loop = """    for (int r = 0; r < rounds; ++r) {
      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));
      compute(edge(r), edge(r + 1));
      coconet_rt::roleSignal(coconet_rt::roleDone(roles, r));
    }
"""
assert body.count(old_loop) == 1
new_loop = """    const int myPart = pt.index;
    pt = coconet_rt::Part{0, 1};  // a tile is the whole block's
    for (int r = 0; r < rounds; ++r) {
      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));
      protoTiles(r, edge(r), edge(r + 1), compute);
      coconet_rt::roleSignal(coconet_rt::roleDone(roles, r));
    }
    protoExit(rounds, gridDim.x - movers);
"""
body = body.replace(old_loop, new_loop)
w = body.index(new_loop)
old_part = "if (threadIdx.x == 0) { part15[pt.index] = acc15; part19[pt.index] = acc19; }"
j = body.index(old_part, w)
body = body[:j] + "if (threadIdx.x == 0) { part15[myPart] = acc15; part19[myPart] = acc19; }" + body[j + len(old_part):]
s = s[:k0] + body + s[k1:]
f.write_text(s)
print(f"proto_tiles: {dst} (tiles of {tile} elements)")
