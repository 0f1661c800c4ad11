#!/usr/bin/env python3
"""Where a generated program's device-API kernels spend one call: %globaltimer stamps.

Rewrites a folder that `coconetc compile` wrote into a copy whose device-group kernels (those
taking `ncclDevComm dc`) record the time on block 0 and on the grid's last block at: the kernel's
entry (0), after its PDL wait (1), after a tail's scalar chain (2, where the kernel has one),
after every statement of its shared rounds loop (8 + 4 r + j: the j-th statement of round r,
push / compute / pull / barrier in the order the loop has them) and at its end (47); and on
every block: the earliest entry (3) and latest end (4) of any block of the kernel, and the
earliest and latest end of a tail's scalar chain (48, 49), of a tail worker's first chunk
(50, 51: after its workerDone; every block's where all compute chunk 0), of the PDL wait (52, 53:
thread 0 of each block as the wait returns, before any memory access) and
the latest entry (55; 54 is the earliest, = 3) over the blocks that reach them. (Block 0's own
"after the wait", 1, comes after a load and the block's barrier.) Each kernel
counts its completed launches (the last block to end adds 1), so only call K's launches stamp
(K = STAMP_CALL, default 200: build with -DSTAMP_CALL=K to change it), and the first device
kernel of call K + 1 prints them, in microseconds from call K's first kernel's entry on block 0:

    ST rank R kernel KID block B: INDEX:US INDEX:US ...

(KID: the kernels in source order; B: 0 block 0, 1 the last block). Run the copy's driver with
enough calls, e.g. `NAME_main --spawn 4 -D ... --bench --warmup 50 --iters 300`
(tools/bench/gpu/driver-ab.sh --raw DIR keeps each run's output). Rounds run by separate mover
and worker blocks (roles split) are stamped in their own loops (8 + 4 r + j, j the statement of
that loop: block 0 is a mover, the last block a worker), and where such a block returns early
(47, its exit counted).

Usage: stamps.py GENERATED_DIR OUT_DIR
"""
from __future__ import annotations

import pathlib
import re
import shutil
import sys

RUNTIME = r'''
// ---- %globaltimer stamps (tools/bench/gpu/stamps.py) ----
#ifndef STAMP_CALL
#define STAMP_CALL 200
#endif
__device__ unsigned long long stT[8][2][56];
__device__ unsigned stLaunch[8], stExit[8];
// every block's earliest entry and latest end of call K, per kernel (printed as 3 and 4)
__device__ unsigned long long stFirst[8] = {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull}, stLast[8];
// the earliest and latest time of any block at spread point s (0: a tail's chain end, 1: a tail
// worker's first chunk done, 2: past the PDL wait, 3: entry), per kernel (printed as 48 + 2 s and
// 49 + 2 s)
#define ST_LO4 {~0ull, ~0ull, ~0ull, ~0ull}
__device__ unsigned long long stSpreadLo[8][4] = {ST_LO4, ST_LO4, ST_LO4, ST_LO4, ST_LO4, ST_LO4, ST_LO4, ST_LO4},
                          stSpreadHi[8][4];
__device__ __forceinline__ unsigned long long stNow() { unsigned long long x; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(x)); return x; }
__device__ __forceinline__ int stBlock() { return blockIdx.x == 0 ? 0 : blockIdx.x == gridDim.x - 1 ? 1 : -1; }
__device__ __forceinline__ void stamp(int kid, int k, unsigned call) {
  __syncthreads();
  if (call == STAMP_CALL && stBlock() >= 0 && threadIdx.x == 0 && k < 48) stT[kid][stBlock()][k] = stNow();
}
__device__ __forceinline__ unsigned stEnter(int kid, unsigned long long t0) {
  const unsigned call = *static_cast<volatile unsigned*>(&stLaunch[kid]);
  if (call == STAMP_CALL && stBlock() >= 0 && threadIdx.x == 0) stT[kid][stBlock()][0] = t0;
  if (call == STAMP_CALL && threadIdx.x == 0) {
    atomicMin(&stFirst[kid], t0);
    atomicMin(&stSpreadLo[kid][3], t0);
    atomicMax(&stSpreadHi[kid][3], t0);
  }
  return call;
}
// spread point s at time t (thread 0 of each block): the earliest and latest over the blocks
__device__ __forceinline__ void stSpreadAt(int kid, int s, unsigned call, unsigned long long t) {
  if (call == STAMP_CALL && threadIdx.x == 0) {
    atomicMin(&stSpreadLo[kid][s], t);
    atomicMax(&stSpreadHi[kid][s], t);
  }
}
// the same now
__device__ __forceinline__ void stSpread(int kid, int s, unsigned call) { stSpreadAt(kid, s, call, stNow()); }
__device__ __forceinline__ void stExitK(int kid) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (*static_cast<volatile unsigned*>(&stLaunch[kid]) == STAMP_CALL) atomicMax(&stLast[kid], stNow());
    __threadfence();
    if (atomicAdd(&stExit[kid], 1u) == gridDim.x - 1) { stExit[kid] = 0; __threadfence(); atomicAdd(&stLaunch[kid], 1u); }
  }
}
__device__ __forceinline__ void stampPrint(int me, int kernels, unsigned call) {
  if (call == STAMP_CALL + 1 && blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned long long z = stT[0][0][0];
    for (int kid = 0; kid < kernels; ++kid)
      for (int b = 0; b < 2; ++b) {
        stT[kid][b][3] = stFirst[kid];
        stT[kid][b][4] = stLast[kid];
        for (int s = 0; s < 4; ++s) {
          stT[kid][b][48 + 2 * s] = stSpreadLo[kid][s];
          stT[kid][b][49 + 2 * s] = stSpreadHi[kid][s];
        }
        printf("ST rank %d kernel %d block %d:", me, kid, b);
        for (int k = 0; k < 56; ++k)
          if (stT[kid][b][k] >= z && stT[kid][b][k] - z < 100000000ull) printf(" %d:%.1f", k, (stT[kid][b][k] - z) / 1000.0);
        printf("\n");
      }
  }
}
'''

