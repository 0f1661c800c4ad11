"""dlrm_embedding: model-parallel embedding lookup, pooling and all-to-all (DLRM's sparse path).

The program (samples/dlrm_embedding): table : [R, D] f32 local (this rank's T tables, one after
another), idx : [B, T, L] i64 local (this rank's lookups for every sample of the global batch);
    pooled = sum(embedding(table, idx), dim = 2)     [B, T, D] local
    out = all_to_all(pooled)                          [B, T, D] local
Block j of dimension 0 (B/P samples) goes to rank j; block i of a rank's `out` is rank i's
tables for this rank's samples. Every tensor is stored whole on its rank, with its own values.

Rows:
  unfused               F.embedding (materializes [B, T, L, D]), sum over L, all_to_all_single
  embedding_bag         F.embedding_bag(mode="sum") (DLRM's EmbeddingBag: no [B, T, L, D]
                        intermediate), all_to_all_single: the stronger PyTorch peer
  coconetc              the sample with its schedule (pooling fused with the all-to-all,
                        pipelined with the lookup)
  coconetc_unscheduled  the sample without a schedule (its all_to_all one device kernel where
                        every rank is load/store reachable)
  coconetc_unscheduled_nccl  the same compiled with --no-device-collectives (NCCL send/recv pairs)
Shape (DLRM-like): B = 8192 global batch, T = 8 tables per rank, L = 32 lookups, R = 100000
rows, D = 128, f32. The table ~ N(0, 1); indices uniform in [0, R), drawn per rank (no skew).
"""
from __future__ import annotations

from workloads import FIFTH_LESS, Row, compile_fn, copy_row, headline as spec, program_row

NAME = "dlrm_embedding"
SOURCE = "samples/dlrm_embedding/dlrm_embedding.cnet"

PROGRAMS = {
    "dlrm_embedding": dict(source=SOURCE, schedule="samples/dlrm_embedding/dlrm_embedding.sched"),
    "dlrm_embedding_unscheduled": dict(source=SOURCE, schedule=None),
    "dlrm_embedding_unscheduled_nccl": dict(source=SOURCE, schedule=None, flags=["--no-device-collectives"]),
}

B_GLOBAL, TABLES, LOOKUPS, ROWS, DIM = 8192, 8, 32, 100000, 128
IDX_SEED = 41


def configs(world: int, quick: bool) -> list[dict]:
    if B_GLOBAL % (2 * world):      # the schedule's overlap cuts B into 2 chunks per rank
        return []
    B, T, L, R, D = B_GLOBAL, TABLES, LOOKUPS, ROWS, DIM
    return [{"name": f"B={B} T={T} L={L} R={R} D={D} f32",
             "sizes": {"B": B, "T": T, "L": L, "R": R, "D": D},
             "batch": B, "tables": T, "lookups": L, "rows": R, "D": D, "dtype": "f32",
             "x": B, "x_label": "global batch",
             "bytes": B * T * D * 4,                  # the all-to-all's payload per rank
             "gather_bytes": B * T * L * D * 4}]      # table rows read per rank and step


HEADLINE_PROGRAMS = ["dlrm_embedding"]


