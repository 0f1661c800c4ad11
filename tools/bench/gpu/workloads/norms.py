"""norms: layer norm, RMSNorm and softmax over the last dimension, alone, on one GPU.

The row-wise kernels that sequence-parallel layers run between the reduce-scatter and the
all-gather (tests/gpu/programs/seq_parallel), measured against PyTorch's own kernels.

Programs: tools/bench/programs/{layernorm,rmsnorm,softmax}.cnet over x : [T, H] replicated
(f16 as written; bf16 by substitution), with gamma (and beta) : [H] for the norms; eps 1e-5
(layernorm) and 1e-6 (rmsnorm).
Rows:
  eager            F.layer_norm / F.rms_norm (where PyTorch has it, else the formula in f32) /
                   torch.softmax: PyTorch's kernels; the reference
  torch.compile    the same function torch.compile'd (one Triton kernel)
  coconetc         the program: rows of up to 4096 packs of 16 bytes kept in registers as
                   stored by a group of threads (read once)
  coconetc_long    the program compiled with the tuning table's row_long = 1
                   (tests/gpu/tunings/row-long.json): one block a row, the row read twice
  (the packs a thread and streaming, row_max_packs and row_stream of the tuning table, are
  measured by coconetc tune: tools/tune/jobs.sh single)
Vocabulary rows (too long for registers): coconetc splits rows fewer than two blocks an SM over
blocks in parts (`_split_stats` + `_split_write`), else one block a row (`_long`), both in packs;
  coconetc_long    the program compiled with row_long = 1: one block a row, never split
  (how the split aims, row_split_min and row_split_blocks of the tuning table, is measured by
  coconetc tune: tools/tune/jobs.sh single)
Shapes: T = 8192 rows, H 1024, 4096, 8192 and 12288 in f16, H 4096 in bf16 (quick: H 4096, f16);
softmax over a vocabulary: T = 1, 8 and 64 rows of H = 131072 (decode) and T = 1024 (a training
step's logits, one block a row); layer norm and RMSNorm at T = 8 and 1024 rows of H = 65536 (f16;
not in quick). Rows too long for registers are marked `vocab` in their configs.
Inputs: x ~ N(0, 1) (softmax: N(0, 4), attention-like scores), gamma ~ 1 + N(0, 0.01),
beta ~ N(0, 0.01). Configs run at one rank only (the programs are replicated: more ranks would
compute the same rows on every GPU).
"""
from __future__ import annotations

from workloads import FASTER, GRAPH_MODE, REPO, Row, copy_row, function_row, graph_row, headline as spec, program_row

NAME = "norms"
OPS = ("layernorm", "rmsnorm", "softmax")
DTYPES = ("f16", "bf16")
# The row coconetc_long's build: every row kernel a block a row (the tuning table's row_long = 1).
ROW_LONG_TUNING = REPO / "tests/gpu/tunings/row-long.json"
PROGRAMS = {}
for _op in OPS:
    for _dt in DTYPES:
        PROGRAMS[f"{_op}_{_dt}"] = dict(source=f"tools/bench/programs/{_op}.cnet", schedule=None,
                                        replace={} if _dt == "f16" else {"f16[": "bf16["})
        PROGRAMS[f"{_op}_{_dt}_x_long"] = dict(PROGRAMS[f"{_op}_{_dt}"], flags=["--tuning", str(ROW_LONG_TUNING)])

T_ROWS = 8192
HS = (1024, 4096, 8192, 12288)
VOCAB, VOCAB_ROWS = 131072, (1, 8, 64, 1024)
# Layer norm and RMSNorm over rows too long for registers (a long-context or wide-model row):
# split over blocks at T = 8, one block a row at T = 1024.
LONG_H, LONG_ROWS = 65536, (8, 1024)
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}
# One f16 / bf16 rounding of outputs of magnitude up to ~4 (norms) or 1 (softmax), plus the
# peers' different summation orders.
TOL = {"f16": (4e-3, 4e-3), "bf16": (2e-2, 3e-2)}


def configs(world: int, quick: bool) -> list[dict]:
    if world != 1:
        return []
    out = []
    for op in OPS:
        for dt in (("f16",) if quick else DTYPES):
            for H in ((4096,) if quick or dt != "f16" else HS):
                out.append({"name": f"{op} T={T_ROWS} H={H} {dt}", "op": op, "dtype": dt, "T": T_ROWS, "H": H,
                            "sizes": {"T": T_ROWS, "H": H}, "x": H, "x_label": "row length H",
                            "bytes": 2 * T_ROWS * H * 2})   # read x once, write y once
    if not quick:
        for T in VOCAB_ROWS:
            out.append({"name": f"softmax T={T} H={VOCAB} f16", "op": "softmax", "dtype": "f16", "T": T, "H": VOCAB,
                        "sizes": {"T": T, "H": VOCAB}, "vocab": True, "bytes": 2 * T * VOCAB * 2})
        for op in ("layernorm", "rmsnorm"):
            for T in LONG_ROWS:
                out.append({"name": f"{op} T={T} H={LONG_H} f16", "op": op, "dtype": "f16", "T": T, "H": LONG_H,
                            "sizes": {"T": T, "H": LONG_H}, "vocab": True, "bytes": 2 * T * LONG_H * 2})
    return out