LOOP_STATEMENT = re.compile(r"^    (if \(r[^)]*\) )?(coconet_rt::pushSlices|coconet_rt::pullSlices|compute\(edge|bar\.sync)")
# The loops of blocks in roles (movers, workers: four spaces, or six inside a head's `if (claimed)`
# and its `else`, or a tail's `if (flagEpoch)` and its `else`, or eight inside that `if`'s
# `if constexpr (kTiles)` and its `else`) and their statements (any deeper
# line; a claimed round's block-0 statements inside `if (blockIdx.x == 0)`, which block 0 runs
# whole, so its stamps' barriers are uniform).
ROLES_LOOP = re.compile(r"^( {4}| {6}| {8})for \(int r = [01]; r < rounds; \+\+r\) \{$")
ROLES_STATEMENT = re.compile(
    r"^ +(coconet_rt::(roleWait|roleSignal|workerDone|pushSlices|pullSlices|pushTilesPrefetchOwn|needChunk|pullTiles)|compute\(edge"
    r"|bar\.sync)")


def stamp_source(text: str) -> tuple[str, int]:
    """The source with its device-group kernels stamped, and how many kernels were."""
    starts = [m.start() for m in re.finditer(r"__global__ void [^\n]*_device\(ncclDevComm", text)]
    if not starts:
        return text, 0
    if len(starts) > 8:
        raise ValueError(f"stamps: {len(starts)} device kernels, at most 8")
    out, last = [], 0
    for kid, start in enumerate(starts):
        end = text.index("\n}\n", start) + 3
        res, j, inloop, inroles, indent = [], 0, False, False, ""
        for ln in text[start:end].split("\n"):
            if re.match(r"^  for \(int r = 0;", ln):
                inloop, inroles, j = True, False, 0
            elif ROLES_LOOP.match(ln):
                inroles, j, indent = True, 0, ROLES_LOOP.match(ln).group(1)
            elif inroles and ln == indent + "}":
                inroles = False
            if ln == "    return;":
                # a block in a role, or the one-rank form, ends here: stamp it and count its exit
                res += [f"    stamp({kid}, 47, stc);", f"    stExitK({kid});", ln]
                continue
            if ln.strip() == "coconet_rt::pdlWait();":
                res += ["  const unsigned long long stT0 = stNow();", ln, "  const unsigned long long stT1 = stNow();",
                        f"  const unsigned stc = stEnter({kid}, stT0);", f"  stSpreadAt({kid}, 2, stc, stT1);",
                        f"  stamp({kid}, 1, stc);"]
                if kid == 0:
                    res.append(f"  stampPrint(dc.lsaRank, {len(starts)}, stc);")
                continue
            if ln.startswith("  __half* mine = static_cast<__half*>") and "chainEpoch" in text[start:end]:
                res += [f"  stamp({kid}, 2, stc);", f"  stSpread({kid}, 0, stc);"]
            res.append(ln)
            if ln.strip().startswith("coconet_rt::workerDone(roles, 0, gridDim.x,"):
                # chunk 0 computed by every block (a tail whose movers join it): its spread
                res.append(" " * (len(ln) - len(ln.lstrip())) + f"stSpread({kid}, 1, stc);")
            if inloop and LOOP_STATEMENT.match(ln):
                res.append(f"    stamp({kid}, 8 + 4 * r + {j}, stc);")
                j += 1
            elif inroles and ROLES_STATEMENT.match(ln) and j < 4:
                pad = " " * (len(ln) - len(ln.lstrip()))
                res.append(pad + f"stamp({kid}, 8 + 4 * r + {j}, stc);")
                if "coconet_rt::workerDone(" in ln:
                    res.append(pad + f"if (r == 0) stSpread({kid}, 1, stc);")
                j += 1
        body = "\n".join(res)
        if "stEnter(" not in body:
            raise ValueError(f"stamps: kernel {kid} has no pdlWait() to stamp after")
        body = body[:-3] + f"\n  stamp({kid}, 47, stc);\n  stExitK({kid});\n}}\n"
        out += [text[last:start], body]
        last = end
    out.append(text[last:])
    stamped = "".join(out)
    first = stamped.index("template <") if "template <" in stamped[: starts[0] + 1] else starts[0]
    return stamped[:first] + RUNTIME + stamped[first:], len(starts)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    src, dst = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    manifest = src / "manifest.json"
    if not manifest.exists():
        print(f"stamps: {src} is not a folder that coconetc compile wrote (no manifest.json)", file=sys.stderr)
        return 1
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "ab-build"))
    total = 0
    for cu in sorted(dst.glob("*.cu")):
        if cu.name.endswith("_main.cu"):
            continue
        text, n = stamp_source(cu.read_text())
        if n:
            cu.write_text(text)
            total += n
            print(f"stamps: {n} kernel(s) in {cu}")
    if total == 0:
        print(f"stamps: no device-group kernel in {src}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
