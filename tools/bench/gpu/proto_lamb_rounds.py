#!/usr/bin/env python3
"""Prototype (session 19): LAMB's two device kernels with per-round time stamps, and variants.

Rewrites a folder that `coconetc compile samples/lamb/lamb.cnet --schedule samples/lamb/lamb.sched`
wrote (lamb.cu) into a copy with %globaltimer stamps at every round of `moments` and `apply`
(one block of each role), printed by the driver's process for one call (call 30: use
--warmup >= 30). Variants:
  stamps   the generated code, stamped
  split    also: the movers' LSA barriers split in arrive / wait, with the next round's push
           (moments) or the last round's pull (apply) between them, so that no transfer waits
           for a barrier's round trip
  VARIANT-mK  either with K movers instead of kDevMovers (64)
  VARIANT-oK  `moments`' kernel with __launch_bounds__(kDevThreads, K): K blocks per SM (K = 2:
              64 registers, some spilled, instead of ~124 and one block); where the schedule
              has occupancy = auto (its template), K = 1 or 2 picks that instantiation
Usage: proto_lamb_rounds.py GENERATED_DIR OUT_DIR VARIANT[-mK][-oK]
The output lines: `TL rank R kernel SERIES round us` (us since the call's `moments` started).
"""
import pathlib
import re
import shutil
import sys


def sub(text: str, old: str, new: str, count: int = 1) -> str:
    n = text.count(old)
    if n != count:
        raise SystemExit(f"proto: expected {count} of {old[:80]!r}, found {n}")
    return text.replace(old, new)


HEADER = r'''
// ---- prototype stamps (tools/bench/gpu/proto_lamb_rounds.py) ----
__device__ unsigned long long tlbuf[2][2][10][40];  // [call parity][kernel][series][round]
__device__ __forceinline__ unsigned long long tlNow() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define TLS(K, S, R) do { __syncthreads(); if (threadIdx.x == 0) tlbuf[tlc & 1][K][S][R] = tlNow(); } while (0)
__device__ void tlPrint(unsigned prev, int me) {
  const unsigned long long t0 = tlbuf[prev & 1][0][0][0];
  for (int k = 0; k < 2; ++k)
    for (int s = 0; s < 10; ++s)
      for (int r = 0; r < 40; ++r) {
        const unsigned long long t = tlbuf[prev & 1][k][s][r];
        if (t >= t0 && t - t0 < 100000000ull) printf("TL rank %d %s %d %d %.2f\n", me, k ? "apply" : "moments", s, r, (t - t0) * 1e-3);
      }
}
static unsigned tlCallHost = 0;
'''


