"""What the Adam and LAMB workloads share (adam.py and lamb.py are thin: see them).

The step measured is the data-parallel optimizer step of mixed-precision training
(samples/adam/adam.cnet, samples/lamb/lamb.cnet): every rank holds its own f16 gradient g16;
    g = f32(allreduce(+, g16)) / P
then the update of the f32 master weights w and moments m, v (stdlib/optim.cnet), and
w16 = f16(w'). Rows:
  eager                 dist.all_reduce(g16); g = g16.float() / P; the update (Adam:
                        torch.optim.AdamW(fused=True); LAMB: plain torch ops); w16.copy_(w)
  torch.compile         the same all_reduce, then the whole update as one compiled function
  zero                  ZeRO-style: reduce_scatter_tensor of g16, the update of this rank's
                        shard (Adam: AdamW(fused=True) on the shard; LAMB: torch ops and one
                        all_reduce of the shard's two sums of squares), all_gather_into_tensor
                        of the f16 weights (in place)
  coconetc              the sample with its schedule (ZeRO-style: w, m, v sliced), compiled
                        as by default: each fused group one kernel over NCCL's device API (its
                        pipelined rounds chosen by size); LAMB's norms folded into `moments`
                        and its scalars (one exchange for both norms) computed at the start
                        of `apply`'s kernel
  coconetc_nccl         the same compiled with --no-device-collectives (NCCL calls)
  coconetc_chunksK      coconetc with tune(G, rounds = K) for its groups (Adam's f, LAMB's
                        moments and apply): the kernels in K pipelined rounds whatever the
                        size (transfers of one chunk overlap the update of another)
  coconetc_split        coconetc with tune(G, roles = split) for its groups: in two rounds or
                        more, 64 blocks (coconet_rt::kDevMovers; LAMB's moments 32, as its
                        sample's schedule sets) push and pull the chunks and the others
                        compute them (Adam's default, roles shared: every block does both,
                        one after the other)
  coconetc_auto         coconetc with tune(G, roles = auto): split from 4 rounds (2^24
                        parameters), every block both below (Adam only: LAMB's sample
                        schedule sets it, so there it is the coconetc row)
  coconetc_occ2         coconetc with tune(G, occupancy = 2) for its groups: each kernel asks
                        for two blocks of 512 threads per SM (64 registers), so a kernel in
                        roles gets twice the workers, and on one GPU (no barriers) every
                        kernel twice the blocks
  coconetc_copy_engines coconetc with tune(G, algorithm = copy_engines) for its groups: copy
                        engines move the reduce-scatter's slices and the all-gather's, round by
                        round, around a kernel per round that sums and updates
  coconetc_barriers     coconetc with tune(G, barriers = split) for its groups: each round's
                        barrier in two phases, its latency overlapping a pull, a push or a
                        chunk's update
  coconetc_sync         coconetc with tune(G, barriers = sync): every round's barrier whole (the
                        default, auto, splits them in Adam's shared form where a round's chunk
                        of the gradients is under 32 MiB: coconet_rt::devSplitBarriers)
  coconetc_barriers_tail LAMB only: the same for `apply` alone (the all-gather's rounds), so that
                        its gain and `moments`' show apart
  coconetc_unscheduled  the sample without a schedule (full state on every rank)
  nccl_allreduce        dist.all_reduce(g16) alone: the floor (not checked)
  nccl_reduce_scatter   dist.reduce_scatter_tensor of g16 alone, and nccl_all_gather
  nccl_all_gather       dist.all_gather_into_tensor of the f16 weights' slices alone: the
                        floor's two halves (not checked; two GPUs or more, N % P == 0), against
                        which the two kernels of LAMB (moments: the reduce-scatter's pipeline;
                        apply: the all-gather's) can be set in event timelines
Every row starts from the same state and gradient and uses the program's scalars (t = 3 and
the declared defaults, f32-rounded), so after one step all rows hold the same values.
Outputs compared: w16 (whole) and this rank's slice of w, m and v.

The gradients are multiples of 1/256 whose sum is exact in f16 (workloads.quantized_grad):
every all-reduce gives the same g, and the rows differ only by f32 rounding. Tolerances
(rtol, atol): w (1e-6, 1e-7) for Adam, a few f32 ulps; forgetting the weight decay moves w by
lr * wd * |w| = 1e-5 |w|, forgetting bias correction by ~1e-4, both far outside. m and v
(1e-5, 1e-7 / 1e-9); w16 one f16 ulp (1e-3). LAMB's w and w16 allow 1e-6 absolute for the
norms, which the rows sum in different orders (lamb.py).

state_bytes counts the optimizer state held per GPU: the f32 master weights and the two
moments (12 bytes per parameter held), not the f16 weights every row keeps whole.
"""
from __future__ import annotations

