#!/usr/bin/env python3
"""Session 29 prototype: warp roles in LAMB's shared rounds, again (session 25's run had t = 0).

Copies a folder that `coconetc compile samples/lamb/lamb.cnet --schedule samples/lamb/lamb.sched`
wrote and edits the copy: in the rounds without movers, the first X_MWARPS warps of every
`moments` block push chunk r while its other warps compute chunk r-1, and the first X_AWARPS warps
of every `apply` block pull chunk r-1 while the others compute chunk r (0: the committed form,
every warp does both in turn). Unlike session 25, the transfer warps keep as many units in flight
as the whole block does (each thread loads K = 512 / (32 X) units of every peer group before it
stores them, up to 4 at once), which sm-transfer-micro found as fast as the whole block
(128 x 256 u4 = 128 x 512 u1). Elements go to blocks by tiles of blockDim.x units so that a
block's transfer and compute warps cover the same elements (per-block barriers). X_ROUNDS sets
both kernels' rounds (below 8, where movers take over).

Usage: proto_warps.py GEN_DIR OUT_DIR
"""
import pathlib
import re
import shutil
import sys

src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst)
for p in list(dst.glob("build*")):
    shutil.rmtree(p, ignore_errors=True)


def sub1(text, old, new, what):
    n = text.count(old)
    if n != 1:
        sys.exit(f"proto_warps: {what}: found {n} times")
    return text.replace(old, new)


# ---- runtime: Part with a thread range; tiles; transfers with K units in flight ----
h = (dst / "coconet_device.cuh").read_text()
h = sub1(h, "struct Part {\n  int index, count;\n};",
         "struct Part {\n  int index, count;\n  int t0 = 0, nt = 0;  // threads [t0, t0 + nt) of each block (nt 0: all)\n};", "Part")
