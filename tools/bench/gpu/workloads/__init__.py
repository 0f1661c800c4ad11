"""What every workload module shares: the Row record and small helpers.

A workload module (workloads/NAME.py) declares

    PROGRAMS = {KEY: dict(source=..., schedule=... or None, replace={...})}
    def configs(world: int, quick: bool) -> list[dict]
    def rows(cfg: dict, ctx, mode: str) -> list[tuple[str, Callable[[], Row]]]

(see ../README.md). bench.py reads rows duck-typed, so a module may also use its own class
with the same attributes. Config dicts need a "name"; these keys are also understood by
report.py: "x" (a number for the plots' x axis, with "x_label"), and the workload's sizes
("N", "bytes", "T" = B*S tokens, "H", "dtype"), which its targets look up.

This file imports nothing heavy, so build.py can import the workload modules cheaply (they
import torch themselves).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# The repository root (tools/bench/gpu/workloads/__init__.py -> four levels up).
REPO = Path(__file__).resolve().parents[4]


@dataclass
class Row:
    """One way of computing a workload's step (the generated program or a peer)."""
    step: Callable[[], None]                        # enqueue one iteration on the current stream
    outputs: Callable[[], dict]                     # name -> tensor after one step (this rank's view)
    reset: Callable[[], None] | None = None         # back to the initial state (check mode)
    check: bool = True                              # False: computes something else (a floor)
    tol: dict[str, tuple[float, float]] | None = None   # output name -> (rtol, atol)
    state_bytes: int | None = None                  # optimizer state held per GPU
    note: str = ""
    # Extensions to the README's Row (both optional):
    finish: Callable[[], None] | None = None        # after a synchronize: report device-side
                                                    # errors (coconetc rows: program.finish)
    bytes: int | None = None                        # payload of the row's all-reduce, for bus
                                                    # bandwidth = 2(P-1)/P * bytes / time
    graph: bool = False                             # replayed as a CUDA graph: its time figure
                                                    # is the median of the replays


def slice_bounds(n: int, rank: int, group_size: int) -> tuple[int, int]:
    """The indices [lo, hi) of a dimension of length n that rank `rank` of a group of
    `group_size` holds in a sliced layout (the generated code's rule)."""
    return rank * n // group_size, (rank + 1) * n // group_size


def f32(x: float) -> float:
    """x rounded to the nearest float32, as a Python float: the value an `f32` program
    parameter really has (0.999 is 0.99900001287... in f32, so 1 - beta2 differs by 1.3e-5
    relative from the double computation a PyTorch peer would otherwise do)."""
    return struct.unpack("f", struct.pack("f", x))[0]


_PARAM = re.compile(r"(\w+)\s*:\s*(\w+)\s*(?:=\s*([-+0-9.eE]+|true|false))?")


def program_parameters(source: str, program: str | None = None) -> dict[str, tuple[str, object]]:
    """The parameters of a program in a .cnet file (path relative to the repository root):
    name -> (kind, default or None). Peers take their scalars from here, so every row of a
    workload computes with the values the program declares."""
    text = re.sub(r"//[^\n]*", "", (REPO / source).read_text())
    name = program or r"\w+"
    m = re.search(r"\bprogram\s+(" + name + r")\s*\(([^)]*)\)", text)
    if not m:
        raise ValueError(f"{source}: no program {program or ''} found")
    params = {}
    for p in _PARAM.finditer(m.group(2)):
        pname, kind, default = p.groups()
        value: object = None
        if default is not None:
            if default in ("true", "false"):
                value = default == "true"
            elif kind in ("f16", "bf16", "f32", "f64"):
                value = float(default)
            else:
                value = int(default)
        params[pname] = (kind, value)
    return params


def scalar_values(source: str, **overrides) -> dict[str, float]:
    """The scalar parameters of the program in `source` with their defaults, overridden by
    `overrides`; f32 values are rounded to f32 (see f32()). Sizes are left out."""
    out = {}
    for name, (kind, default) in program_parameters(source).items():
        if kind == "size":
            continue
        value = overrides.get(name, default)
        if value is None:
            raise ValueError(f"{source}: scalar '{name}' has no default; give it")
        out[name] = f32(value) if kind == "f32" else value
    return out


def quantized_grad(ctx, n: int, seed: int):
    """A per-rank f16 gradient whose values are multiples of 1/256 with |k| <= 2048 / P, so
    the sum over ranks is exact in f16 in any order: every all-reduce (NCCL ring or tree,
    reduce-scatter, a generated kernel) gives the same bits, and rows can be compared at f32
    rounding level. The spread (standard deviation about 1/4) is that of a real gradient
    after loss scaling; the values do not change any kernel's speed."""
    import torch
    k = 2048 // max(ctx.world, 1)
    r = ctx.rand((n,), torch.float32, seed, False)
    g = torch.clamp(torch.round(r * 64.0), -k, k).div_(256.0).to(torch.float16)
    del r
    return g


def check_storage(prog, sizes: dict, tensors: dict):
    """This rank's storage as the generated program sees it must be what the row allocated."""
    for name, t in tensors.items():
        want = tuple(int(v) for v in prog.local_shape(name, sizes))
        if want != tuple(t.shape):
            raise ValueError(f"tensor '{name}': the program stores {list(want)} on this rank, "
                             f"the workload allocated {list(t.shape)}")


# torch.compile's modes for the peers: the strongest Inductor offers without CUDA graphs (GEMM
# templates autotuned, coordinate-descent tuning of the generated kernels), and with them
# (reduce-overhead: the compiled function replayed as a CUDA graph) for decode shapes.
COMPILE_MODE = "max-autotune-no-cudagraphs"
GRAPH_MODE = "reduce-overhead"


