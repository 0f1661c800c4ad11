#!/usr/bin/env python3
"""Session 54 prototype: the device groups' multi-rank kernels at two blocks per SM without spills.

Nsight Compute (m3) found the multi-rank kernels at 108 (Adam's `f`) and 122 (LAMB's `moments`)
registers, one 512-thread block per SM, where their one-rank forms take 64; asking two blocks per
SM (`tune(f, occupancy = 2)`) spilled (Adam: 156 bytes of spill stores in ptxas, 3.4 M spill
requests, 1.2x slower). With 4 elements a unit instead of 8 ptxas keeps Adam's multi-rank kernel
at 64 registers with 16 bytes of spills (this machine's nvcc 13.0, sm_90a).

Rewrites a folder that `coconetc compile` wrote into a copy where every device-group kernel with a
one-rank form (a template over `bool kSolo`) takes, in its multi-rank instantiations, V = 4 and
__launch_bounds__(512, 2); the one-rank form is unchanged. The host still sizes the grid and the
claimed tiles by 8-element units (thresholds only); a kernel's chunks and parts follow its own V.
Check it with the GPU tests (GPU_TESTS_MULTI_AT_ONE=1 at one rank, any ranks on more GPUs) before
timing it; without roles the grid takes every block that fits only with COCONET_DEV_BLOCKS=512.

    proto_v4.py GENERATED_DIR OUT_DIR
"""
import pathlib
import re
import shutil
import sys


def rewrite(src: str) -> tuple[str, int]:
    out, n, pos = [], 0, 0
    for m in re.finditer(r"template <([^>]*\bbool kSolo\b[^>]*)>\n__global__ void __launch_bounds__\((coconet_rt::kDevThreads)(?:, ([^)]*?))?\) (\w+)\(", src):
        out.append(src[pos:m.start()])
        old = m.group(3)
        bounds = f"coconet_rt::kDevThreads, kSolo ? {('(' + old + ')') if old else '0'} : 2"
        out.append(f"template <{m.group(1)}>\n__global__ void __launch_bounds__({bounds}) {m.group(4)}(")
        pos = m.end()
        v = src.index("  constexpr int V = 8;\n", pos)
        out.append(src[pos:v] + "  constexpr int V = kSolo ? 8 : 4;\n")
        pos = v + len("  constexpr int V = 8;\n")
        n += 1
    out.append(src[pos:])
    return "".join(out), n


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "ab-build*"))
    total = 0
    for cu in dst.glob("*.cu"):
        if cu.name.endswith("_main.cu"):
            continue
        text, n = rewrite(cu.read_text())
        cu.write_text(text)
        total += n
    print(f"proto_v4: {total} kernel(s) rewritten in {dst}")
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