old_loop = h[h.index("template <int V, class Unit, class Elem>\n__device__ __forceinline__ void forUnits(Part pt"):]
old_loop = old_loop[:old_loop.index("template <int V, class Unit, class Elem>\n__device__ __forceinline__ void forUnits(long long lo")]
new_loop = r'''// Items [first, end) of a part by tiles of blockDim.x: tile k belongs to block k mod count and
// within it the part's nt threads take items t, t + nt, ... (nt = blockDim.x: the grid-stride loop).
template <class F>
__device__ __forceinline__ void forPartItems(Part pt, long long first, long long end, F&& f) {
  const int T = blockDim.x;
  const int nt = pt.nt > 0 ? pt.nt : T, lt = static_cast<int>(threadIdx.x) - pt.t0;
  const long long stride = static_cast<long long>(pt.count) * T;
  if (nt == T) {
    for (long long i = first + static_cast<long long>(pt.index) * T + lt; i < end; i += stride) f(i);
    return;
  }
  for (long long base = first + static_cast<long long>(pt.index) * T; base < end; base += stride)
    for (long long i = base + lt; i < base + T && i < end; i += nt) f(i);
}
template <int V, class Unit, class Elem>
__device__ __forceinline__ void forUnits(Part pt, long long lo, long long hi, bool vec, Unit&& unit, Elem&& elem) {
  if (lo >= hi) return;
  const long long v0 = (lo + V - 1) / V, v1 = hi / V;
  if (v0 >= v1) {
    forPartItems(pt, lo, hi, elem);
    return;
  }
  forPartItems(pt, lo, v0 * V, elem);
  forPartItems(pt, v0, v1, [&](long long jv) {
    if (vec) {
      unit(jv * V);
    } else {
      for (int e = 0; e < V; ++e) elem(jv * V + e);
    }
  });
  forPartItems(pt, v1 * V, hi, elem);
}
'''
h = h.replace(old_loop, new_loop)
tiles = r'''
// Warp-role transfers: the part's nt threads of a block move a tile's units with up to kK units
// of each peer group loaded before their stores (lo a multiple of V; otherwise, or without
// vectors, the one-unit loops, which take the same elements).
template <class T, int V, int kK>
__device__ __forceinline__ void pushTiles(Part pt, ncclWindow_t w, size_t stageOff, int P, int me, const T* __restrict__ in, long long m,
                                          long long lo, long long hi, bool vec) {
  if (!vec || lo % V != 0) { pushSlices<T, V>(pt, w, stageOff, P, me, in, m, lo, hi, vec); return; }
  const int Tb = blockDim.x, nt = pt.nt > 0 ? pt.nt : Tb, lt = static_cast<int>(threadIdx.x) - pt.t0;
  const long long v0 = lo / V, v1 = hi / V, stride = static_cast<long long>(pt.count) * Tb;
  for (long long base = v0 + static_cast<long long>(pt.index) * Tb; base < v1; base += stride)
    for (int kb = 0; kb < Tb; kb += kK * nt)
      for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
        Vec<T, V> x[kK][kPeersInFlight];
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          const int o = kb + lt + k * nt;
          const long long jv = base + o;
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (o < Tb && jv < v1 && p0 + q < P) load_vec(x[k][q], in + (p0 + q) * m + jv * V);
        }
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          const int o = kb + lt + k * nt;
          const long long jv = base + o;
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (o < Tb && jv < v1 && p0 + q < P) store_vec(peerPtr<T>(w, stageOff + (me * m + jv * V) * sizeof(T), p0 + q), x[k][q]);
        }
      }
  forPartItems(pt, v1 * V, hi, [&](long long i) {
    for (int p = 0; p < P; ++p) *peerPtr<T>(w, stageOff + (me * m + i) * sizeof(T), p) = in[p * m + i];
  });
}
template <class T, int V, int kK>
__device__ __forceinline__ void pullTiles(Part pt, ncclWindow_t w, size_t sliceOff, int P, int skip, T* __restrict__ out, long long m,
                                          long long lo, long long hi, bool vec) {
  if (!vec || lo % V != 0) { pullSlices<T, V>(pt, w, sliceOff, P, skip, out, m, lo, hi, vec); return; }
  const int Tb = blockDim.x, nt = pt.nt > 0 ? pt.nt : Tb, lt = static_cast<int>(threadIdx.x) - pt.t0;
  const long long v0 = lo / V, v1 = hi / V, stride = static_cast<long long>(pt.count) * Tb;
  for (long long base = v0 + static_cast<long long>(pt.index) * Tb; base < v1; base += stride)
    for (int kb = 0; kb < Tb; kb += kK * nt)
      for (int p0 = 0; p0 < P; p0 += kPeersInFlight) {
        Vec<T, V> y[kK][kPeersInFlight];
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          const int o = kb + lt + k * nt;
          const long long jv = base + o;
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (o < Tb && jv < v1 && p0 + q < P && p0 + q != skip) load_vec_rw(y[k][q], peerPtr<const T>(w, sliceOff + jv * V * sizeof(T), p0 + q));
        }
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          const int o = kb + lt + k * nt;
          const long long jv = base + o;
#pragma unroll
          for (int q = 0; q < kPeersInFlight; ++q)
            if (o < Tb && jv < v1 && p0 + q < P && p0 + q != skip) store_vec(out + (p0 + q) * m + jv * V, y[k][q]);
        }
      }
  forPartItems(pt, v1 * V, hi, [&](long long i) {
    for (int p = 0; p < P; ++p)
      if (p != skip) out[p * m + i] = *peerPtr<const T>(w, sliceOff + i * sizeof(T), p);
  });
}
'''
anchor = "// A fused group's kernel runs in `rounds` rounds"
h = sub1(h, anchor, tiles + "\n" + anchor, "tiles anchor")
(dst / "coconet_device.cuh").write_text(h)

# ---- lamb.cu ----
c = (dst / "lamb.cu").read_text()
c = sub1(c, "template <int kOccupancy, bool kSolo>\n__global__ void __launch_bounds__(coconet_rt::kDevThreads, kOccupancy > 1 ? kOccupancy : 0) k_5_moments_device",
         "#ifndef X_MK\n#define X_MK 2\n#endif\n#ifndef X_AK\n#define X_AK 2\n#endif\n__device__ int g_mw = 0, g_aw = 0;\ntemplate <int kOccupancy, bool kSolo>\n__global__ void __launch_bounds__(coconet_rt::kDevThreads, kOccupancy > 1 ? kOccupancy : 0) k_5_moments_device",
         "moments decl")
# compute lambdas take the part
n = c.count("  auto compute = [&](long long lo, long long hi) {")
if n != 4 and n != 2:
    sys.exit(f"proto_warps: compute lambdas: {n}")
