"""The all-reduce alone: coconetc's against NCCL's (issue 5: "bus bandwidth >= NCCL's at every
size 64 KiB..1 GiB; at most half NCCL's time at <= 256 KiB").

Program: tools/bench/programs/allreduce.cnet, y = allreduce(+, x) over f16[N].
Rows:
  nccl_allreduce       dist.all_reduce(x), in place (how PyTorch code calls it; an
                       out-of-place copy would add a pass over the data); the reference.
  coconetc             the program with allreduce.sched (split + fuse: the fused all-reduce),
                       out of place x -> y, compiled as by default: a kernel over NCCL's device
                       API, LL up to 256 KiB per rank (32 KiB on 4 GPUs), LL128 up to 2 MiB on
                       2 GPUs and 512 KiB on 4, one-shot up to 512 KiB (8 MiB on 2 GPUs), two-shot up to 16 MiB, copy engines from
                       64 MiB on 2 ranks and from 1 GiB on more, NCCL's allreduce between.
  coconetc_nccl        the same compiled with --no-device-collectives (one ncclAllReduce).
  coconetc_ll / coconetc_ll128 / coconetc_one_shot / coconetc_two_shot / coconetc_copy_engines
                       coconetc with tune(algorithm = ll / ll128 / one_shot / two_shot /
                       copy_engines) at every size (ll: the one-shot form with flags in the data,
                       no barrier, 8 data bytes in 16; ll128: 120 data bytes and one flag in
                       each 128-byte line).
  coconetc_unscheduled the program with no schedule (the generated code's plain collective).
Sizes: 64 KiB to 1 GiB per rank by powers of 4 (quick: 64 KiB, 1 MiB, 16 MiB);
ALLREDUCE_SIZES="512K,2M,8M" (developer option) replaces them. Each row
reports bus bandwidth 2(P-1)/P * bytes / time (NCCL's definition for all-reduce).

The inputs are multiples of 1/256 small enough that the sum is exact in f16 in any order, so
every row must give the reference's bits exactly (tolerance 0).
"""
from __future__ import annotations

import os

try:  # (its PROGRAMS and configs need no PyTorch: build.py --no-build imports them in CI without it)
    import torch.distributed as dist
except ImportError:
    dist = None

from workloads import Row, graph_row, headline as spec, quantized_grad

SOURCE = "tools/bench/programs/allreduce.cnet"
PROGRAMS = {
    "allreduce": dict(source=SOURCE, schedule="tools/bench/programs/allreduce.sched"),
    "allreduce_nccl": dict(source=SOURCE, schedule="tools/bench/programs/allreduce.sched",
                           flags=["--no-device-collectives"]),
    "allreduce_ll": dict(source=SOURCE, schedule="tools/bench/programs/allreduce_ll.sched"),
    "allreduce_ll128": dict(source=SOURCE, schedule="tools/bench/programs/allreduce_ll128.sched"),
    "allreduce_one_shot": dict(source=SOURCE, schedule="tools/bench/programs/allreduce_one_shot.sched"),
    "allreduce_two_shot": dict(source=SOURCE, schedule="tools/bench/programs/allreduce_two_shot.sched"),
    "allreduce_copy_engines": dict(source=SOURCE, schedule="tools/bench/programs/allreduce_copy_engines.sched"),
    "allreduce_unscheduled": dict(source=SOURCE, schedule=None),
}
COCONETC_ROWS = {"coconetc": "allreduce", "coconetc_nccl": "allreduce_nccl",
                 "coconetc_ll": "allreduce_ll", "coconetc_ll128": "allreduce_ll128", "coconetc_one_shot": "allreduce_one_shot", "coconetc_two_shot": "allreduce_two_shot",
                 "coconetc_copy_engines": "allreduce_copy_engines", "coconetc_unscheduled": "allreduce_unscheduled"}
EXACT = {"y": (0.0, 0.0)}


def _size_name(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


SIZES_ENV = "ALLREDUCE_SIZES"
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def env_sizes() -> list[int] | None:
    """Bytes per rank from ALLREDUCE_SIZES ("512K,2M,8M": whole KiB, MiB or GiB, an even count
    of bytes), or None where it is not set."""
    text = os.environ.get(SIZES_ENV, "").strip()
    if not text:
        return None
    sizes = []
    for item in text.split(","):
        item = item.strip().upper()
        unit = _UNITS.get(item[-1:], 0)
        digits = item[:-1] if unit else item
        if not digits.isdigit() or int(digits) < 1:
            raise ValueError(f"{SIZES_ENV}={text!r}: expected sizes such as 512K, 2M, 1G separated by commas")
        nbytes = int(digits) * (unit or 1)
        if nbytes % 2:
            raise ValueError(f"{SIZES_ENV}={text!r}: {item} is not a whole number of f16 elements")
        sizes.append(nbytes)
    return sizes


def configs(world: int, quick: bool) -> list[dict]:
    sizes = env_sizes() or ([64 << 10, 1 << 20, 16 << 20] if quick else [(64 << 10) * 4 ** i for i in range(8)])
    return [{"name": _size_name(b), "bytes": b, "N": b // 2, "dtype": "f16",
             "x": b, "x_label": "bytes per rank"} for b in sizes]


HEADLINE_PROGRAMS = ["allreduce"]
SMALL_BYTES = 1 << 20   # up to this size NCCL is also timed captured in a CUDA graph


def headline(params: dict, world: int) -> dict | None:
    """Every size on two GPUs or more (one rank has nothing to reduce): against NCCL's all-reduce
    (in place, as PyTorch calls it) and, up to 1 MiB, the same captured in a CUDA graph."""
    if world < 2:
        return None
    small = params.get("bytes", 0) <= 256 << 10
    peers = ["nccl_allreduce"] + (["nccl_allreduce_graph"] if params.get("bytes", 0) <= SMALL_BYTES else [])
    return spec(peers=peers, targets=[("peer", ">=", 2.0, "speed-up >= 2 (half NCCL's time)") if small else
                                      ("peer", ">=", 1.0, "speed-up >= 1")],
                limit="the links: from 16 MiB the program calls NCCL's own all-reduce",
                x=params.get("bytes"), x_label="bytes per rank")


def _nccl_row(cfg, ctx) -> Row:
    x0 = quantized_grad(ctx, cfg["N"], seed=11)
    x = x0.clone()

    def reset():
        x.copy_(x0)

    return Row(step=lambda: dist.all_reduce(x), outputs=lambda: {"y": x}, reset=reset,
               tol=EXACT, bytes=cfg["bytes"],
               note="dist.all_reduce in place (PyTorch's usual call)")


def _coconetc_row(cfg, ctx, key) -> Row:
    prog = ctx.coconet(key)
    sizes = {"N": cfg["N"]}
    x = quantized_grad(ctx, cfg["N"], seed=11)
    y = prog.empty("y", sizes)
    step = prog.bind(sizes, {}, {"x": x, "y": y})
    return Row(step=step, outputs=lambda: {"y": y}, finish=prog.finish, tol=EXACT,
               bytes=cfg["bytes"], note=f"program {key}, out of place")


def rows(cfg: dict, ctx, mode: str):
    out = [("nccl_allreduce", lambda: _nccl_row(cfg, ctx)),
           ("nccl_allreduce_graph", lambda: graph_row(ctx, _nccl_row(cfg, ctx), "dist.all_reduce in place, "
                                                      "captured in a CUDA graph"))]
    for name, key in COCONETC_ROWS.items():
        out.append((name, lambda key=key: _coconetc_row(cfg, ctx, key)))
    return out
