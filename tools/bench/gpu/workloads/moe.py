"""moe_gemm: an expert-parallel mixture-of-experts FFN (all-to-all, GEMM, GeLU, GEMM, all-to-all).

The program (samples/moe_gemm): tokens : [nranks, X, C, H] local (dimension 0: the rank that
hosts the expert), w1 : [X, H, F] and w2 : [X, F, H] local (this rank's X experts);
    dispatched = all_to_all(tokens)                   [source rank, local expert, slot, H]
    y = matmul(gelu(matmul(dispatched, w1)), w2)      expert e's weights for dispatched[:, e]
    combined = all_to_all(y)                          [host rank, its expert, slot, H]
Every tensor is stored whole on its rank, with its own values. gelu is the exact (erf) GeLU,
as coconet_rt::gelu.

Rows:
  unfused               all_to_all_single, a copy to expert-major [X, P*C, H], torch.bmm +
                        gelu, torch.bmm, a copy back to rank-major, all_to_all_single
  coconetc              the sample with its schedule (moe_gemm.sched): the all_to_all pipeline (the
                        FFN on one sender's tokens at a time, both all-to-alls pipelined with
                        it), its transfers by copy engines into symmetric windows; where a
                        block's GEMMs would be read-bound (the decode shape) it runs the program
                        unscheduled, which reads each expert's weights once
  coconetc_nccl         the same pipeline with tune(combined, algorithm = nccl): NCCL send/recv
  coconetc_capacity     moe_gemm_capacity.sched: the second GEMM pipelined with the returning
                        all-to-all, 2 chunks of the capacity
  coconetc_unscheduled  the sample without a schedule (its all_to_alls device kernels where every
                        rank is load/store reachable)
  coconetc_unscheduled_nccl  the same compiled with --no-device-collectives (NCCL send/recv pairs)
Shapes: X = 2 experts per rank, capacity C = 1024, H = 4096, f16, with F = 8192 (F = 2H, the
GEMMs take ~80% of the unfused time at 2 GPUs) and F = 2048 (fine-grained experts, F = H/2,
as in DeepSeek-style MoE layers: the all-to-alls weigh more); and a decode shape, C = 16 with
F = 8192, where the expert GEMMs are bound by reading the weights (256 MiB per rank). Inputs: tokens ~ N(0, 1),
w1 ~ N(0, 1/H), w2 ~ N(0, 1/F) (so every value stays O(1)).
"""
from __future__ import annotations

import math

from workloads import FIFTH_LESS, GRAPH_MODE, Row, compile_fn, graph_row, headline as spec, program_row, static_inputs

NAME = "moe_gemm"
SOURCE = "samples/moe_gemm/moe_gemm.cnet"

PROGRAMS = {
    "moe_gemm": dict(source=SOURCE, schedule="samples/moe_gemm/moe_gemm.sched"),
    "moe_gemm_nccl": dict(source=SOURCE, schedule="samples/moe_gemm/moe_gemm.sched",
                          schedule_append="tune(combined, algorithm = nccl);\n"),
    "moe_gemm_capacity": dict(source=SOURCE, schedule="samples/moe_gemm/moe_gemm_capacity.sched"),
    "moe_gemm_unscheduled": dict(source=SOURCE, schedule=None),
    "moe_gemm_unscheduled_nccl": dict(source=SOURCE, schedule=None, flags=["--no-device-collectives"]),
}

X, C, H = 2, 1024, 4096
FFS = (8192, 2048)
DECODE_C = 16  # decode: a few tokens per expert from each rank (the expert GEMMs read-bound)
EPS, RTOL = 2.0 ** -10, 2e-3  # f16


def configs(world: int, quick: bool) -> list[dict]:
    shapes = [(C, FFS[0])] if quick else [(C, FF) for FF in FFS] + [(DECODE_C, FFS[0])]
    return [{"name": f"X={X} C={Cn} H={H} F={FF} f16", "sizes": {"X": X, "C": Cn, "H": H, "F": FF},
             "experts_per_rank": X, "capacity": Cn, "H": H, "F": FF, "dtype": "f16",
             "x": FF, "x_label": "expert intermediate size F",
             "bytes": world * X * Cn * H * 2,                 # each all-to-all's payload per rank
             "flops": 2 * 2 * world * X * Cn * H * FF}        # the expert GEMMs, per rank
            for Cn, FF in shapes]


HEADLINE_PROGRAMS = ["moe_gemm"]


