"""megatron_row: a row-parallel linear layer with its bias-dropout-residual epilogue.

The program (samples/megatron_row): x : [B, S, H] sliced(2), w : [H, H] sliced(0), bias : [H] and
residual : [B, S, H] replicated; out = dropout(allreduce(x @ w) + bias, p) + residual, replicated.
So rank r stores x[:, :, r*H/P:(r+1)*H/P] ([B, S, H/P]) and w[r*H/P:(r+1)*H/P, :] ([H/P, H]);
every row computes the same `out` ([B, S, H], whole on every rank) from those blocks.

Rows:
  eager                 y = x_r @ w_r; dist.all_reduce(y); out = F.dropout(y + bias, p) + residual
  torch.compile         matmul + all_reduce as eager, the epilogue torch.compile'd
  async_tp              PyTorch's async tensor parallelism: symmetric-memory
                        torch.ops.symm_mem.fused_matmul_reduce_scatter (matmul pipelined with
                        the reduce-scatter over the tokens), the epilogue on this rank's tokens,
                        dist.all_gather_into_tensor. NVLink multicast stays off
                        (TORCH_SYMM_MEM_DISABLE_MULTICAST=1); the op does not use it.
  coconetc              the sample with its schedule (reduce-scatter, epilogue on slices and
                        all-gather fused, pipelined with the matmul in 4 chunks, fewer where a
                        chunk's copy to a peer would be under 8 MiB, one past 2 GPUs under 32 MiB
                        per peer: coconet_rt::mergedOverlapChunks), compiled as by default:
                        copy engines move each chunk's reduce-scatter into the
                        peers' staging windows while the next chunk's GEMM runs; a kernel over
                        NCCL's device API (128 blocks) sums and computes the epilogue, and the
                        all-gather follows, either per chunk (the kernel after the next chunk's
                        GEMM, copy engines pulling the peers' parts) or once after the last
                        chunk (the kernel pulls), chosen at run time by the GEMM's flops per
                        byte that crosses NVLink and the product's size. One chunk up to 512 KiB
                        of partial sums (8 MiB on 2 GPUs; decode shapes): the GEMM, then the group's one-shot
                        kernel (every rank pushes the whole product to every rank, one barrier,
                        every rank sums and computes every slice; nothing to gather)
  coconetc_two_shot     coconetc with tune(f, algorithm = two_shot): no one-shot form (one
                        chunk: the kernel pushes the slices, sums this rank's, publishes it,
                        pulls the others')
  coconetc_one_shot     coconetc with tune(f, algorithm = one_shot): the one-shot form at every
                        size where the overlap merges to one chunk (past the limit too)
  coconetc_ll           coconetc with tune(f, algorithm = ll): the one-shot form's LL form (lines
                        with flags, no barrier) wherever one chunk runs
  coconetc_ll128        the same with tune(f, algorithm = ll128): its LL128 form (128-byte lines)
  coconetc_nccl         the same compiled with --no-device-collectives (NCCL calls per chunk)
  coconetc_gather_after coconetc with tune(f, gather = after): always once after the last chunk
  coconetc_gather_pipelined  coconetc with tune(f, gather = pipelined): always per chunk
  coconetc_unscheduled  the sample without a schedule (matmul, allreduce, epilogue; the
                        allreduce a device-API kernel up to 16 MiB per rank, by copy engines
                        from 64 MiB on two ranks and 1 GiB on more, NCCL's between)
  coconetc_tail2        coconetc with tune(f, tail = 2): the last chunk in 2 pieces (GEMM,
                        copies, epilogue and pulls each), so that less is left after the last
                        GEMM (4 pieces were slower than 2 at every training shape)
  coconetc_copy_engines coconetc with tune(f, algorithm = copy_engines): where the all-gather
                        runs after the last chunk, the kernel leaves it to copy engines pulling
                        the other ranks' whole blocks
  coconetc_merge_never  coconetc with tune(f, merge = never): the overlap's 4 chunks at every
                        size (coconetc merges copy-engine chunks whose copy to a peer would be
                        under 8 MiB, and past 2 GPUs to one under 32 MiB per peer: 1 chunk at
                        H = 4096 on 4 GPUs, 1 at decode shapes)
  coconetc_chunks2      the sample's schedule with the matmul in 2 chunks
                        (tools/bench/programs/megatron_row_chunks2.sched): fewer, larger copies
  coconetc_allreduce_overlap  samples/megatron_row/megatron_row_allreduce.sched: the allreduce
                        kept whole, chunked with the matmul (4 chunks of rows), epilogue fused
  coconetc_fused        (f16) tools/bench/programs/megatron_row_fused.sched: fuse(y, out), no
                        overlap: the matmul, then the [allreduce, epilogue] group's kernel,
                        one-shot up to oneShotMaxBytes(P), else two-shot (the epilogue on each
                        rank's slice of the sums, `out` gathered)
  coconetc_fused_two_shot  (f16) the same with tune(f, algorithm = two_shot): the two-shot
                        kernel at every size
  coconetc_fused_two_shot_r1 / _r2 / _r4  (f16) the same in 1, 2, 4 pipelined rounds (tune(f,
                        chunks = R); by size otherwise: coconet_rt::devAutoRounds)
  coconetc_fused_two_shot_barriers  (f16) coconetc_fused_two_shot with tune(f, barriers =
                        split): each round's barrier in two phases around the pull (the
                        default, auto, keeps a light epilogue's barriers whole; Adam's kernel
                        splits them under 32 MiB per round: coconet_rt::devSplitBarriers)
  coconetc_unscheduled_two_shot  (f16) the program unscheduled but for tune(y, algorithm =
                        two_shot) (tools/bench/programs/megatron_row_allreduce_two_shot.sched):
                        the two-shot allreduce kernel at every size, then the epilogue's kernel
in f16 (the sample) and bf16 (the same source with f16 -> bf16).

Shapes. The tokens are B*S; [B, S, H] and [B*S, 1, H] are the same bytes. The reduce-scatter
needs B % world == 0, so 8192 training tokens run as B=32, S=256 and T decode tokens as B=T,
S=1; the schedule's overlap runs the most chunks up to 4 that divide a rank's B*S / world rows
(coconet_rt::overlapChunks). T=1 cannot meet B % world == 0 beyond one GPU: there the scheduled build
runs the program without its schedule (its megatron_row_unscheduled class, the code of the
unscheduled row; until 2026-11-27 it refused the shape). async_tp needs T % world == 0.

Inputs: x ~ N(0, 1), w ~ N(0, 1/H) (so x @ w ~ N(0, 1)), bias and residual ~ N(0, 1).
Dropout: coconetc's counter-based masks differ from PyTorch's, so check mode uses p = 0 and
time mode p = 0.1. Tolerance: rtol by dtype (f16 2e-3, bf16 1.6e-2), atol 16 units of
rounding at the typical magnitude of the values summed into `out`.
"""
from __future__ import annotations