def compile_fn(f, mode: str = COMPILE_MODE):
    """torch.compile(f) for a peer row: static shapes, one graph, `mode`."""
    import torch
    return torch.compile(f, dynamic=False, fullgraph=True, mode=mode)


def static_inputs(*tensors):
    """Marks tensors whose address never changes (weights, buffers a step reads in place) as
    static for torch.compile's CUDA graphs (GRAPH_MODE), as a module's parameters are: without it
    each replay first copies every input into the graph's own buffers (a GEMV's weights: more
    than the step itself)."""
    import torch
    for t in tensors:
        if isinstance(t, dict):
            static_inputs(*t.values())
        elif isinstance(t, torch.Tensor) and t.is_cuda:
            torch._dynamo.mark_static_address(t)


def function_row(f, tensors: dict, compiled, tol, note: str, outputs=lambda result: result) -> Row:
    """The row of a PyTorch function of the tensors (one GPU): f(tensors) each step, torch.compile'd
    (a fresh dynamo cache, static shapes, one graph) where `compiled` (True: COMPILE_MODE, or a mode
    name; GRAPH_MODE marks each step's start for the CUDA graphs); `outputs` maps its result to the
    row's outputs (default: f returns them as a dict)."""
    mode = COMPILE_MODE if compiled is True else compiled or None
    if mode:
        import torch
        torch._dynamo.reset()
        f = compile_fn(f, mode)
    st = {}
    if mode == GRAPH_MODE:
        import torch
        static_inputs(tensors)
        mark = torch.compiler.cudagraph_mark_step_begin

        def step():
            mark()
            st["result"] = f(tensors)
    else:
        def step():
            st["result"] = f(tensors)

    return Row(step=step, outputs=lambda: outputs(st["result"]), tol=tol, note=note, graph=mode == GRAPH_MODE)


def graph_row(ctx, row: Row, note: str, warmup: int = 3) -> Row:
    """`row` captured in a CUDA graph (PyTorch's torch.cuda.graph), each step one replay: eager
    PyTorch without its host overhead. The row's step runs `warmup` times on a side stream first
    (allocations, lazy initialisation), then once under capture; its reset, if any, is kept (it
    writes in place into the captured tensors). Its time figure is the median of the replays."""
    torch = ctx.torch
    if ctx.device.type != "cuda":
        raise RuntimeError("CUDA graph rows need CUDA")
    side = torch.cuda.Stream(device=ctx.device)
    side.wait_stream(torch.cuda.current_stream(ctx.device))
    with torch.cuda.stream(side):
        for _ in range(warmup):
            row.step()
    torch.cuda.current_stream(ctx.device).wait_stream(side)
    ctx.sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        row.step()
    ctx.sync()
    out = Row(step=g.replay, outputs=row.outputs, reset=row.reset, tol=row.tol,
              state_bytes=row.state_bytes, bytes=row.bytes, note=note, graph=True)
    out._keep = (g, row)   # the graph's memory and the captured tensors stay alive with the row
    return out


def copy_row(ctx, moved_bytes: int, note: str) -> Row:
    """The memory floor of a step that must move `moved_bytes` through device memory (each input
    read once, each output written once): a device-to-device copy of half of them (it reads and
    writes as many), measured. Not checked."""
    torch = ctx.torch
    n = max(16, moved_bytes // 2)
    src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=ctx.device)
    dst = torch.empty_like(src)
    return Row(step=lambda: dst.copy_(src), outputs=lambda: {}, check=False,
               note=f"memory floor: a device copy of {n / 2**20:.4g} MiB (reads and writes "
                    f"{moved_bytes / 2**20:.4g} MiB, the bytes the step must move): {note}")


def headline(coconetc: str = "coconetc", peers=(), floors=(), floor_rule: str = "first", targets=(),
             limit: str = "", series: str = "", x=None, x_label: str = "") -> dict:
    """A config's headline (bench.py --headline runs these rows and no others; report.py judges
    them): the coconetc row (the program as a user compiles it), every peer whose time the headline
    compares with (the strongest is the fastest of them, config by config), the floor rows and how
    they combine into one floor ("first", "max" or "sum"), the targets, and what limits the
    program where a target is missed. A target is (basis, op, value, text): basis "peer" compares
    the strongest peer's time over coconetc's (a speed-up), "floor" coconetc's time over the
    floor's; op ">=" or "<=". The plots draw configs of one `series` against `x` (`x_label`)."""
    return {"coconetc": coconetc, "peers": list(peers), "floors": list(floors), "floor_rule": floor_rule,
            "targets": [{"basis": b, "op": op, "value": v, "text": t} for b, op, v, t in targets],
            "limit": limit, "series": series, "x": x, "x_label": x_label}


FASTER = ("peer", ">=", 1.0, "speed-up >= 1")
FIFTH_LESS = ("peer", ">=", 1.25, "speed-up >= 1.25 (20% less time)")


def program_row(ctx, key: str, sizes: dict, scalars: dict, tensors: dict, out: str, tol, note: str,
                seed: int = 0) -> Row:
    """The row of a generated program: `tensors` is this rank's storage of every tensor (its
    output `out` allocated), checked against the program's shapes, bound once."""
    prog = ctx.coconet(key)
    check_storage(prog, sizes, tensors)
    step = prog.bind(sizes, scalars, tensors, seed)
    return Row(step=step, outputs=lambda: {out: tensors[out]}, finish=prog.finish, tol=tol,
               note=f"program {key}: {note}")