HEADLINE_PROGRAMS = ["layernorm_f16", "rmsnorm_f16", "softmax_f16"]
SMALL_BYTES = 32 << 20   # up to this many bytes moved eager PyTorch is also timed in a CUDA graph


HEADLINE_H = (1024, 4096, 12288)      # row lengths in the headline (8192 and bf16: developer runs)
HEADLINE_VOCAB_ROWS = (1, 1024)       # softmax over a vocabulary: decode and a training step's logits


def decode(params: dict) -> bool:
    """A decode-sized config: a few rows too long for registers (a vocabulary's logits)."""
    return bool(params.get("vocab")) and params.get("T", 0) <= 64


def headline(params: dict, world: int) -> dict | None:
    """The f16 configs at HEADLINE_H and the vocabulary softmax at HEADLINE_VOCAB_ROWS (bf16 rows
    run the same kernels; the others are developer runs): against PyTorch's kernel and
    torch.compile; small and decode sizes also against eager in a CUDA graph, decode sizes against
    torch.compile under CUDA graphs; the floor a copy of the bytes moved."""
    if world != 1 or params.get("dtype") != "f16" or params.get("H") not in HEADLINE_H + (VOCAB,):
        return None
    if params.get("vocab") and (params.get("H") != VOCAB or params.get("T") not in HEADLINE_VOCAB_ROWS):
        return None
    small = params.get("bytes", 0) <= SMALL_BYTES or decode(params)
    peers = ["eager", "torch.compile"] + (["eager_graph"] if small else []) + \
        (["torch.compile_graphs"] if decode(params) else [])
    op, T, H = params.get("op"), params.get("T"), params.get("H")
    plot = (dict(series=f"{op} over H = {H}", x=T, x_label="rows T") if params.get("vocab") else
            dict(series=f"{op}, T = {T}", x=H, x_label="row length H"))
    return spec(peers=peers, floors=["copy"], targets=[FASTER], **plot,
                limit="memory bandwidth: one read of x, one write of y (row statistics in registers)")


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.nn.functional as Fn

    op, T, H = cfg["op"], cfg["T"], cfg["H"]
    dt = torch.float16 if cfg["dtype"] == "f16" else torch.bfloat16
    tol = {"y": TOL[cfg["dtype"]]}
    key = f"{op}_{cfg['dtype']}"

    def inputs() -> dict:
        t = {"x": ctx.rand((T, H), dt, 41, True, scale=2.0 if op == "softmax" else 1.0)}
        if op != "softmax":
            t["gamma"] = (1.0 + ctx.rand((H,), torch.float32, 42, True, scale=0.1)).to(dt)
        if op == "layernorm":
            t["beta"] = ctx.rand((H,), dt, 43, True, scale=0.1)
        return t

    def rms_norm(x, g):
        if hasattr(Fn, "rms_norm"):
            return Fn.rms_norm(x, (H,), g, EPS["rmsnorm"])
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS["rmsnorm"]) * g.float()).to(x.dtype)

    def fn():
        if op == "layernorm":
            return lambda t: Fn.layer_norm(t["x"], (H,), t["gamma"], t["beta"], EPS["layernorm"])
        if op == "rmsnorm":
            return lambda t: rms_norm(t["x"], t["gamma"])
        return lambda t: torch.softmax(t["x"], dim=-1)

    names = {"layernorm": "F.layer_norm", "rmsnorm": "F.rms_norm" if hasattr(Fn, "rms_norm") else
             "x * rsqrt(mean(x^2) + eps) * gamma in f32", "softmax": "torch.softmax"}

    def peer(compiled) -> Row:
        return function_row(fn(), inputs(), compiled, tol,
                            f"{names[op]} torch.compile'd (mode {'reduce-overhead' if compiled == GRAPH_MODE else 'max-autotune-no-cudagraphs'})"
                            if compiled else f"{names[op]} (PyTorch's kernel)",
                            outputs=lambda y: {"y": y})

    def eager_graph() -> Row:
        return graph_row(ctx, peer(False), f"{names[op]} (PyTorch's kernel) captured in a CUDA graph")

    extra = [("eager_graph", eager_graph), ("torch.compile_graphs", lambda: peer(GRAPH_MODE)),
             ("copy", lambda: copy_row(ctx, cfg["bytes"], "x read, y written"))]

    def coconetc(program: str, note: str):
        def make() -> Row:
            t = inputs()
            t["y"] = torch.empty((T, H), dtype=dt, device=ctx.device)
            return program_row(ctx, program, cfg["sizes"], {}, t, "y", tol, note)
        return make

    long_row = ("coconetc_long", coconetc(f"{key}_x_long", "one block a row, read twice (the tuning table's row_long = 1)"))
    if cfg.get("vocab"):
        return [("eager", lambda: peer(False)), ("torch.compile", lambda: peer(True)),
                ("coconetc", coconetc(key, "rows too long for registers: split over blocks where few, else a block a row")),
                long_row] + extra
    return [("eager", lambda: peer(False)), ("torch.compile", lambda: peer(True)),
            ("coconetc", coconetc(key, "the row in registers, read once")), long_row] + extra