def headline(params: dict, world: int) -> dict:
    """The one config: against F.embedding + sum, F.embedding_bag (DLRM's EmbeddingBag) and
    torch.compile of the lookup and sum, each followed by all_to_all_single; the floor the table
    rows' bytes read (a copy of as many bytes moved) and, on several GPUs, the larger of it and
    NCCL's all-to-all alone."""
    return spec(peers=["unfused", "embedding_bag", "torch.compile"],
                floors=["copy"] + (["nccl_all_to_all"] if world > 1 else []), floor_rule="max",
                targets=[FIFTH_LESS], x=params.get("batch"), x_label="global batch",
                limit="the gather of the table rows (random 512-byte rows from HBM): coconetc's "
                      "lookup-and-pool kernel reads them at embedding_bag's pace, Inductor's fused "
                      "gather-and-sum faster; the all-to-all is a small part")


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    sizes = dict(cfg["sizes"])
    B, T, L, R, D = (sizes[k] for k in ("B", "T", "L", "R", "D"))
    P = ctx.world
    if B % P:
        raise ValueError(f"B={B} is not divisible by {P} ranks")
    group = ctx.group
    # Pooled values are f32 sums of L N(0, 1) entries; another summation order may differ by up
    # to L u sum|x_i| (u = 2^-24, sum|x_i| ~ 0.8 L): atol 2 L^2 u.
    tol = {"out": (1e-5, 2.0 * L * L * 2.0 ** -24)}

    def inputs() -> dict:
        table = ctx.rand((R, D), torch.float32, 42, False)
        gen = torch.Generator(device=ctx.device)      # this rank's own indices, every row alike
        gen.manual_seed(IDX_SEED * 1000003 + 7919 * (ctx.rank + 1))
        idx = torch.randint(0, R, (B, T, L), generator=gen, device=ctx.device, dtype=torch.int64)
        return {"table": table, "idx": idx}

    def unfused() -> Row:
        t = inputs()
        out = torch.empty((B, T, D), dtype=torch.float32, device=ctx.device)

        def step():
            pooled = F.embedding(t["idx"], t["table"]).sum(dim=2)      # [B, T, L, D] -> [B, T, D]
            dist.all_to_all_single(out, pooled, group=group)

        return Row(step=step, outputs=lambda: {"out": out}, tol=tol,
                   note="F.embedding ([B,T,L,D] materialized), sum over L, all_to_all_single")

    def embedding_bag() -> Row:
        t = inputs()
        out = torch.empty((B, T, D), dtype=torch.float32, device=ctx.device)
        bags = t["idx"].view(B * T, L)

        def step():
            pooled = F.embedding_bag(bags, t["table"], mode="sum")     # [B*T, D]
            dist.all_to_all_single(out.view(B * T, D), pooled, group=group)

        return Row(step=step, outputs=lambda: {"out": out}, tol=tol,
                   note="F.embedding_bag(mode='sum') (DLRM's EmbeddingBag), all_to_all_single")

    def compiled() -> Row:
        torch._dynamo.reset()
        t = inputs()
        out = torch.empty((B, T, D), dtype=torch.float32, device=ctx.device)
        pool = compile_fn(lambda idx, table: F.embedding(idx, table).sum(dim=2))

        def step():
            dist.all_to_all_single(out, pool(t["idx"], t["table"]), group=group)

        return Row(step=step, outputs=lambda: {"out": out}, tol=tol,
                   note="F.embedding + sum over L torch.compile'd (mode max-autotune-no-cudagraphs), "
                        "all_to_all_single")

    def all_to_all() -> Row:
        src = ctx.rand((B, T, D), torch.float32, 43, False)
        dst = torch.empty_like(src)
        return Row(step=lambda: dist.all_to_all_single(dst, src, group=group), outputs=lambda: {},
                   check=False, note="floor: NCCL's all_to_all_single of the pooled rows alone")

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            t["out"] = torch.empty((B, T, D), dtype=torch.float32, device=ctx.device)
            return program_row(ctx, key, sizes, {}, t, "out", tol, note)
        return make

    return [
        ("unfused", unfused),
        ("embedding_bag", embedding_bag),
        ("torch.compile", compiled),
        ("copy", lambda: copy_row(ctx, cfg["gather_bytes"] + cfg["bytes"], "table rows read, pooled rows written")),
        ("nccl_all_to_all", all_to_all),
        ("coconetc", coconetc("dlrm_embedding", "pooling + all-to-all one kernel, pipelined "
                                                "with the lookup")),
        ("coconetc_unscheduled", coconetc("dlrm_embedding_unscheduled",
                                          "no schedule: embedding, sum, all_to_all (device kernel)")),
        ("coconetc_unscheduled_nccl", coconetc("dlrm_embedding_unscheduled_nccl",
                                               "no schedule, --no-device-collectives: the all_to_all by NCCL")),
    ]