def headline(params: dict, world: int) -> dict | None:
    """On several GPUs every config, on one GPU (no all-to-all: the expert FFN) F = 8192 at both
    capacities: against eager (unfused), torch.compile of the FFN and, at the decode capacity,
    both under CUDA graphs; the floor the expert GEMMs alone and, on several GPUs, the larger of
    them and NCCL's two all-to-alls."""
    decode = params.get("capacity", C) <= DECODE_C
    if world == 1 and params.get("F") != FFS[0]:
        return None
    peers = ["unfused", "torch.compile"] + (["eager_graph", "torch.compile_graphs"] if decode else [])
    return spec(peers=peers, floors=["gemms"] + (["nccl_all_to_all"] if world > 1 else []), floor_rule="max",
                targets=[FIFTH_LESS], series=f"C = {params.get('capacity')}", x=params.get("F"),
                x_label="expert intermediate size F",
                limit=("one GPU: no all-to-all to hide, the expert GEMMs are the step (the floor)"
                       if world == 1 else
                       "decode: the expert GEMMs read every weight for a few tokens; the pipeline's "
                       "transfers have little GEMM time to hide behind" if decode else
                       "the expert GEMMs are most of the step and run power-bound; only the "
                       "all-to-alls can be hidden"))


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    sizes = dict(cfg["sizes"])
    Xn, Cn, Hn, Fn = (sizes[k] for k in ("X", "C", "H", "F"))
    P = ctx.world
    dt = torch.float16
    group = ctx.group
    # pre-activations ~ N(0, 1), y ~ N(0, E[gelu^2] < 1)
    tol = {"combined": (RTOL, 16.0 * EPS)}

    def inputs() -> dict:
        return {"tokens": ctx.rand((P, Xn, Cn, Hn), dt, 51, False),
                "w1": ctx.rand((Xn, Hn, Fn), dt, 52, False, scale=1.0 / math.sqrt(Hn)),
                "w2": ctx.rand((Xn, Fn, Hn), dt, 53, False, scale=1.0 / math.sqrt(Fn))}

    def unfused() -> Row:
        t = inputs()
        dispatched = torch.empty_like(t["tokens"])
        combined = torch.empty_like(t["tokens"])

        def step():
            dist.all_to_all_single(dispatched, t["tokens"], group=group)
            xe = dispatched.permute(1, 0, 2, 3).reshape(Xn, P * Cn, Hn)    # expert-major copy
            h = F.gelu(torch.bmm(xe, t["w1"]), approximate="none")          # [X, P*C, F]
            y = torch.bmm(h, t["w2"])                                        # [X, P*C, H]
            yr = y.view(Xn, P, Cn, Hn).permute(1, 0, 2, 3).contiguous()     # rank-major copy
            dist.all_to_all_single(combined, yr, group=group)

        return Row(step=step, outputs=lambda: {"combined": combined}, tol=tol,
                   note="all_to_all_single, bmm + gelu, bmm (expert-major copies), "
                        "all_to_all_single")

    def ffn(xe, w1, w2):
        return torch.bmm(F.gelu(torch.bmm(xe, w1), approximate="none"), w2)

    def compiled(mode="max-autotune-no-cudagraphs") -> Row:
        torch._dynamo.reset()
        t = inputs()
        dispatched = torch.empty_like(t["tokens"])
        combined = torch.empty_like(t["tokens"])
        graphs = mode == GRAPH_MODE
        mark = torch.compiler.cudagraph_mark_step_begin if graphs else (lambda: None)
        if graphs:
            static_inputs(t, dispatched)
        f = compile_fn(lambda d, w1, w2: ffn(d.permute(1, 0, 2, 3).reshape(Xn, P * Cn, Hn), w1, w2)
                       .view(Xn, P, Cn, Hn).permute(1, 0, 2, 3).contiguous(), mode)

        def step():
            mark()
            dist.all_to_all_single(dispatched, t["tokens"], group=group)
            dist.all_to_all_single(combined, f(dispatched, t["w1"], t["w2"]), group=group)

        return Row(step=step, outputs=lambda: {"combined": combined}, tol=tol, graph=graphs,
                   note=f"all_to_all_single, the expert FFN (copies, bmm + gelu, bmm) torch.compile'd "
                        f"(mode {mode}), all_to_all_single")

    def gemms() -> Row:
        t = inputs()
        xe = t["tokens"].permute(1, 0, 2, 3).reshape(Xn, P * Cn, Hn).contiguous()
        return Row(step=lambda: ffn(xe, t["w1"], t["w2"]), outputs=lambda: {}, check=False,
                   note="floor: the expert FFN alone (bmm + gelu, bmm; cuBLAS)")

    def all_to_all() -> Row:
        t = inputs()
        mid = torch.empty_like(t["tokens"])

        def step():
            dist.all_to_all_single(mid, t["tokens"], group=group)
            dist.all_to_all_single(t["tokens"], mid, group=group)
        return Row(step=step, outputs=lambda: {}, check=False,
                   note="floor: NCCL's two all_to_all_single alone")

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            t["combined"] = torch.empty_like(t["tokens"])
            return program_row(ctx, key, sizes, {}, t, "combined", tol, note)
        return make

    return [
        ("unfused", unfused),
        ("torch.compile", compiled),
        ("eager_graph", lambda: graph_row(ctx, unfused(), "unfused captured in a CUDA graph")),
        ("torch.compile_graphs", lambda: compiled(GRAPH_MODE)),
        ("gemms", gemms),
        ("nccl_all_to_all", all_to_all),
        ("coconetc", coconetc("moe_gemm", "moe_gemm.sched: the FFN rank block by rank block, both "
                                          "all-to-alls pipelined with it by copy engines")),
        ("coconetc_nccl", coconetc("moe_gemm_nccl", "the same with tune(combined, algorithm = nccl): "
                                                    "NCCL send/recv pairs")),
        ("coconetc_capacity", coconetc("moe_gemm_capacity", "moe_gemm_capacity.sched: second GEMM pipelined "
                                                            "with the returning all-to-all (2 chunks of C)")),
        ("coconetc_unscheduled", coconetc("moe_gemm_unscheduled",
                                          "no schedule: all_to_all, matmul, gelu, matmul, "
                                          "all_to_all (device kernels)")),
        ("coconetc_unscheduled_nccl", coconetc("moe_gemm_unscheduled_nccl",
                                               "no schedule, --no-device-collectives: the all_to_alls by NCCL")),
    ]