import os
import re

try:  # (its PROGRAMS and configs need no PyTorch: build.py --no-build imports them in CI without it)
    import torch
    import torch.distributed as dist
except ImportError:
    torch = dist = None

from workloads import (FASTER, REPO, Row, compile_fn, copy_row, graph_row, headline as spec, quantized_grad,
                       scalar_values, slice_bounds)

T = 3   # the step number used by every row (bias correction 1 - beta^t)


def configs(world: int, quick: bool) -> list[dict]:
    exps = [20, 22] if quick else [20, 22, 24, 26, 28]
    return [{"name": f"N=2^{e}", "N": 1 << e, "x": 1 << e, "x_label": "parameters",
             "dtype": "f16 gradients, f32 state",
             # bytes a one-rank step must move: g16 read, w, m, v read and written, w16 written
             "moved_bytes": 28 << e} for e in exps]


SMALL_N = 1 << 22   # up to this size eager PyTorch is also timed captured in a CUDA graph


def headline_spec(params: dict, world: int, kind: str) -> dict:
    """The headline of one size (every size is in it): against eager (fused AdamW / LAMB in torch
    ops), torch.compile and, on several GPUs, ZeRO-style sharding; small sizes also against eager
    in a CUDA graph. The floor on one GPU is the memory traffic (a copy of the bytes the step moves),
    on several NCCL's all-reduce of the gradients."""
    small = params.get("N", 0) <= SMALL_N
    plot = dict(x=params.get("N"), x_label="parameters N")
    peers = ["eager", "torch.compile"] + (["zero"] if world > 1 else []) + (["eager_graph"] if small else [])
    if world == 1:
        return spec(peers=peers, floors=["copy"], targets=[FASTER], **plot,
                    limit="memory bandwidth: the step moves the same bytes as torch.compile's Inductor "
                          "kernel" + (" (and LAMB's norms pass)" if kind == "lamb" else "")
                          + ", which streams them closer to the copy floor; small sizes: the one-rank "
                            "kernel's fixed costs")
    return spec(peers=peers, floors=["nccl_allreduce"], **plot,
                targets=[FASTER, ("floor", "<=", 1.15, "x floor <= 1.15")],
                limit=("the two halves cannot overlap: LAMB's trust ratio needs every rank's norms of "
                       "the whole update before any weight is gathered; NCCL's own reduce-scatter + "
                       "all-gather take more than its all-reduce at these sizes" if kind == "lamb" else
                       "the reduce-scatter, update and all-gather rounds at NCCL's transfer rate"))


def initial(ctx, n: int):
    """Full w, m, v (the same on every rank) and this rank's gradient."""
    w = ctx.rand((n,), torch.float32, 1, True)
    m = ctx.rand((n,), torch.float32, 2, True, scale=0.05)
    v = ctx.rand((n,), torch.float32, 3, True).square_().add_(0.1).mul_(0.01)
    return w, m, v, quantized_grad(ctx, n, 4)


