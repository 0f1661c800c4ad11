"""decode_gemv: a transformer MLP for one decoded token, tensor-parallel (GEMV + all-reduce).

The program (samples/decode_gemv): x, residual : [H] replicated; w1 : [F, H] and b1 : [F]
sliced(0); w2 : [H, F] sliced(1); b2 : [H] replicated;
    out = allreduce(w2 @ gelu(w1 @ x + b1)) + b2 + residual    (replicated).
Rank r stores w1[r*F/P:(r+1)*F/P, :] ([F/P, H]), b1's block [F/P], w2[:, r*F/P:(r+1)*F/P]
([H, F/P], contiguous), and x, residual, b2 and out whole ([H]).

gelu is the exact (erf) GeLU: coconet_rt::gelu is 0.5 x (1 + erf(x / sqrt 2)), PyTorch's
F.gelu(approximate="none").

Rows:
  unfused               torch.mv, bias + gelu, torch.mv, dist.all_reduce, bias + residual
  torch.compile         the local GEMV + gelu + GEMV and the epilogue torch.compile'd, the
                        all_reduce eager between them
  coconetc              the sample with its schedule (all-reduce + epilogue fused: one
                        one-shot device-API kernel, in its LL form on 2 GPUs)
  coconetc_ll           as coconetc with tune(f, algorithm = ll): the one-shot kernel's LL form
                        (flags in the data, no barrier) on every rank count
  coconetc_overlap      samples/decode_gemv/decode_gemv_overlap.sched: as coconetc, pipelined
                        with the GEMV in 2 chunks (NCCL's all-reduce per chunk)
  coconetc_unscheduled  the sample without a schedule (its all-reduce a one-shot device-API
                        kernel too: the default lowering)
Shapes: H 4096 and 8192, F = 4H, f16. Inputs: x, b2, residual ~ N(0, 1), w1 ~ N(0, 1/H),
b1 ~ N(0, 1/4), w2 ~ N(0, 1/F).
"""
from __future__ import annotations

import math

from workloads import (FIFTH_LESS, GRAPH_MODE, Row, compile_fn, copy_row, graph_row, headline as spec, program_row,
                       static_inputs)

NAME = "decode_gemv"
SOURCE = "samples/decode_gemv/decode_gemv.cnet"

PROGRAMS = {
    "decode_gemv": dict(source=SOURCE, schedule="samples/decode_gemv/decode_gemv.sched"),
    "decode_gemv_ll": dict(source=SOURCE, schedule="samples/decode_gemv/decode_gemv.sched",
                           schedule_append="tune(f, algorithm = ll);\n"),
    "decode_gemv_overlap": dict(source=SOURCE, schedule="samples/decode_gemv/decode_gemv_overlap.sched"),
    "decode_gemv_unscheduled": dict(source=SOURCE, schedule=None),
}

HS = (4096, 8192)
B1_STD = 0.5
EPS, RTOL = 2.0 ** -10, 2e-3  # f16