def main() -> None:
    src, dst, variant = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    variant, *opts = variant.split("-")
    assert variant in ("stamps", "split"), variant
    movers = next((o[1:] for o in opts if o.startswith("m")), "")
    occupancy = next((o[1:] for o in opts if o.startswith("o")), "")
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    cu = (dst / "lamb.cu").read_text()
    # the stamps' buffer after the includes
    # (`moments` is a template over its blocks per SM where the schedule asks occupancy = auto)
    first_kernel = re.search(r"(template <int kOccupancy>\n)?__global__ void __launch_bounds__\([^)]*\) k_5_moments_device", cu).start()
    cu = cu[:first_kernel] + HEADER + cu[first_kernel:]
    # kernel parameters and launch arguments: the host's call count
    cu = sub(cu, "int vec, int rounds, int movers, unsigned* __restrict__ roles) {",
             "int vec, int rounds, int movers, unsigned* __restrict__ roles, unsigned tlc) {")
    cu = sub(cu, "unsigned* __restrict__ roles, ncclWindow_t chainWin,",
             "unsigned* __restrict__ roles, unsigned tlc, ncclWindow_t chainWin,")
    cu = sub(cu, 'dev_->roles.get(stream_, "lamb", "moments") : nullptr);',
             'dev_->roles.get(stream_, "lamb", "moments") : nullptr, ++tlCallHost);')
    cu = sub(cu, 'dev_->roles.get(stream_, "lamb", "apply") : nullptr, dev_->oneShot',
             'dev_->roles.get(stream_, "lamb", "apply") : nullptr, tlCallHost, dev_->oneShot')
    m0 = cu.index("k_5_moments_device(ncclDevComm")
    m1 = cu.index("__global__ void k_6_moments(")
    a0 = cu.index("k_23_apply_device(ncclDevComm")
    a1 = cu.index("__global__ void k_23_apply(")
    mom, app = cu[m0:m1], cu[a0:a1]

    # ---- moments: 0 start, 1 mover push done, 2 mover barrier done, 3 worker ready, 4 worker
    # computed, 5 last worker computed, 6 last mover barrier done, 7 ends
    mom = sub(mom, "  constexpr int V = 8;\n",
              "  constexpr int V = 8;\n  if (blockIdx.x == 0 && threadIdx.x == 0 && tlc == 30) tlPrint(tlc - 1, me);\n"
              "  if (blockIdx.x == 0) TLS(0, 0, 0);\n")
    mom = sub(mom, "      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));\n"
                   "      compute(edge(r), edge(r + 1));\n",
              "      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));\n"
              "      if (blockIdx.x == movers) TLS(0, 3, r);\n"
              "      compute(edge(r), edge(r + 1));\n"
              "      if (blockIdx.x == movers) TLS(0, 4, r);\n      if (blockIdx.x == gridDim.x - 1) TLS(0, 5, r);\n")
    mom = sub(mom, "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n  // the blocks that take barriers",
              "    if (blockIdx.x == movers) TLS(0, 7, 1);\n"
              "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n  // the blocks that take barriers")
    push = "coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);\n"
    old_movers = ("    for (int r = 0; r < rounds; ++r) {\n      " + push +
                  "      // every rank pushed chunk r of this part\n"
                  "      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
                  "      coconet_rt::roleSignal(coconet_rt::roleReady(roles, r));\n    }\n")
    if variant == "stamps":
        new_movers = ("    for (int r = 0; r < rounds; ++r) {\n      " + push +
                      "      if (blockIdx.x == 0) TLS(0, 1, r);\n"
                      "      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
                      "      if (blockIdx.x == 0) TLS(0, 2, r);\n      if (blockIdx.x == movers - 1) TLS(0, 6, r);\n"
                      "      coconet_rt::roleSignal(coconet_rt::roleReady(roles, r));\n    }\n")
    else:
        new_movers = ("    " + push.replace("edge(r), edge(r + 1)", "edge(0), edge(1)") +
                      "    bar.arrive(ncclCoopCta(), cuda::memory_order_release);\n"
                      "    for (int r = 0; r < rounds; ++r) {\n"
                      "      if (r + 1 < rounds) " + push.replace("edge(r), edge(r + 1)", "edge(r + 1), edge(r + 2)") +
                      "      if (blockIdx.x == 0) TLS(0, 1, r);\n"
                      "      bar.wait(ncclCoopCta(), cuda::memory_order_acquire);\n"
                      "      if (blockIdx.x == 0) TLS(0, 2, r);\n      if (blockIdx.x == movers - 1) TLS(0, 6, r);\n"
                      "      coconet_rt::roleSignal(coconet_rt::roleReady(roles, r));\n"
                      "      if (r + 1 < rounds) bar.arrive(ncclCoopCta(), cuda::memory_order_release);\n    }\n")
    mom = sub(mom, old_movers, new_movers)
    mom = sub(mom, "    coconet_rt::roleWait(coconet_rt::roleDone(roles, rounds - 1), workers);\n"
                   "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n",
              "    coconet_rt::roleWait(coconet_rt::roleDone(roles, rounds - 1), workers);\n"
              "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n    if (blockIdx.x == 0) TLS(0, 7, 0);\n")
    # shared roles: push r, compute r-1, barrier
    mom = sub(mom, "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
                   "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots)\n"
                   "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n",
              "    if (blockIdx.x == 0) TLS(0, 1, r);\n"
              "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
              "    if (blockIdx.x == 0) TLS(0, 4, r);\n"
              "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
              "    if (blockIdx.x == 0) TLS(0, 2, r);\n    if (blockIdx.x == gridDim.x - 1) TLS(0, 6, r);\n")

    # ---- apply: 0 [0] start [1] after the scalars, 1 mover's workers done, 2 mover barrier done,
    # 3 mover pulled, 4 worker computed, 5 last worker computed, 7 ends
    app = sub(app, "  constexpr int V = 8;\n", "  constexpr int V = 8;\n  if (blockIdx.x == 0) TLS(1, 0, 0);\n")
    app = sub(app, "  const bool mover = static_cast<int>(blockIdx.x) < movers;\n",
              "  if (blockIdx.x == 0) TLS(1, 0, 1);\n  const bool mover = static_cast<int>(blockIdx.x) < movers;\n")
    app = sub(app, "      compute(edge(r), edge(r + 1));\n      coconet_rt::roleSignal(coconet_rt::roleDone(roles, r));\n",
              "      compute(edge(r), edge(r + 1));\n"
              "      if (blockIdx.x == movers) TLS(1, 4, r);\n      if (blockIdx.x == gridDim.x - 1) TLS(1, 5, r);\n"
              "      coconet_rt::roleSignal(coconet_rt::roleDone(roles, r));\n")
    pull = "coconet_rt::pullSlices<__half, V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r), edge(r + 1), vec);\n"
    old_amov = ("    for (int r = 0; r < rounds; ++r) {\n"
                "      coconet_rt::roleWait(coconet_rt::roleDone(roles, r), workers);\n"
                "      // every rank published chunk r of this part\n"
                "      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n      " + pull + "    }\n")
    if variant == "stamps":
        new_amov = ("    for (int r = 0; r < rounds; ++r) {\n"
                    "      coconet_rt::roleWait(coconet_rt::roleDone(roles, r), workers);\n"
                    "      if (blockIdx.x == 0) TLS(1, 1, r);\n"
                    "      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
                    "      if (blockIdx.x == 0) TLS(1, 2, r);\n      " + pull +
                    "      if (blockIdx.x == 0) TLS(1, 3, r);\n    }\n")
    else:
        new_amov = ("    for (int r = 0; r < rounds; ++r) {\n"
                    "      coconet_rt::roleWait(coconet_rt::roleDone(roles, r), workers);\n"
                    "      if (blockIdx.x == 0) TLS(1, 1, r);\n"
                    "      bar.arrive(ncclCoopCta(), cuda::memory_order_release);\n"
                    "      if (r >= 1) " + pull.replace("edge(r), edge(r + 1)", "edge(r - 1), edge(r)") +
                    "      if (blockIdx.x == 0 && r >= 1) TLS(1, 3, r - 1);\n"
                    "      bar.wait(ncclCoopCta(), cuda::memory_order_acquire);\n"
                    "      if (blockIdx.x == 0) TLS(1, 2, r);\n    }\n"
                    "    " + pull.replace("edge(r), edge(r + 1)", "edge(rounds - 1), edge(rounds)") +
                    "    if (blockIdx.x == 0) TLS(1, 3, rounds - 1);\n")
    app = sub(app, old_amov, new_amov)
    app = sub(app, "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n  // the blocks that take barriers",
              "    if (blockIdx.x == movers) TLS(1, 7, 1);\n"
              "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n  // the blocks that take barriers")
    app = sub(app, "    if (r >= 1) coconet_rt::pullSlices<__half, V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r - 1), edge(r), vec);\n"
                   "    // every rank published chunk r of this block's elements\n"
                   "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n",
              "    if (blockIdx.x == 0) TLS(1, 4, r);\n"
              "    if (r >= 1) coconet_rt::pullSlices<__half, V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, edge(r - 1), edge(r), vec);\n"
              "    if (blockIdx.x == 0) TLS(1, 3, r);\n"
              "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
              "    if (blockIdx.x == 0) TLS(1, 2, r);\n")
    end = app.rindex("\n}\n")  # the kernel's closing brace (comments of the next kernel follow)
    app = app[:end] + "\n  if (blockIdx.x == 0) TLS(1, 7, 0);" + app[end:]
    cu = cu[:m0] + mom + cu[m1:a0] + app + cu[a1:]
    if occupancy and "k_5_moments_device<2>" in cu:  # the template: the launch takes instantiation K
        assert occupancy in ("1", "2"), "with occupancy = auto in the schedule, -o1 or -o2"
        cu = sub(cu, "coconet_rt::devAutoOccupancy(P_, movers) == 2 ? &k_5_moments_device<2>",
                 f"{int(occupancy)} == 2 ? &k_5_moments_device<2>")
    elif occupancy:
        cu = sub(cu, "__launch_bounds__(coconet_rt::kDevThreads) k_5_moments_device",
                 f"__launch_bounds__(coconet_rt::kDevThreads, {int(occupancy)}) k_5_moments_device")
    (dst / "lamb.cu").write_text(cu)
    if movers:
        dev = dst / "coconet_device.cuh"
        dev.write_text(sub(dev.read_text(), "constexpr int kDevMovers = 64;", f"constexpr int kDevMovers = {int(movers)};"))


if __name__ == "__main__":
    main()
