"""pipeline: the boundary between two tensor-parallel pipeline stages.

The program (samples/pipeline) splits the world into P stages of s = world/P consecutive ranks
(`group stage = split(world, P)`); here P = 2. Every tensor lives in a stage: x : [B, S, H]
sliced(2) @stage, w : [H, H] sliced(0) @stage, bias : [H] and residual : [B, S, H] replicated
@stage (the same inside a stage, different between stages). Each stage computes
    h = dropout(allreduce_stage(x @ w) + bias, p, seed + stage.index) + residual
and `received = send(h, stage.next)`: the rank at position q of stage i receives h of the rank
at position q of stage (i - 1) mod P (cyclic). In world ranks: rank i*s + q sends to
((i+1) mod P)*s + q and receives from ((i-1) mod P)*s + q.

Rank g (stage i = g // s, position q = g % s) stores x[:, :, q*H/s:(q+1)*H/s] ([B, S, H/s]),
w[q*H/s:(q+1)*H/s, :] ([H/s, H]), bias [H], residual [B, S, H], and gets `received` [B, S, H].

Rows:
  eager                 one process group per stage (new_group), matmul, dist.all_reduce in the
                        stage, bias + dropout + residual, dist.batch_isend_irecv (isend to the
                        next stage, irecv from the previous) on the world group
  torch.compile         the same, the epilogue torch.compile'd
  coconetc              the sample with its schedule (reduce-scatter in the stage, epilogue on
                        slices, send of this rank's slice only, all-gather in the next stage)
  coconetc_overlap      pipeline_overlap.sched: as coconetc, and the matmul pipelined with the
                        reduce-scatter and the epilogue in 4 chunks of each rank's rows
  coconetc_overlap2     the same in 2 chunks
  coconetc_unscheduled  the sample without a schedule (allreduce, epilogue, send of the whole)
Shapes: 8192 tokens as B=32, S=256 (the schedule scatters dimension 0 over the stage), H 4096
and 8192, f16. Needs an even number of GPUs (2 stages; at 2 GPUs a stage is one GPU).
Dropout p = 0 in check mode (coconetc's masks differ from PyTorch's), 0.1 when timing.
"""
from __future__ import annotations

import math

from workloads import Row, compile_fn, headline as spec, program_row, scalar_values

NAME = "pipeline"
SOURCE = "samples/pipeline/pipeline.cnet"

PROGRAMS = {
    "pipeline": dict(source=SOURCE, schedule="samples/pipeline/pipeline.sched"),
    "pipeline_unscheduled": dict(source=SOURCE, schedule=None),
    "pipeline_overlap": dict(source=SOURCE, schedule="samples/pipeline/pipeline_overlap.sched"),
    "pipeline_overlap2": dict(source=SOURCE, schedule="samples/pipeline/pipeline.sched",
                              schedule_append="overlap(partial, f, chunks = 2);\n"),
}

STAGES = 2                    # the program's size P: the number of pipeline stages
TOKENS = 8192
TRAIN_B = 32
HS = (4096, 8192)
P_TIME = 0.1
SEED = 1234
EPS, RTOL = 2.0 ** -10, 2e-3  # f16


HEADLINE_PROGRAMS = ["pipeline"]


def headline(params: dict, world: int) -> dict:
    """Every config (two GPUs or more): against eager and torch.compile; the floor the matmul alone."""
    return spec(peers=["eager", "torch.compile"], floors=["matmul"], x=params.get("H"), x_label="hidden size H",
                targets=[("peer", ">=", 1.3, "speed-up >= 1.3")],
                limit="the matmul is most of the step; the reduce-scatter, epilogue and send follow it")