def configs(world: int, quick: bool) -> list[dict]:
    return [{"name": f"H={H} F={4 * H} f16", "sizes": {"H": H, "F": 4 * H}, "H": H, "F": 4 * H,
             "dtype": "f16", "x": H, "x_label": "hidden size H",
             "bytes": H * 2,                               # the all-reduce's payload
             "weight_bytes": 2 * (4 * H // world) * H * 2,  # weights read per rank and step
             "flops": 2 * 2 * (4 * H // world) * H}
            for H in ((4096,) if quick else HS) if (4 * H) % world == 0]


HEADLINE_PROGRAMS = ["decode_gemv"]


def headline(params: dict, world: int) -> dict | None:
    """Every config (a decode step; on one GPU H = 8192 alone): against eager, torch.compile, and both under CUDA graphs; the
    floor the read of this rank's weights (a copy of as many bytes moved) and, on several GPUs, the
    larger of it and NCCL's all-reduce of the H outputs."""
    if world == 1 and params.get("H") != 8192:
        return None
    return spec(peers=["unfused", "torch.compile", "eager_graph", "torch.compile_graphs"],
                floors=["copy"] + (["nccl_allreduce"] if world > 1 else []), floor_rule="max",
                targets=[FIFTH_LESS], x=params.get("H"), x_label="hidden size H (F = 4H)",
                limit="HBM: the two GEMVs read this rank's weights once, near the read bandwidth; "
                      "the all-reduce of H values is a few microseconds")


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as Fn

    sizes = dict(cfg["sizes"])
    H, F = sizes["H"], sizes["F"]
    P = ctx.world
    if F % P:
        raise ValueError(f"F={F} is not divisible by {P} ranks")
    Fl = F // P
    dt = torch.float16
    group = ctx.group
    # w1 @ x ~ N(0, 1); gelu; w2 @ h ~ N(0, E[gelu^2] < 1); b2 and residual ~ N(0, 1)
    tol = {"out": (RTOL, 16.0 * EPS * math.sqrt(3.0 + B1_STD ** 2))}

    def inputs() -> dict:
        return {"x": ctx.rand((H,), dt, 31, True),
                "residual": ctx.rand((H,), dt, 32, True),
                "w1": ctx.rand((Fl, H), dt, 33, False, scale=1.0 / math.sqrt(H)),
                "b1": ctx.rand((Fl,), dt, 34, False, scale=B1_STD),
                "w2": ctx.rand((H, Fl), dt, 35, False, scale=1.0 / math.sqrt(F)),
                "b2": ctx.rand((H,), dt, 36, True)}

    def local_part(x, w1, b1, w2):
        h = Fn.gelu(torch.mv(w1, x) + b1, approximate="none")   # [F/P]: this rank's slice
        return torch.mv(w2, h)                                  # [H]: partial sums

    def epilogue(y, b2, residual):
        return y + b2 + residual

    def peer(part, epi, note, static=False) -> Row:
        t = inputs()
        if static:
            static_inputs(t)
        st = {}

        def step():
            y = part(t["x"], t["w1"], t["b1"], t["w2"])
            dist.all_reduce(y, group=group)
            st["out"] = epi(y, t["b2"], t["residual"])

        return Row(step=step, outputs=lambda: {"out": st["out"]}, tol=tol, note=note)

    def unfused() -> Row:
        return peer(local_part, epilogue,
                    "torch.mv, bias + gelu, torch.mv, NCCL all_reduce, bias + residual")

    def compiled(mode="max-autotune-no-cudagraphs") -> Row:
        torch._dynamo.reset()
        part, epi = compile_fn(local_part, mode), compile_fn(epilogue, mode)
        if mode == GRAPH_MODE:
            mark = torch.compiler.cudagraph_mark_step_begin
            part_in = part
            part = lambda *a: (mark(), part_in(*a).clone())[1]   # noqa: E731 (the all-reduce writes it)
        row = peer(part, epi, f"GEMV + gelu + GEMV and the epilogue torch.compile'd (mode {mode}), "
                              "all_reduce eager", static=mode == GRAPH_MODE)
        row.graph = mode == GRAPH_MODE
        return row

    def allreduce() -> Row:
        y = ctx.rand((H,), dt, 37, False)
        return Row(step=lambda: dist.all_reduce(y, group=group), outputs=lambda: {}, check=False,
                   note="floor: NCCL's all_reduce of the H partial sums alone")

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            t["out"] = torch.empty((H,), dtype=dt, device=ctx.device)
            return program_row(ctx, key, sizes, {}, t, "out", tol, note)
        return make

    return [
        ("unfused", unfused),
        ("torch.compile", compiled),
        ("eager_graph", lambda: graph_row(ctx, unfused(), "unfused captured in a CUDA graph")),
        ("torch.compile_graphs", lambda: compiled(GRAPH_MODE)),
        ("copy", lambda: copy_row(ctx, cfg["weight_bytes"], "this rank's w1 and w2 read")),
        ("nccl_allreduce", allreduce),
        ("coconetc", coconetc("decode_gemv", "all-reduce + epilogue fused: one one-shot device-API kernel "
                                            "(its LL form on 2 GPUs)")),
        ("coconetc_ll", coconetc("decode_gemv_ll", "as coconetc in the one-shot kernel's LL form (flags in "
                                                   "the data, no barrier): tune(f, algorithm = ll)")),
        ("coconetc_overlap", coconetc("decode_gemv_overlap", "all-reduce + epilogue fused, pipelined with the "
                                                             "GEMV (2 chunks): decode_gemv_overlap.sched")),
        ("coconetc_unscheduled", coconetc("decode_gemv_unscheduled",
                                          "no schedule: gemv, gelu, gemv, allreduce, epilogue")),
    ]
