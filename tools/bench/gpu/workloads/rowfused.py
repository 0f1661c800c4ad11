"""rowfused: normalizations written out with keepdim reductions, fused into row kernels, on one GPU.

What a user writes when the normalization is not a built-in one (a residual add before the
layer norm, a scaled softmax, RMSNorm by hand): element-wise statements and reductions over the
last dimension. Fused (`fuse` over the statements), the CUDA backend runs them as one row
kernel (docs/language.md, section 19); unscheduled, as a kernel a stage.

Programs: tools/bench/programs/{add_layernorm,scaled_softmax,rms_hand}.cnet over [T, H] f16,
each with its .sched (one fused group) and without (`--schedule none`).
Rows:
  eager            the same statements in PyTorch (f32 arithmetic on the f16 inputs): a kernel
                   an operation; the reference
  eager_fused      PyTorch's own fused kernel for the same result where it has one
                   (F.layer_norm after the add, torch.softmax of the scaled scores,
                   F.rms_norm)
  torch.compile    the written-out statements torch.compile'd (Inductor fuses them)
  coconetc         the program with its schedule: one row kernel
  coconetc_unfused the program without its schedule: a kernel a stage (reductions computing
                   the element-wise stages that only they read)
Shapes: T = 8192 rows, H 1024, 4096, 8192 and 12288 (quick: H 4096). Inputs ~ N(0, 1) (scores
N(0, 4)), gamma ~ 1 + N(0, 0.01), beta ~ N(0, 0.01). One rank only (replicated programs).
"""
from __future__ import annotations

from workloads import FASTER, Row, copy_row, function_row, graph_row, headline as spec, program_row, scalar_values

NAME = "rowfused"
OPS = ("add_layernorm", "scaled_softmax", "rms_hand")
PROGRAMS = {}
for _op in OPS:
    PROGRAMS[_op] = dict(source=f"tools/bench/programs/{_op}.cnet", schedule=f"tools/bench/programs/{_op}.sched", replace={})
    PROGRAMS[_op + "_unfused"] = dict(source=f"tools/bench/programs/{_op}.cnet", schedule=None, replace={})

T_ROWS = 8192
HS = (1024, 4096, 8192, 12288)
# One f16 rounding of outputs of magnitude up to ~4, plus the peers' summation orders.
TOL = (4e-3, 4e-3)


def configs(world: int, quick: bool) -> list[dict]:
    if world != 1:
        return []
    out = []
    for op in OPS:
        moved = {"add_layernorm": 4 * 2, "scaled_softmax": 2 * 2, "rms_hand": 2 * 2}[op]   # bytes an element: read and written
        for H in ((4096,) if quick else HS):
            out.append({"name": f"{op} T={T_ROWS} H={H} f16", "op": op, "T": T_ROWS, "H": H, "dtype": "f16",
                        "sizes": {"T": T_ROWS, "H": H}, "x": H, "x_label": "row length H", "bytes": moved * T_ROWS * H})
    return out


HEADLINE_PROGRAMS = list(OPS)
SMALL_BYTES = 32 << 20   # up to this many bytes moved eager PyTorch is also timed in a CUDA graph


def headline(params: dict, world: int) -> dict | None:
    """The configs at H = 1024, 4096, 12288 (8192: developer runs): against the statements in PyTorch, PyTorch's own fused kernel and the
    statements torch.compile'd; small sizes also against eager in a CUDA graph; the floor a copy
    of the bytes moved."""
    if world != 1 or params.get("H") not in (1024, 4096, 12288):
        return None
    peers = ["eager", "eager_fused", "torch.compile"] + (["eager_graph"] if params.get("bytes", 0) <= SMALL_BYTES else [])
    return spec(peers=peers, floors=["copy"], targets=[FASTER],
                series=f"{params.get('op')}, T = {params.get('T')}", x=params.get("H"), x_label="row length H",
                limit="memory bandwidth: each input read once, each output written once; the row "
                      "kernel's passes over registers against Inductor's over L2")