def configs(world: int, quick: bool) -> list[dict]:
    if world < STAGES or world % STAGES:
        return []
    s = world // STAGES
    B, S = TRAIN_B, TOKENS // TRAIN_B
    return [{"name": f"T={TOKENS} H={H} f16", "sizes": {"B": B, "S": S, "H": H, "P": STAGES},
             "B": B, "S": S, "T": TOKENS, "H": H, "dtype": "f16", "stages": STAGES,
             "x": TOKENS * H, "x_label": "tokens x hidden (elements of received)",
             "bytes": TOKENS * H * 2,                 # all-reduced and sent, per rank
             "flops": 2 * TOKENS * (H // s) * H}
            for H in ((4096,) if quick else HS) if H % s == 0]


# One process group per stage, made once per process: every rank makes all of them in the same
# order, as new_group requires. The peer rows share them.
_STAGE_GROUPS: dict = {}


def stage_group(dist, world: int, count: int):
    if (world, count) not in _STAGE_GROUPS:
        s, mine = world // count, None
        for i in range(count):
            g = dist.new_group(ranks=list(range(i * s, (i + 1) * s)))
            if dist.get_rank() // s == i:
                mine = g
        _STAGE_GROUPS[(world, count)] = mine
    return _STAGE_GROUPS[(world, count)]


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    sizes = dict(cfg["sizes"])
    B, S, H, count = sizes["B"], sizes["S"], sizes["H"], sizes["P"]
    world, rank = ctx.world, ctx.rank
    if world % count:
        raise ValueError(f"{world} ranks do not split into {count} stages")
    s = world // count
    stage, pos = rank // s, rank % s
    if H % s:
        raise ValueError(f"H={H} is not divisible by the stage size {s}")
    Hl = H // s
    to = ((stage + 1) % count) * s + pos                 # send(h, stage.next)
    frm = ((stage + count - 1) % count) * s + pos
    dt = torch.float16
    p = 0.0 if mode == "check" else P_TIME
    w_std = 1.0 / math.sqrt(H)
    tol = {"received": (RTOL, 16.0 * EPS * math.sqrt(H * w_std ** 2 + 1.0 + 1.0))}

    def inputs() -> dict:
        # replicated @stage: one seed for the ranks of a stage, another for the next stage
        return {"x": ctx.rand((B, S, Hl), dt, 21, False),
                "w": ctx.rand((Hl, H), dt, 22, False, scale=w_std),
                "bias": ctx.rand((H,), dt, 23 + 100 * stage, True),
                "residual": ctx.rand((B, S, H), dt, 24 + 100 * stage, True)}

    def epilogue(y, bias, residual):
        return F.dropout(y + bias, p=p, training=True) + residual

    def peer(epi, note) -> Row:
        sg = stage_group(dist, world, count)
        t = inputs()
        received = torch.empty((B, S, H), dtype=dt, device=ctx.device)

        def step():
            y = torch.matmul(t["x"], t["w"])              # partial sums inside the stage
            dist.all_reduce(y, group=sg)
            h = epi(y, t["bias"], t["residual"])
            for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, h, to),
                                               dist.P2POp(dist.irecv, received, frm)]):
                req.wait()

        return Row(step=step, outputs=lambda: {"received": received}, tol=tol, note=note)

    def eager() -> Row:
        return peer(epilogue, "matmul, all_reduce in the stage's group, bias + dropout + "
                              "residual, batch_isend_irecv to the next stage (eager)")

    def compiled() -> Row:
        torch._dynamo.reset()
        return peer(compile_fn(epilogue), "as eager, the epilogue torch.compile'd (mode max-autotune-no-cudagraphs)")

    def matmul() -> Row:
        t = inputs()
        return Row(step=lambda: torch.matmul(t["x"], t["w"]), outputs=lambda: {}, check=False,
                   note="floor: the local matmul alone (cuBLAS)")

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            t["received"] = torch.empty((B, S, H), dtype=dt, device=ctx.device)
            scalars = scalar_values(SOURCE, p=p, seed=SEED)
            return program_row(ctx, key, sizes, scalars, t, "received", tol, note, SEED)
        return make

    return [
        ("eager", eager),
        ("torch.compile", compiled),
        ("matmul", matmul),
        ("coconetc", coconetc("pipeline", "reduce-scatter, epilogue and send on slices, "
                                          "all-gather in the next stage")),
        ("coconetc_overlap", coconetc("pipeline_overlap", "as coconetc, the matmul pipelined with the "
                                                          "reduce-scatter and epilogue (4 chunks)")),
        ("coconetc_overlap2", coconetc("pipeline_overlap2", "as coconetc_overlap in 2 chunks")),
        ("coconetc_unscheduled", coconetc("pipeline_unscheduled",
                                          "no schedule: allreduce, epilogue, send of the whole")),
    ]