c = c.replace("  auto compute = [&](long long lo, long long hi) {",
              "  auto compute = [&](long long lo, long long hi, coconet_rt::Part cpt = coconet_rt::Part{-1, 0}) {\n  if (cpt.index < 0) cpt = pt;")
c = c.replace("  coconet_rt::forUnits<V>(pt, lo, hi, vec, [&](long long i0) {", "  coconet_rt::forUnits<V>(cpt, lo, hi, vec, [&](long long i0) {")
c = sub1(c, """  for (int r = 0; r <= rounds; ++r) {
    if (r < rounds) coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);
    if (r >= 1) compute(edge(r - 1), edge(r));""",
"""  const int mw = g_mw * 32;
  if (mw > 0) {
    const coconet_rt::Part pp{pt.index, pt.count, 0, mw}, pc{pt.index, pt.count, mw, static_cast<int>(blockDim.x) - mw};
    const bool pusher = static_cast<int>(threadIdx.x) < mw;
    for (int r = 0; r <= rounds; ++r) {
      if (pusher) {
        if (r < rounds) coconet_rt::pushTiles<__half, V, X_MK>(pp, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);
      } else if (r >= 1) {
        compute(edge(r - 1), edge(r), pc);
      }
      if (r < rounds || lastBarrier) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }
  } else
  for (int r = 0; r <= rounds; ++r) {
    if (r < rounds) coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);
    if (r >= 1) compute(edge(r - 1), edge(r));""", "moments loop")
c = sub1(c, """  for (int r = 0; r <= rounds; ++r) {
    if (r < rounds) compute(edge(r), edge(r + 1));
    if (r >= 1) coconet_rt::pullSlices<__half, V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r - 1), edge(r), vec);""",
"""  const int aw = g_aw * 32;
  if (aw > 0) {
    const coconet_rt::Part pp{pt.index, pt.count, 0, aw}, pc{pt.index, pt.count, aw, static_cast<int>(blockDim.x) - aw};
    const bool puller = static_cast<int>(threadIdx.x) < aw;
    for (int r = 0; r <= rounds; ++r) {
      if (!puller) {
        if (r < rounds) compute(edge(r), edge(r + 1), pc);
      } else if (r >= 1) {
        coconet_rt::pullTiles<__half, V, X_AK>(pp, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r - 1), edge(r), vec);
      }
      if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }
    return;
  }
  for (int r = 0; r <= rounds; ++r) {
    if (r < rounds) compute(edge(r), edge(r + 1));
    if (r >= 1) coconet_rt::pullSlices<__half, V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r - 1), edge(r), vec);""", "apply loop")
# host: knobs from the environment; rounds override
knobs = r'''static int xEnv(const char* n) { const char* e = std::getenv(n); return e ? std::atoi(e) : 0; }
static void xKnobs() {
  static bool done = false;
  if (done) return;
  done = true;
  int a = xEnv("X_MWARPS"), b = xEnv("X_AWARPS");
  cudaMemcpyToSymbol(g_mw, &a, sizeof a);
  cudaMemcpyToSymbol(g_aw, &b, sizeof b);
}
'''
i = c.index("__global__ void k_6_moments(")
c = c[:i] + knobs + c[i:]
c = sub1(c, "      const int rounds = P_ == 1 ? 1 : coconet_rt::devAutoRounds(static_cast<long long>(n0) * sizeof(__half));",
         "      xKnobs();\n      const int rounds = P_ == 1 ? 1 : xEnv(\"X_ROUNDS\") > 0 ? xEnv(\"X_ROUNDS\") : coconet_rt::devAutoRounds(static_cast<long long>(n0) * sizeof(__half));", "moments rounds")
c = sub1(c, "      const int rounds = P_ == 1 ? 1 : coconet_rt::devAutoRounds(static_cast<long long>(n25) * sizeof(__half));",
         "      const int rounds = P_ == 1 ? 1 : xEnv(\"X_ROUNDS\") > 0 ? xEnv(\"X_ROUNDS\") : coconet_rt::devAutoRounds(static_cast<long long>(n25) * sizeof(__half));", "apply rounds")
if "#include <cstdlib>" not in c:
    c = "#include <cstdlib>\n" + c
(dst / "lamb.cu").write_text(c)
print("proto_warps: wrote", dst)
