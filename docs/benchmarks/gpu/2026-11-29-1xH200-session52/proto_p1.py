#!/usr/bin/env python3
"""Session 52 prototype: LAMB's multi-rank kernels on one GPU, to time their parts without NVLink.

Rewrites a folder that `coconetc compile samples/lamb/lamb.cnet` wrote into a copy whose host code,
at one rank, launches the multi-rank instantiations of `moments` and `apply` (kSolo = false: the
roles, the per-round hand-over counters, the norms' chain through the LSA window, the flags of the
pulling tail) in ROUNDS rounds with movers, instead of the one-rank form. At one rank the movers
push only the own slice (a local copy) and pull nothing; everything else runs as on four ranks. With
N = 2^22 a rank's slice is 2^22 elements, what each of four ranks updates at N = 2^24.

    proto_p1.py GENERATED_DIR OUT_DIR [ROUNDS (default 4)] [OCCUPANCY of moments (default 1, as on 4 ranks)]
    proto_p1.py --ahead GENERATED_DIR OUT_DIR

--ahead only rewrites the driver's --bench loop so that the host runs ahead of the GPU: one event
before the timed calls and one after them, no wait between calls (the generated driver waits for
every call, so each call's kernels are launched while the GPU is idle or busy with that call's
first kernel); its median is the mean time per call.

Not a build to check results by (the one-rank path is the product's); stamp it with
tools/bench/gpu/stamps.py and run its driver with --spawn 1.
"""
import pathlib
import re
import shutil
import sys


AHEAD_OLD = """        for (int i = 0; i < o.iters; ++i) {
          DRIVER_CHECK(cudaEventRecord(a, stream), "bench");
          program.run(sz, sc, t, seed);
          DRIVER_CHECK(cudaEventRecord(b, stream), "bench");
          program.finish(o.timeout);
          float ms = 0;
          DRIVER_CHECK(cudaEventElapsedTime(&ms, a, b), "bench");
          us.push_back(ms * 1000.0);
        }
"""
AHEAD_NEW = """        // proto_p1 --ahead: the host runs ahead of the GPU through the timed calls
        DRIVER_CHECK(cudaEventRecord(a, stream), "bench");
        for (int i = 0; i < o.iters; ++i) program.run(sz, sc, t, seed);
        DRIVER_CHECK(cudaEventRecord(b, stream), "bench");
        program.finish(o.timeout);
        {
          float ms = 0;
          DRIVER_CHECK(cudaEventElapsedTime(&ms, a, b), "bench");
          us.assign(static_cast<size_t>(o.iters), ms * 1000.0 / o.iters);
        }
"""


def ahead(src: pathlib.Path, dst: pathlib.Path) -> int:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("ab-build*"))
    mains = list(dst.glob("*_main.cu"))
    if len(mains) != 1:
        print(f"proto_p1: expected one driver in {dst}, found {len(mains)}", file=sys.stderr)
        return 1
    text = mains[0].read_text()
    if text.count(AHEAD_OLD) != 1:
        print("proto_p1: the driver's --bench loop is not the expected one", file=sys.stderr)
        return 1
    mains[0].write_text(text.replace(AHEAD_OLD, AHEAD_NEW))
    return 0


def main() -> int:
    if sys.argv[1] == "--ahead":
        return ahead(pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]))
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    occ = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("ab-build*"))
    cu = dst / "lamb.cu"
    text = cu.read_text()
    edits = [
        # the rounds of both kernels: ROUNDS at any rank count
        (r"const int rounds = P_ == 1 \? 1 : coconet_rt::devAutoRounds\([^;]*\);",
         f"const int rounds = {rounds};  // proto_p1", 2),
        # moments: the multi-rank instantiation at OCCUPANCY blocks per SM
        (r"auto\* const k_5_moments_device_k = P_ == 1 \? [^;]*;",
         f"auto* const k_5_moments_device_k = &k_5_moments_device<{occ}, false>;  // proto_p1", 1),
        # apply: the multi-rank instantiation, the pulls' form by claimedPulls as on many ranks
        (r"auto\* const k_23_apply_device_k = P_ == 1 \? &k_23_apply_device<true, false> : ",
         "auto* const k_23_apply_device_k = /* proto_p1 */ ", 1),
    ]
    for pattern, repl, count in edits:
        text, n = re.subn(pattern, repl, text)
        if n != count:
            print(f"proto_p1: expected {count} match(es) of {pattern!r}, found {n}", file=sys.stderr)
            return 1
    cu.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
