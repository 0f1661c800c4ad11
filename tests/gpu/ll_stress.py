#!/usr/bin/env python3
"""Back-to-back calls of a generated allreduce, every call's output checked bit for bit.

The LL forms (dev_allreduce_ll, dev_allreduce_ll128) have no barrier: a call's lines carry its
flag, the calls take the window's two areas in turn, and a line of one call lands where lines of
earlier calls (other sizes, older flags) lay. A torn line, a stale flag taken for the call's, or
an area written while a peer still reads it shows as a wrong element in one call among many,
which one checked run (tests/gpu/run.sh) would rarely catch. Here every call of many is checked.

Run on a GPU machine, one process per GPU, after tools/bench/gpu/build.py built the programs
(tools/bench/programs/allreduce.cnet with its schedules: keys allreduce, allreduce_ll,
allreduce_ll128, ...):

    python3 -m torch.distributed.run --standalone --nproc-per-node P tests/gpu/ll_stress.py \\
        --build BUILD.json --programs allreduce_ll,allreduce_ll128 [--rounds R] [--burst B]

Each round takes the next size of --sizes (f16 elements per rank) and an input offset (0 or 1
element: the unaligned paths), fills B inputs with multiples of 1/256 whose sums are exact in
f16 in any order, enqueues the program's B calls back to back (each into its own output), then
NCCL's all-reduce of each input, and compares. Prints a line per program (calls, wrong calls, the
first wrong element) and exits 1 if any call was wrong. tests/gpu/ll-stress.sh builds and runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench", "gpu"))
from coconet import Library  # noqa: E402

DEFAULT_SIZES = "1,7,60,61,4097,30001,131071,131072,524287,1048576"


def exact_input(n: int, world: int, gen: torch.Generator, device) -> torch.Tensor:
    """Multiples of 1/256 with |k| <= 2048 / world: any order of the sum is exact in f16."""
    k = 2048 // world
    r = torch.randint(-k, k + 1, (n,), generator=gen, device="cpu", dtype=torch.int32)
    return (r.to(torch.float32) / 256.0).to(torch.float16).to(device)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build.json written by tools/bench/gpu/build.py")
    ap.add_argument("--programs", required=True, help="comma list of program keys in it")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="f16 elements per rank, taken in turn")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--burst", type=int, default=16, help="calls enqueued back to back per round")
    args = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=dev)
    build = json.load(open(args.build))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    bad_total = 0
    for key in args.programs.split(","):
        rec = build.get("programs", {}).get(key)
        if rec is None or rec.get("error") or not rec.get("lib"):
            print(f"ll_stress: {key}: not built ({(rec or {}).get('error', 'absent')})", flush=True)
            bad_total += 1
            continue
        prog = Library(rec["lib"], rec.get("program")).create()
        gen = torch.Generator().manual_seed(1000 + rank)
        calls = wrong = 0
        first = ""
        for r in range(args.rounds):
            n, off = sizes[r % len(sizes)], (r // len(sizes)) % 2
            xs = [exact_input(n + off, world, gen, dev)[off:] for _ in range(args.burst)]
            ys = [torch.full((n,), float("nan"), dtype=torch.float16, device=dev) for _ in range(args.burst)]
            steps = [prog.bind({"N": n}, {}, {"x": x, "y": y}) for x, y in zip(xs, ys)]
            torch.cuda.synchronize()
            for step in steps:
                step()
            prog.finish()
            for x, y in zip(xs, ys):
                ref = x.clone()
                dist.all_reduce(ref)
                calls += 1
                diff = (y.view(torch.int16) != ref.view(torch.int16)).nonzero()
                if diff.numel():
                    wrong += 1
                    if not first:
                        i = int(diff[0, 0])
                        first = (f"round {r} (N={n}, offset {off}): {diff.numel()} elements wrong, first [{i}] "
                                 f"{float(y[i])} against {float(ref[i])}")
        prog.destroy()
        totals = torch.tensor([calls, wrong], device=dev)
        dist.all_reduce(totals)
        if rank == 0 or wrong:
            print(f"ll_stress: {key} P={world} rank {rank}: {calls} calls (sizes {args.sizes}; bursts of {args.burst}), "
                  f"{wrong} wrong here, {int(totals[1])} wrong on all ranks" + (f"; {first}" if first else ""), flush=True)
        bad_total += int(totals[1])
    dist.destroy_process_group()
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