def adam_update(w, m, v, w16, g16, P: int, t: int, lr: float, beta1: float, beta2: float,
                eps: float, wd: float):
    """optim.adam with the all-reduced f16 gradient, in place (torch.compile row)."""
    g = g16.float() / P
    m1 = beta1 * m + (1.0 - beta1) * g
    v1 = beta2 * v + (1.0 - beta2) * g * g
    mhat = m1 / (1.0 - beta1 ** t)
    vhat = v1 / (1.0 - beta2 ** t)
    w1 = w - lr * (mhat / (torch.sqrt(vhat) + eps) + wd * w)
    w.copy_(w1)
    m.copy_(m1)
    v.copy_(v1)
    w16.copy_(w1)


def lamb_direction(w, g, m, v, t, beta1, beta2, eps, wd):
    """optim.lamb_direction, updating m and v in place; returns u."""
    m.mul_(beta1).add_(g, alpha=1.0 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
    u = (m / (1.0 - beta1 ** t)).div_((v / (1.0 - beta2 ** t)).sqrt_().add_(eps))
    return u.add_(w, alpha=wd)


def trust_ratio(wnorm, unorm):
    """optim.trust_ratio on 0-d tensors (no host synchronisation)."""
    return torch.where((wnorm > 0) & (unorm > 0), wnorm / unorm, torch.ones_like(wnorm))


def lamb_update(w, m, v, w16, g16, P: int, t: int, lr: float, beta1: float, beta2: float,
                eps: float, wd: float):
    """optim.lamb with the all-reduced f16 gradient, in place (torch.compile row)."""
    g = g16.float() / P
    m1 = beta1 * m + (1.0 - beta1) * g
    v1 = beta2 * v + (1.0 - beta2) * g * g
    u = (m1 / (1.0 - beta1 ** t)) / (torch.sqrt(v1 / (1.0 - beta2 ** t)) + eps) + wd * w
    ratio = trust_ratio(torch.linalg.vector_norm(w), torch.linalg.vector_norm(u))
    w1 = w - lr * ratio * u
    w.copy_(w1)
    m.copy_(m1)
    v.copy_(v1)
    w16.copy_(w1)


_COMPILED = {}


def compiled(fn):
    """One torch.compile wrapper per function for the whole process (its graphs are cached
    per size, so the time mode reuses what the check mode compiled)."""
    if fn not in _COMPILED:
        _COMPILED[fn] = compile_fn(fn)
    return _COMPILED[fn]


# Pipelined rounds of the device-API kernels measured as rows `coconetc_chunksK` (Adam, LAMB);
# BENCH_ROUNDS="4,8,16" measures others (a knob sweep in the same run as the defaults).
ROUNDS = [int(k) for k in os.environ.get("BENCH_ROUNDS", "4").split(",") if k.strip()]
# Schedule variants measured as rows `coconetc_NAME` beside the defaults:
# BENCH_SCHED_ROWS="NAME=STATEMENTS|NAME=STATEMENTS", each STATEMENTS added to the end of the
# sample's schedule (e.g. "t2=tune(moments, taper = 2); tune(apply, taper = 2);").
SCHED_ROWS_ENV = "BENCH_SCHED_ROWS"


# The rows `coconetc_NAME` the workloads make themselves (Optim.rows): a row of the variables
# below may not take one of those names, or the bench would run both under one name.
OWN_ROWS = re.compile(r"nccl|chunks[0-9]+|split|auto|occ2|copy_engines|barriers|sync|barriers_tail|unscheduled")


def named_entries(text: str, env: str, form: str, valid, taken=()) -> list[tuple[str, str]]:
    """(NAME, VALUE) of each NAME=VALUE entry of `text` (entries separated by '|'), NAME a word
    not in `taken` nor given twice nor one of the workloads' own rows (OWN_ROWS), VALUE such that
    valid(VALUE); errors name the variable `env` and the entries' `form`."""
    rows = []
    for entry in (e.strip() for e in text.split("|")):
        if not entry:
            continue
        name, eq, value = entry.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not re.fullmatch(r"[A-Za-z0-9_]+", name) or not valid(value):
            raise ValueError(f"{env}: '{entry}' is not {form} (NAME letters, digits, '_')")
        if name in (n for n, _ in rows) or name in taken:
            raise ValueError(f"{env}: row '{name}' given twice")
        if OWN_ROWS.fullmatch(name):
            raise ValueError(f"{env}: row '{name}' would be named as the workload's own row coconetc_{name}")
        rows.append((name, value))
    return rows


def sched_rows(text: str) -> list[tuple[str, str]]:
    """(NAME, STATEMENTS) of each entry of BENCH_SCHED_ROWS' text; NAME a word, STATEMENTS
    ending in ';'."""
    return named_entries(text, SCHED_ROWS_ENV, "NAME=STATEMENTS;", lambda v: v.endswith(";"))


SCHED_ROWS = sched_rows(os.environ.get(SCHED_ROWS_ENV, ""))

# Compiler variants measured as rows `coconetc_NAME` beside the defaults (an A/B of a change to
# coconetc itself, side by side in one run): BENCH_COMPILER_ROWS="NAME=PATH|NAME=PATH", PATH a
# coconetc executable that compiles the sample with its own schedule (build.py's `compiler`).
COMPILER_ROWS_ENV = "BENCH_COMPILER_ROWS"


def compiler_rows(text: str) -> list[tuple[str, str]]:
    """(NAME, PATH) of each entry of BENCH_COMPILER_ROWS' text (no NAME of BENCH_SCHED_ROWS')."""
    return named_entries(text, COMPILER_ROWS_ENV, "NAME=PATH", bool, taken=[n for n, _ in SCHED_ROWS])


COMPILER_ROWS = compiler_rows(os.environ.get(COMPILER_ROWS_ENV, ""))

# Tuning-table variants measured as rows `coconetc_NAME` beside the defaults (an A/B of table
# entries, e.g. push_tile_units = 0 or tail_flags = 0, side by side in one run):
# BENCH_TUNING_ROWS="NAME=FILE|NAME=FILE", FILE a tuning file as `coconetc tune` writes it
# (tuning.json: {"entries": [{"name", "rules", "why"}]}), with which the sample is compiled
# (`coconetc compile --tuning FILE`, build.py's `flags`; a relative FILE is taken from the
# repository's root).
TUNING_ROWS_ENV = "BENCH_TUNING_ROWS"


def tuning_rows(text: str) -> list[tuple[str, str]]:
    """(NAME, FILE) of each entry of BENCH_TUNING_ROWS' text, FILE absolute (no NAME of the
    schedule or compiler rows')."""
    taken = [n for n, _ in SCHED_ROWS] + [n for n, _ in COMPILER_ROWS]
    rows = named_entries(text, TUNING_ROWS_ENV, "NAME=FILE", bool, taken=taken)
    return [(name, str(REPO / path)) for name, path in rows]


TUNING_ROWS = tuning_rows(os.environ.get(TUNING_ROWS_ENV, ""))


class OptimizerWorkload:
    """The rows of one optimizer (`kind` "adam" or "lamb") for the module that makes it."""

    def __init__(self, kind: str, source: str, schedule: str, tol: dict):
        self.kind, self.source, self.tol = kind, source, tol
        self.programs = {kind: dict(source=source, schedule=schedule),
                         f"{kind}_nccl": dict(source=source, schedule=schedule,
                                              flags=["--no-device-collectives"]),
                         f"{kind}_unscheduled": dict(source=source, schedule=None)}
        # The device-API kernels in K pipelined rounds: Adam's group `f`, LAMB's `moments` and
        # `apply` (tune(G, rounds = K)).
        self.rounds = ROUNDS
        groups = ["f"] if kind == "adam" else ["moments", "apply"]
        for k in self.rounds:
            self.programs[f"{kind}_chunks{k}"] = dict(
                source=source, schedule=schedule,
                schedule_append="".join(f"tune({g}, rounds = {k});\n" for g in groups))
        # Separate blocks move and compute the chunks (tune(G, roles = split)).
        self.programs[f"{kind}_split"] = dict(
            source=source, schedule=schedule,
            schedule_append="".join(f"tune({g}, roles = split);\n" for g in groups))
        # Roles split only from coconet_rt::kRolesAutoRounds rounds (tune(G, roles = auto)),
        # unless the sample's schedule already says so (then it is the default build).
        sample_roles = "roles = auto" in re.sub(r"//[^\n]*", "", (REPO / schedule).read_text())
        self.auto_row = not sample_roles
        if self.auto_row:
            self.programs[f"{kind}_auto"] = dict(
                source=source, schedule=schedule,
                schedule_append="".join(f"tune({g}, roles = auto);\n" for g in groups))
        # Two blocks per SM (tune(G, occupancy = 2)): where the groups have roles the workers
        # double, and on one rank every kernel's grid fills the GPU (coconet_rt::soloBlocks).
        # Without roles on
        # several ranks the grid stays at kDevMaxBlocks and the row is Adam's default kernel again.
        self.occ_row = True
        if self.occ_row:
            self.programs[f"{kind}_occ2"] = dict(
                source=source, schedule=schedule,
                schedule_append="".join(f"tune({g}, occupancy = 2);\n" for g in groups))
        # The groups' transfers by copy engines (tune(G, algorithm = copy_engines)), rounds by size
        # (coconet_rt::ceAutoRounds: one below 64 MiB, else two).
        self.programs[f"{kind}_copy_engines"] = dict(
            source=source, schedule=schedule,
            schedule_append="".join(f"tune({g}, algorithm = copy_engines);\n" for g in groups))
        # Each round's barrier in two phases (tune(G, barriers = split)), or whole (= sync; the
        # default, auto, splits them in the shared full form where a round's chunk is under 32 MiB).
        for b in ("split", "sync"):
            self.programs[f"{kind}_barriers" + ("" if b == "split" else "_sync")] = dict(
                source=source, schedule=schedule,
                schedule_append="".join(f"tune({g}, barriers = {b});\n" for g in groups))
        if len(groups) > 1:
            self.programs[f"{kind}_barriers_tail"] = dict(
                source=source, schedule=schedule, schedule_append=f"tune({groups[-1]}, barriers = split);\n")
        self.tail_row = len(groups) > 1
        self.variant_rows = [name for name, _ in SCHED_ROWS]  # and COMPILER_ROWS' and TUNING_ROWS' below
        for name, text in SCHED_ROWS:
            self.programs[f"{kind}_x_{name}"] = dict(source=source, schedule=schedule, schedule_append=text + "\n")
        for name, path in COMPILER_ROWS:
            self.variant_rows.append(name)
            self.programs[f"{kind}_x_{name}"] = dict(source=source, schedule=schedule, compiler=path)
        for name, path in TUNING_ROWS:
            self.variant_rows.append(name)
            self.programs[f"{kind}_x_{name}"] = dict(source=source, schedule=schedule, flags=["--tuning", path])
        self.scalars = scalar_values(source, t=T)

    # -- helpers ------------------------------------------------------------------------------
    def _outputs(self, ctx, n, w, m, v, w16):
        """w16 whole and this rank's slice of w, m, v (given whole)."""
        lo, hi = slice_bounds(n, ctx.rank, ctx.world)
        return lambda: {"w": w[lo:hi], "m": m[lo:hi], "v": v[lo:hi], "w16": w16}

    def _scal(self):
        s = self.scalars
        return s["t"], s["lr"], s["beta1"], s["beta2"], s["eps"], s["wd"]

    def _adamw(self, ctx, p, m, v, capturable: bool = False):
        """torch.optim.AdamW(fused=True) over p whose state is m, v at step t - 1 (so its
        next step uses bias correction for t); `capturable` for a CUDA graph."""
        t, lr, b1, b2, eps, wd = self._scal()
        opt = torch.optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd,
                                fused=True, capturable=capturable)
        opt.state[p] = {"step": torch.tensor(float(t - 1), dtype=torch.float32, device=ctx.device),
                        "exp_avg": m, "exp_avg_sq": v}
        return opt

    def _reset(self, ctx, n, w, m, v, w16, g16, lo=0, hi=None, opt=None):
        """A reset for a row: the initial state copied back in place into its tensors (w, m, v
        holding [lo, hi) of the parameters; w16 and g16 whole), and AdamW's step count."""
        t = self._scal()[0]

        def reset():
            w0, m0, v0, g0 = initial(ctx, n)
            end = n if hi is None else hi
            for dst, src in ((w, w0), (m, m0), (v, v0)):
                dst.copy_(src[lo:end] if dst.numel() != n else src)
            w16.copy_(w0.half())
            g16.copy_(g0)
            if opt is not None:
                for st in opt.state.values():
                    st["step"].fill_(float(t - 1))
        return reset

    # -- rows ---------------------------------------------------------------------------------
    def eager(self, cfg, ctx, capturable: bool = False) -> Row:
        n, P = cfg["N"], ctx.world
        w, m, v, g16 = initial(ctx, n)
        w16 = w.half()
        opt = None
        if self.kind == "adam":
            p = torch.nn.Parameter(w)
            opt = self._adamw(ctx, p, m, v, capturable)

            def step():
                dist.all_reduce(g16)
                p.grad = g16.float().div_(P)
                opt.step()
                with torch.no_grad():
                    w16.copy_(p)
            note = "all_reduce + AdamW(fused=True) + f16 copy"
        else:
            t, lr, b1, b2, eps, wd = self._scal()

            def step():
                dist.all_reduce(g16)
                g = g16.float().div_(P)
                u = lamb_direction(w, g, m, v, t, b1, b2, eps, wd)
                ratio = trust_ratio(torch.linalg.vector_norm(w), torch.linalg.vector_norm(u))
                w.addcmul_(u, ratio, value=-lr)
                w16.copy_(w)
            note = "all_reduce + LAMB in torch ops + f16 copy"
        return Row(step=step, outputs=self._outputs(ctx, n, w, m, v, w16), tol=self.tol,
                   reset=self._reset(ctx, n, w, m, v, w16, g16, opt=opt),
                   state_bytes=3 * 4 * n, bytes=2 * n, note=note)

    def eager_graph(self, cfg, ctx) -> Row:
        row = self.eager(cfg, ctx, capturable=True)
        g = graph_row(ctx, row, row.note + ", captured in a CUDA graph (AdamW capturable)"
                      if self.kind == "adam" else row.note + ", captured in a CUDA graph")
        g.reset()   # the capture's warm-up steps moved the state
        return g

    def copy_floor(self, cfg, ctx) -> Row:
        return copy_row(ctx, cfg["moved_bytes"], "g16 read, w, m, v read and written, w16 written")

    def compiled_row(self, cfg, ctx) -> Row:
        n, P = cfg["N"], ctx.world
        w, m, v, g16 = initial(ctx, n)
        w16 = w.half()
        fn = compiled(adam_update if self.kind == "adam" else lamb_update)
        args = (P,) + self._scal()

        def step():
            dist.all_reduce(g16)
            fn(w, m, v, w16, g16, *args)
        return Row(step=step, outputs=self._outputs(ctx, n, w, m, v, w16), tol=self.tol,
                   reset=self._reset(ctx, n, w, m, v, w16, g16),
                   state_bytes=3 * 4 * n, bytes=2 * n,
                   note="all_reduce + the update compiled by torch.compile "
                        "(mode max-autotune-no-cudagraphs, one function)")

    def zero(self, cfg, ctx) -> Row:
        n, P = cfg["N"], ctx.world
        if n % P:
            raise ValueError(f"N = {n} is not a multiple of P = {P} (reduce_scatter_tensor)")
        lo, hi = slice_bounds(n, ctx.rank, P)
        w_full, m_full, v_full, g16 = initial(ctx, n)
        w16 = w_full.half()
        w, m, v = (x[lo:hi].clone() for x in (w_full, m_full, v_full))
        del w_full, m_full, v_full
        g_shard = torch.empty(hi - lo, dtype=torch.float16, device=ctx.device)
        w16_shard = w16.narrow(0, lo, hi - lo)       # all-gathered in place
        t, lr, b1, b2, eps, wd = self._scal()
        opt = None
        if self.kind == "adam":
            p = torch.nn.Parameter(w)
            opt = self._adamw(ctx, p, m, v)

            def update():
                p.grad = g_shard.float().div_(P)
                opt.step()
                with torch.no_grad():
                    w16_shard.copy_(p)
            note = "reduce_scatter + AdamW(fused=True) on the shard + all_gather"
        else:
            def update():
                g = g_shard.float().div_(P)
                u = lamb_direction(w, g, m, v, t, b1, b2, eps, wd)
                sq = torch.stack([w.square().sum(), u.square().sum()])
                dist.all_reduce(sq)
                norms = sq.sqrt_()
                w.addcmul_(u, trust_ratio(norms[0], norms[1]), value=-lr)
                w16_shard.copy_(w)
            note = "reduce_scatter + LAMB on the shard (norms: one all_reduce) + all_gather"

        def step():
            dist.reduce_scatter_tensor(g_shard, g16)
            update()
            dist.all_gather_into_tensor(w16, w16_shard)

        return Row(step=step, outputs=lambda: {"w": w, "m": m, "v": v, "w16": w16},
                   reset=self._reset(ctx, n, w, m, v, w16, g16, lo, hi, opt),
                   tol=self.tol, state_bytes=3 * 4 * (hi - lo), bytes=2 * n, note=note)

    def coconetc(self, cfg, ctx, key: str) -> Row:
        n = cfg["N"]
        prog = ctx.coconet(key)
        sizes = {"N": n}
        w, m, v, g16 = initial(ctx, n)
        tensors = {"g16": g16, "w16": prog.local_part("w16", w.half())}
        for name, full in (("w", w), ("m", m), ("v", v)):
            tensors[name] = prog.local_part(name, full)
        del w, m, v
        step = prog.bind(sizes, self.scalars, tensors)
        lo, hi = slice_bounds(n, ctx.rank, ctx.world)

        def outputs():
            out = {"w16": tensors["w16"]}
            for name in ("w", "m", "v"):
                x = tensors[name]
                out[name] = x if prog.is_sliced(name) else x[lo:hi]
            return out
        state = sum(tensors[k].numel() * tensors[k].element_size() for k in ("w", "m", "v"))
        note = f"program {key}"

        def reset():
            w0, m0, v0, g0 = initial(ctx, n)
            for name, full in (("w", w0), ("m", m0), ("v", v0)):
                part = full if tensors[name].numel() == n else full[lo:hi]
                tensors[name].copy_(part)
            tensors["w16"].copy_(w0.half() if tensors["w16"].numel() == n else w0[lo:hi].half())
            tensors["g16"].copy_(g0)
        return Row(step=step, outputs=outputs, finish=prog.finish, tol=self.tol, reset=reset,
                   state_bytes=state, bytes=2 * n, note=note)

    def floor(self, cfg, ctx) -> Row:
        n = cfg["N"]
        g16 = quantized_grad(ctx, n, 4)
        return Row(step=lambda: dist.all_reduce(g16), outputs=lambda: {}, check=False,
                   bytes=2 * n, note="dist.all_reduce of the f16 gradients alone, in place")

    def halves(self, cfg, ctx, which: str) -> Row:
        """The floor's halves: NCCL's reduce-scatter of the gradients, or its all-gather of
        the f16 weights' slices, alone."""
        n, P = cfg["N"], ctx.world
        if n % P:
            raise ValueError(f"N = {n} is not a multiple of P = {P} (reduce_scatter_tensor)")
        g16 = quantized_grad(ctx, n, 4)
        part = torch.empty(n // P, dtype=torch.float16, device=ctx.device)
        if which == "reduce_scatter":
            return Row(step=lambda: dist.reduce_scatter_tensor(part, g16), outputs=lambda: {}, check=False,
                       bytes=2 * n, note="dist.reduce_scatter_tensor of the f16 gradients alone")
        lo, hi = slice_bounds(n, ctx.rank, P)
        part.copy_(g16[lo:hi])
        return Row(step=lambda: dist.all_gather_into_tensor(g16, part), outputs=lambda: {}, check=False,
                   bytes=2 * n, note="dist.all_gather_into_tensor of the f16 slices alone")

    def rows(self, cfg: dict, ctx, mode: str):
        """Eager first: it is the reference of the check. No two rows share a name (OWN_ROWS)."""
        rows = self.all_rows(cfg, ctx) + [("eager_graph", lambda: self.eager_graph(cfg, ctx)),
                                          ("copy", lambda: self.copy_floor(cfg, ctx))]
        names = [name for name, _ in rows]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"{self.kind}: rows named twice: {', '.join(twice)}")
        return rows

    def all_rows(self, cfg: dict, ctx):
        return [
            ("eager", lambda: self.eager(cfg, ctx)),
            ("torch.compile", lambda: self.compiled_row(cfg, ctx)),
            ("zero", lambda: self.zero(cfg, ctx)),
            ("coconetc", lambda: self.coconetc(cfg, ctx, self.kind)),
            ("coconetc_nccl", lambda: self.coconetc(cfg, ctx, f"{self.kind}_nccl")),
            *[(f"coconetc_chunks{k}", lambda k=k: self.coconetc(cfg, ctx, f"{self.kind}_chunks{k}"))
              for k in self.rounds],
            ("coconetc_split", lambda: self.coconetc(cfg, ctx, f"{self.kind}_split")),
            *([("coconetc_auto", lambda: self.coconetc(cfg, ctx, f"{self.kind}_auto"))]
              if self.auto_row else []),
            *([("coconetc_occ2", lambda: self.coconetc(cfg, ctx, f"{self.kind}_occ2"))]
              if self.occ_row else []),
            ("coconetc_copy_engines", lambda: self.coconetc(cfg, ctx, f"{self.kind}_copy_engines")),
            ("coconetc_barriers", lambda: self.coconetc(cfg, ctx, f"{self.kind}_barriers")),
            ("coconetc_sync", lambda: self.coconetc(cfg, ctx, f"{self.kind}_barriers_sync")),
            *([("coconetc_barriers_tail", lambda: self.coconetc(cfg, ctx, f"{self.kind}_barriers_tail"))]
              if self.tail_row else []),
            *[(f"coconetc_{name}", lambda name=name: self.coconetc(cfg, ctx, f"{self.kind}_x_{name}"))
              for name in self.variant_rows],
            ("coconetc_unscheduled", lambda: self.coconetc(cfg, ctx, f"{self.kind}_unscheduled")),
            ("nccl_allreduce", lambda: self.floor(cfg, ctx)),
            *([("nccl_reduce_scatter", lambda: self.halves(cfg, ctx, "reduce_scatter")),
               ("nccl_all_gather", lambda: self.halves(cfg, ctx, "all_gather"))]
              if ctx.world > 1 else []),
        ]