import math
import os

from workloads import (FASTER, GRAPH_MODE, Row, compile_fn, graph_row, headline as spec, program_row, scalar_values,
                       static_inputs)

NAME = "megatron_row"
SOURCE = "samples/megatron_row/megatron_row.cnet"
SCHEDULE = "samples/megatron_row/megatron_row.sched"
SCHEDULE_AR = "samples/megatron_row/megatron_row_allreduce.sched"
TAILS = (2,)  # tune(f, tail = ...) pieces of the last chunk tried
SCHEDULE_2 = "tools/bench/programs/megatron_row_chunks2.sched"  # the sample's schedule in 2 chunks
SCHEDULE_FUSED = "tools/bench/programs/megatron_row_fused.sched"  # fuse(y, out), no overlap
FUSED_ROUNDS = (1, 2, 4)  # the group's two-shot kernel in these rounds (tune(f, rounds = R))
SCHEDULE_AR2 = "tools/bench/programs/megatron_row_allreduce_two_shot.sched"  # unscheduled, two-shot allreduce

NCCL_ONLY = ["--no-device-collectives"]
GATHER = ("after", "pipelined")  # tune(f, gather = ...) forms tried besides the run-time choice

PROGRAMS = {
    "megatron_row": dict(source=SOURCE, schedule=SCHEDULE),
    "megatron_row_unscheduled": dict(source=SOURCE, schedule=None),
    "megatron_row_bf16": dict(source=SOURCE, schedule=SCHEDULE, replace={"f16": "bf16"}),
    "megatron_row_bf16_unscheduled": dict(source=SOURCE, schedule=None, replace={"f16": "bf16"}),
    "megatron_row_ar": dict(source=SOURCE, schedule=SCHEDULE_AR),
    "megatron_row_nccl": dict(source=SOURCE, schedule=SCHEDULE, flags=NCCL_ONLY),
    "megatron_row_bf16_nccl": dict(source=SOURCE, schedule=SCHEDULE, replace={"f16": "bf16"}, flags=NCCL_ONLY),
    **{f"megatron_row{d}_{g}": dict(source=SOURCE, schedule=SCHEDULE,
                                    schedule_append=f"tune(f, gather = {g});\n",
                                    **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16") for g in GATHER},
    "megatron_row_bf16_ar": dict(source=SOURCE, schedule=SCHEDULE_AR, replace={"f16": "bf16"}),
    **{f"megatron_row{d}_tail{t}": dict(source=SOURCE, schedule=SCHEDULE,
                                        schedule_append=f"tune(f, tail = {t});\n",
                                        **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16") for t in TAILS},
    **{f"megatron_row{d}_ce": dict(source=SOURCE, schedule=SCHEDULE,
                                   schedule_append="tune(f, algorithm = copy_engines);\n",
                                   **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    **{f"megatron_row{d}_two_shot": dict(source=SOURCE, schedule=SCHEDULE,
                                         schedule_append="tune(f, algorithm = two_shot);\n",
                                         **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    **{f"megatron_row{d}_one_shot": dict(source=SOURCE, schedule=SCHEDULE,
                                         schedule_append="tune(f, algorithm = one_shot);\n",
                                         **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    **{f"megatron_row{d}_ll": dict(source=SOURCE, schedule=SCHEDULE,
                                   schedule_append="tune(f, algorithm = ll);\n",
                                   **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    **{f"megatron_row{d}_ll128": dict(source=SOURCE, schedule=SCHEDULE,
                                      schedule_append="tune(f, algorithm = ll128);\n",
                                      **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    **{f"megatron_row{d}_never": dict(source=SOURCE, schedule=SCHEDULE,
                                      schedule_append="tune(f, merge = never);\n",
                                      **({"replace": {"f16": "bf16"}} if d else {}))
       for d in ("", "_bf16")},
    "megatron_row_chunks2": dict(source=SOURCE, schedule=SCHEDULE_2),
    "megatron_row_fused": dict(source=SOURCE, schedule=SCHEDULE_FUSED),
    "megatron_row_unscheduled_two_shot": dict(source=SOURCE, schedule=SCHEDULE_AR2),
    "megatron_row_fused_two_shot": dict(source=SOURCE, schedule=SCHEDULE_FUSED,
                                        schedule_append="tune(f, algorithm = two_shot);\n"),
    **{f"megatron_row_fused_two_shot_r{r}": dict(source=SOURCE, schedule=SCHEDULE_FUSED,
                                                 schedule_append=f"tune(f, algorithm = two_shot, rounds = {r});\n")
       for r in FUSED_ROUNDS},
    "megatron_row_fused_two_shot_barriers": dict(source=SOURCE, schedule=SCHEDULE_FUSED,
                                                 schedule_append="tune(f, algorithm = two_shot, barriers = split);\n"),
    "megatron_row_bf16_chunks2": dict(source=SOURCE, schedule=SCHEDULE_2, replace={"f16": "bf16"}),
}
# Program keys by dtype: (scheduled, unscheduled, the allreduce-overlap schedule).
KEYS = {"f16": ("megatron_row", "megatron_row_unscheduled", "megatron_row_ar"),
        "bf16": ("megatron_row_bf16", "megatron_row_bf16_unscheduled", "megatron_row_bf16_ar")}

TOKENS = 8192                 # B*S of the training shapes
TRAIN_B = 32                  # B (a multiple of world up to 32 GPUs); S = TOKENS / TRAIN_B
TRAIN_H = (4096, 8192, 12288)
DECODE_TOKENS = (1, 8, 64)
# MEGATRON_DECODE_TOKENS="1,8,64,128,256" (developer option) replaces DECODE_TOKENS, e.g. to
# time the one-shot form's limit past the decode shapes the targets name.
DECODE_TOKENS_ENV = "MEGATRON_DECODE_TOKENS"
DECODE_H = (4096,)
DTYPES = ("f16", "bf16")
P_TIME = 0.1                  # dropout probability when timing (check mode: 0)
SEED = 1234                   # the program's dropout seed (and the run seed)

EPS = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}
RTOL = {"f16": 2e-3, "bf16": 1.6e-2}


def _config(kind: str, B: int, S: int, H: int, dtype: str, world: int) -> dict:
    T = B * S
    return {"name": f"{kind} T={T} H={H} {dtype}", "kind": kind,
            "sizes": {"B": B, "S": S, "H": H}, "B": B, "S": S, "T": T, "H": H, "dtype": dtype,
            "x": T * H, "x_label": "tokens x hidden (elements of out)",
            "bytes": T * H * 2,                        # the all-reduce's payload per rank
            "flops": 2 * T * (H // world) * H}         # the local GEMM, per rank


def decode_tokens() -> tuple[int, ...]:
    text = os.environ.get(DECODE_TOKENS_ENV, "").strip()
    if not text:
        return DECODE_TOKENS
    try:
        tokens = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise ValueError(f"{DECODE_TOKENS_ENV}={text!r}: expected positive integers separated by commas") from None
    if not tokens or any(t < 1 for t in tokens):
        raise ValueError(f"{DECODE_TOKENS_ENV}={text!r}: expected positive integers separated by commas")
    return tokens


def configs(world: int, quick: bool) -> list[dict]:
    train = [(4096, "f16")] if quick else [(h, d) for d in DTYPES for h in TRAIN_H]
    decode = ([(64, 4096, "f16")] if quick else
              [(t, h, d) for d in DTYPES for h in DECODE_H for t in decode_tokens()])
    out = [_config("train", TRAIN_B, TOKENS // TRAIN_B, H, d, world)
           for H, d in train if H % world == 0]
    out += [_config("decode", T, 1, H, d, world) for T, H, d in decode if H % world == 0]
    return out


HEADLINE_PROGRAMS = ["megatron_row", "megatron_row_bf16"]


def headline(params: dict, world: int) -> dict | None:
    """On several GPUs every config, against eager, torch.compile, async TP (training shapes) and,
    at decode shapes, eager and torch.compile under CUDA graphs; the floor the larger of the matmul
    alone and NCCL's all-reduce of its product. On one GPU (no collective: the matmul and the
    epilogue) one training shape and one decode shape in f16."""
    kind, T, H, dt = params.get("kind"), params.get("T"), params.get("H"), params.get("dtype")
    if world == 1 and not ((kind == "train" and H == 8192 and dt == "f16") or
                           (kind == "decode" and T == 8 and H == 4096 and dt == "f16")):
        return None
    peers = ["eager", "torch.compile"]
    if world > 1 and kind == "train":
        peers.append("async_tp")
    if kind == "decode":
        peers += ["eager_graph", "torch.compile_graphs"]
    floors = ["matmul"] + (["nccl_allreduce"] if world > 1 else [])
    plot = (dict(series=f"decode {dt}, H = {H}", x=T, x_label="tokens") if kind == "decode" else
            dict(series=f"train {dt}, T = {T}", x=H, x_label="hidden size H"))
    return spec(peers=peers, floors=floors, floor_rule="max", targets=[FASTER], **plot,
                limit=("one GPU: the decode step costs several times the matmul alone, which 2 and 4 "
                       "GPUs do not show; not yet explained" if kind == "decode" and world == 1 else
                       "at decode sizes the step is a few microseconds of launches and barriers"
                       if kind == "decode" else
                       "the epilogue and all-gather of the last chunk run after the last GEMM; "
                       "async TP pipelines the matmul with its reduce-scatter as finely" if world > 1 else
                       "the GEMM (cuBLAS) sets the time; the epilogue is a second pass over the product"))


def post_check(cfg: dict, ctx, out: dict, ref: dict, tol: dict, mode: str) -> tuple[int, str] | None:
    """The check after the timed steps, which ran with dropout p = P_TIME: coconetc's masks are
    not PyTorch's, so each element must be either dropped (out = residual) or kept and rescaled
    (out = (ref - residual) / (1 - p) + residual, ref the check's p = 0 result), within the
    tolerance, and the dropped fraction must be p within 6 standard deviations. Returns (elements
    wrong, what was found); None where the time mode has no dropout (the plain comparison)."""
    if P_TIME == 0.0 or mode != "time":
        return None
    import torch
    B, S, H = cfg["sizes"]["B"], cfg["sizes"]["S"], cfg["sizes"]["H"]
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[cfg["dtype"]]
    res = ctx.rand((B, S, H), dt, 14, True).float()
    o, r0 = out["out"].float(), ref["out"].float()
    rtol, atol = tol["out"]
    kept = (r0 - res) / (1.0 - P_TIME) + res
    ok_kept = (o - kept).abs() <= atol / (1.0 - P_TIME) + rtol * kept.abs()
    ok_drop = (o - res).abs() <= atol + rtol * res.abs()
    bad = int((~(ok_kept | ok_drop)).sum().item())
    distinct = ok_kept ^ ok_drop
    n = int(distinct.sum().item())
    dropped = int((ok_drop & ~ok_kept).sum().item())
    frac = dropped / max(n, 1)
    sigma = math.sqrt(P_TIME * (1.0 - P_TIME) / max(n, 1))
    off = n > 0 and abs(frac - P_TIME) > 6.0 * sigma + 1e-3
    return bad + (1 if off else 0), (f"p = {P_TIME}: {bad} elements neither dropped nor kept; dropped "
                                     f"{frac:.4f} of {n} distinguishable elements")


def tolerance(dtype: str, magnitude: float) -> tuple[float, float]:
    """(rtol, atol): rtol by dtype; atol 16 units of rounding at `magnitude`, the typical size
    of the values summed into the output (sqrt(K)*|x||w| of the GEMM, bias, residual)."""
    return RTOL[dtype], 16.0 * EPS[dtype] * magnitude


def torch_version(torch) -> tuple[int, int]:
    try:
        major, minor = torch.__version__.split("+")[0].split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return 0, 0


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    sizes = dict(cfg["sizes"])
    B, S, H = sizes["B"], sizes["S"], sizes["H"]
    P, dtn = ctx.world, cfg["dtype"]
    if H % P:
        raise ValueError(f"H={H} is not divisible by {P} ranks")
    Hl, M = H // P, B * S
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtn]
    p = 0.0 if mode == "check" else P_TIME
    w_std = 1.0 / math.sqrt(H)
    tol = {"out": tolerance(dtn, math.sqrt(H * w_std ** 2 + 1.0 + 1.0))}
    group = ctx.group

    def inputs() -> dict:
        """This rank's storage: its block of x's features and of w's rows; bias, residual whole."""
        return {"x": ctx.rand((B, S, Hl), dt, 11, False),
                "w": ctx.rand((Hl, H), dt, 12, False, scale=w_std),
                "bias": ctx.rand((H,), dt, 13, True),
                "residual": ctx.rand((B, S, H), dt, 14, True)}

    def epilogue(y, bias, residual):
        return F.dropout(y + bias, p=p, training=True) + residual

    def peer(epi, note) -> Row:
        t = inputs()
        st = {}

        def step():
            y = torch.matmul(t["x"], t["w"])          # this rank's partial sums [B, S, H]
            dist.all_reduce(y, group=group)
            st["out"] = epi(y, t["bias"], t["residual"])

        return Row(step=step, outputs=lambda: {"out": st["out"]}, tol=tol, note=note)

    def eager() -> Row:
        return peer(epilogue, "matmul, NCCL all_reduce, bias + dropout + residual (eager)")

    def compiled(mode=None) -> Row:
        """torch.compile of the whole step (max-autotune-no-cudagraphs, or `mode`): on one GPU the
        matmul and the epilogue in one graph (Inductor may fuse the epilogue into its GEMM), on
        several the matmul and the epilogue compiled around NCCL's all_reduce."""
        torch._dynamo.reset()
        t = inputs()
        st = {}
        graphs = mode == GRAPH_MODE
        mark = torch.compiler.cudagraph_mark_step_begin if graphs else (lambda: None)
        if graphs:
            static_inputs(t)
        if P == 1:
            f = compile_fn(lambda x, w, b, r: epilogue(torch.matmul(x, w), b, r), mode or "max-autotune-no-cudagraphs")

            def step():
                mark()
                st["out"] = f(t["x"], t["w"], t["bias"], t["residual"])
        else:
            mm = compile_fn(lambda x, w: torch.matmul(x, w), mode or "max-autotune-no-cudagraphs")
            epi = compile_fn(epilogue, mode or "max-autotune-no-cudagraphs")

            def step():
                mark()
                y = mm(t["x"], t["w"]).clone() if graphs else mm(t["x"], t["w"])
                dist.all_reduce(y, group=group)
                st["out"] = epi(y, t["bias"], t["residual"])
        return Row(step=step, outputs=lambda: {"out": st["out"]}, tol=tol, graph=graphs,
                   note=f"torch.compile (mode {mode or 'max-autotune-no-cudagraphs'}) of the matmul and the "
                        f"epilogue" + (" in one graph" if P == 1 else ", NCCL all_reduce between"))

    def matmul() -> Row:
        t = inputs()
        return Row(step=lambda: torch.matmul(t["x"], t["w"]), outputs=lambda: {}, check=False,
                   note="floor: the local matmul alone (cuBLAS)")

    def allreduce() -> Row:
        y = torch.matmul(*(lambda t: (t["x"], t["w"]))(inputs()))
        return Row(step=lambda: dist.all_reduce(y, group=group), outputs=lambda: {}, check=False,
                   note="floor: NCCL's all_reduce of the matmul's product alone")

    def async_tp() -> Row:
        import os
        import warnings
        # Multicast must stay off on these machines (a program that uses it can take the
        # host's GPUs out of service); fused_matmul_reduce_scatter does not need it.
        os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
        import torch.distributed._symmetric_memory as symm_mem
        if M % P:
            raise RuntimeError(f"async_tp: fused_matmul_reduce_scatter scatters the {M} tokens "
                               f"over {P} ranks, which needs B*S % world == 0")
        g = group if group is not None else dist.group.WORLD
        gname = g.group_name
        if torch_version(torch) < (2, 11):
            # Before 2.11 a group must be enabled for symmetric memory; 2.11 deprecated the call
            # (groups are resolved by name).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                symm_mem.enable_symm_mem_for_group(gname)
        r = dist.get_rank(g)
        t = inputs()
        A = t["x"].view(M, Hl)
        res_shard = t["residual"].view(M, H)[r * (M // P):(r + 1) * (M // P)]
        out = torch.empty((B, S, H), dtype=dt, device=ctx.device)
        out2d = out.view(M, H)

        def step():
            shard = torch.ops.symm_mem.fused_matmul_reduce_scatter(A, t["w"], "sum", 0, gname)
            o = epilogue(shard, t["bias"], res_shard)      # [M/P, H]: this rank's tokens
            dist.all_gather_into_tensor(out2d, o, group=g)

        return Row(step=step, outputs=lambda: {"out": out}, tol=tol,
                   note="PyTorch async TP: symm_mem.fused_matmul_reduce_scatter, epilogue on "
                        "this rank's tokens, all_gather_into_tensor (multicast off)")

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            t["out"] = torch.empty((B, S, H), dtype=dt, device=ctx.device)
            scalars = scalar_values(SOURCE, p=p, seed=SEED)
            return program_row(ctx, key, sizes, scalars, t, "out", tol, note, SEED)
        return make

    sched, unsched, ar = KEYS[dtn]
    return [
        ("eager", eager),
        ("torch.compile", compiled),
        ("eager_graph", lambda: graph_row(ctx, eager(), "eager captured in a CUDA graph")),
        ("torch.compile_graphs", lambda: compiled(GRAPH_MODE)),
        ("matmul", matmul),
        ("nccl_allreduce", allreduce),
        ("async_tp", async_tp),
        ("coconetc", coconetc(sched, "reduce-scatter + epilogue + all-gather fused, pipelined "
                                     "with the matmul (4 chunks, fewer where a chunk's copy to a peer is "
                                     "under 8 MiB, one past 2 GPUs under 32 MiB per peer): each chunk's reduce-scatter by copy engines; "
                                     "the epilogue (device-API kernel, 128 blocks) and all-gather per chunk or "
                                     "once at the end, chosen at run time")),
        ("coconetc_two_shot", coconetc(f"{sched}_two_shot", "as coconetc with tune(f, algorithm = two_shot): "
                                                            "no one-shot form at decode sizes")),
        ("coconetc_one_shot", coconetc(f"{sched}_one_shot", "as coconetc with tune(f, algorithm = one_shot): "
                                                            "the one-shot form wherever one chunk runs, past the limit too")),
        ("coconetc_ll", coconetc(f"{sched}_ll", "as coconetc with tune(f, algorithm = ll): the one-shot "
                                                "form's LL form (flags in the data, no barrier) wherever one chunk runs")),
        ("coconetc_ll128", coconetc(f"{sched}_ll128", "as coconetc with tune(f, algorithm = ll128): the "
                                                      "one-shot form's LL128 form (128-byte lines) wherever one chunk runs")),
        ("coconetc_merge_never", coconetc(f"{sched}_never", "as coconetc with tune(f, merge = never): "
                                                            "4 chunks at every size")),
        ("coconetc_nccl", coconetc(f"{sched}_nccl", "as coconetc, compiled with --no-device-collectives: "
                                                    "NCCL reduce-scatter, epilogue kernel, NCCL all-gather per chunk")),
        *[(f"coconetc_gather_{g}", coconetc(f"{sched}_{g}", f"as coconetc with tune(f, gather = {g})"))
          for g in GATHER],
        *[(f"coconetc_tail{t}", coconetc(f"{sched}_tail{t}", f"as coconetc with tune(f, tail = {t}): the last "
                                                              f"chunk in {t} pieces"))
          for t in TAILS],
        ("coconetc_copy_engines", coconetc(f"{sched}_ce", "as coconetc with tune(f, algorithm = copy_engines): "
                                                          "after the last chunk, copy engines pull the blocks")),
        ("coconetc_chunks2", coconetc(f"{sched}_chunks2", "the schedule with the matmul in 2 chunks "
                                                          "(tools/bench/programs/megatron_row_chunks2.sched)")),
        ("coconetc_unscheduled", coconetc(unsched, "no schedule: matmul, allreduce, epilogue")),
        # (f16 only)
        *([("coconetc_fused", coconetc("megatron_row_fused", "fuse(y, out), no overlap: matmul, then the "
                                                             "[allreduce, epilogue] group's kernel (one-shot "
                                                             "by size, else two-shot)")),
           ("coconetc_fused_two_shot", coconetc("megatron_row_fused_two_shot",
                                                "fuse(y, out) with tune(f, algorithm = two_shot): the "
                                                "group's two-shot kernel (epilogue on each rank's "
                                                "slice, out gathered) at every size")),
           *[(f"coconetc_fused_two_shot_r{r}", coconetc(f"megatron_row_fused_two_shot_r{r}",
                                                         f"fuse(y, out) two-shot in {r} rounds (tune(f, "
                                                         f"algorithm = two_shot, chunks = {r}))"))
             for r in FUSED_ROUNDS],
           ("coconetc_fused_two_shot_barriers", coconetc("megatron_row_fused_two_shot_barriers",
                                                         "coconetc_fused_two_shot with tune(f, barriers = "
                                                         "split): each round's barrier in two phases "
                                                         "around the pull")),
           ("coconetc_unscheduled_two_shot", coconetc("megatron_row_unscheduled_two_shot",
                                                      "no schedule but tune(y, algorithm = two_shot): the "
                                                      "two-shot allreduce kernel, then the epilogue's"))] if dtn == "f16" else []),
        ("coconetc_allreduce_overlap", coconetc(ar, "allreduce + epilogue fused, pipelined with the "
                                                     "matmul (4 chunks of rows): megatron_row_allreduce.sched")),
    ]