def rows(cfg: dict, ctx, mode: str):
    import torch
    import torch.nn.functional as Fn

    op, T, H = cfg["op"], cfg["T"], cfg["H"]
    dt = torch.float16
    scale = scalar_values(PROGRAMS["scaled_softmax"]["source"])["scale"]
    outs = {"add_layernorm": ("y", "hs"), "scaled_softmax": ("y",), "rms_hand": ("y",)}[op]
    tol = {o: TOL for o in outs}

    def inputs() -> dict:
        if op == "scaled_softmax":
            return {"s": ctx.rand((T, H), dt, 51, True, scale=2.0)}
        t = {"x": ctx.rand((T, H), dt, 52, True), "gamma": (1.0 + ctx.rand((H,), torch.float32, 53, True, scale=0.1)).to(dt)}
        if op == "add_layernorm":
            t["r"] = ctx.rand((T, H), dt, 54, True)
            t["beta"] = ctx.rand((H,), dt, 55, True, scale=0.1)
        return t

    def written(t):   # the statements as a PyTorch user writes them
        if op == "add_layernorm":
            h = t["x"].float() + t["r"].float()
            mu = h.mean(-1, keepdim=True)
            d = h - mu
            var = (d * d).mean(-1, keepdim=True)
            return {"y": (d * torch.rsqrt(var + 1e-5) * t["gamma"].float() + t["beta"].float()).to(dt), "hs": h.to(dt)}
        if op == "scaled_softmax":
            z = t["s"].float() * scale
            e = torch.exp(z - z.amax(-1, keepdim=True))
            return {"y": (e / e.sum(-1, keepdim=True)).to(dt)}
        xf = t["x"].float()
        return {"y": (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-6) * t["gamma"].float()).to(dt)}

    def library(t):   # PyTorch's own kernels for the same results
        if op == "add_layernorm":
            h = t["x"].float() + t["r"].float()
            return {"y": Fn.layer_norm(h, (H,), t["gamma"].float(), t["beta"].float(), 1e-5).to(dt), "hs": h.to(dt)}
        if op == "scaled_softmax":
            return {"y": torch.softmax(t["s"].float() * scale, dim=-1).to(dt)}
        if hasattr(Fn, "rms_norm"):
            return {"y": Fn.rms_norm(t["x"].float(), (H,), t["gamma"].float(), 1e-6).to(dt)}
        return written(t)

    def peer(f, compiled: bool, note: str):
        return function_row(f, inputs(), compiled, tol, note)

    def coconetc(key: str, note: str):
        def make() -> Row:
            t = inputs()
            for o in outs:
                t[o] = torch.empty((T, H), dtype=dt, device=ctx.device)
            row = program_row(ctx, key, cfg["sizes"], {}, t, outs[0], tol, note)
            row.outputs = lambda: {o: t[o] for o in outs}
            return row
        return make

    lib_note = {"add_layernorm": "the add, then F.layer_norm", "scaled_softmax": "torch.softmax of the scaled scores",
                "rms_hand": "F.rms_norm"}[op]
    return [("eager", lambda: peer(written, False, "the statements in PyTorch, a kernel an operation")),
            ("eager_graph", lambda: graph_row(ctx, peer(written, False, ""), "the statements in PyTorch captured in a CUDA graph")),
            ("copy", lambda: copy_row(ctx, cfg["bytes"], "inputs read, outputs written")),
            ("eager_fused", lambda: peer(library, False, lib_note + " (PyTorch's kernel)")),
            ("torch.compile", lambda: peer(written, True, "the statements torch.compile'd (mode max-autotune-no-cudagraphs)")),
            ("coconetc", coconetc(op, "one fused group: the row kernel")),
            ("coconetc_unfused", coconetc(op + "_unfused", "no schedule: a kernel a stage"))]
