#!/usr/bin/env python3
"""The benchmark worker: one process per GPU, started by torchrun (see ../README.md).

    python3 -m torch.distributed.run --standalone --nproc-per-node P tools/bench/gpu/bench.py \
        --build RESULTS/build.json --out RESULTS [--workloads adam,lamb] [--quick]

For every workload and config, in the same processes on the same GPUs:
  check mode: each row is built, run once and compared with the reference row (the first row
    whose `check` is true and that ran), output by output, within the row's tolerances;
  time mode: each row that passed (or computes a floor, check=False) is built again, warmed
    up (10 steps, then more until 1 s has passed: clocks settle under sustained load), then timed: every iteration between two CUDA events on the current stream, no host
    synchronisation inside the loop; per iteration the slowest rank counts.
One row at a time: a row's memory is freed before the next is built. A row that raises is
recorded as failed with its message and the others go on; all ranks agree on every outcome
(an all-reduce of a status flag) so the process group never waits on a rank that gave up.

Rank 0 writes RESULTS/raw/WORKLOAD-pP.json after every row (status "running", then
"complete"): the GPU, GPU count, NCCL and PyTorch versions, the date, the command line, the
NCCL_* / TORCH_SYMM_MEM_* variables, and per config per row the check and time results.

Developer options: --device cpu (gloo, timed with the host clock: timings meaningless) and
--skip-coconetc run the peer rows on a machine without a GPU, to catch bugs in workloads.
Two helpers for run.sh, outside torchrun: --pending (workloads with no result yet) and
--mark-failed (record a worker that died or hung).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import json
import math
import os
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workloads import Row  # noqa: E402

__all__ = ["Row", "Ctx", "main"]   # Row re-exported: `from bench import Row` works too

ENV_PREFIXES = ("NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_", "TORCH_NCCL_", "CUDA_VISIBLE_DEVICES",
                "CUDA_DEVICE_MAX_CONNECTIONS")
CHUNK = 1 << 24   # elements compared at once (bounds the memory of a comparison)


def brief(msg) -> str:
    """The last line of each message (a traceback's exception line), for the console."""
    if isinstance(msg, list):
        return "; ".join(brief(m) for m in msg)
    lines = [l for l in str(msg or "").strip().splitlines() if l.strip()]
    if not lines:
        return ""
    prefix = lines[0].split(": ", 1)[0] + ": " if lines[0].startswith("rank ") and len(lines) > 1 else ""
    return prefix + lines[-1].strip()


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def raw_path(out: Path, workload: str, world: int, rep: int | None = None) -> Path:
    """RESULTS/raw/WORKLOAD-pP.json, or WORKLOAD-pP-rK.json for the K-th of a headline's runs."""
    return out / "raw" / (f"{workload}-p{world}.json" if not rep else f"{workload}-p{world}-r{rep}.json")


def headline_rows(spec: dict) -> list[str]:
    """Every row a config's headline needs: the program's, the peers', the floors'."""
    names = [spec["coconetc"]] + list(spec["peers"]) + list(spec["floors"])
    return list(dict.fromkeys(names))


def write_json(path: Path, data: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    tmp.replace(path)


def workload_names(selected: str | None) -> list[str]:
    if selected:
        return [w.strip() for w in selected.split(",") if w.strip()]
    return sorted(p.stem for p in (HERE / "workloads").glob("*.py") if not p.stem.startswith("_"))


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats(times_us: list[float]) -> dict:
    s = sorted(times_us)
    return {"median_us": round(percentile(s, 50), 3), "p10_us": round(percentile(s, 10), 3),
            "p90_us": round(percentile(s, 90), 3), "min_us": round(s[0], 3),
            "max_us": round(s[-1], 3), "mean_us": round(sum(s) / len(s), 3), "iters": len(s)}


class Watchdog:
    """Ends the worker when one row takes longer than `seconds` (a hang, say a collective that
    never completes): the callback first records which row it was (rank 0 writes the result
    file), then the process exits with status 4. run.sh starts a new worker for the workloads
    not run yet."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._lock = threading.Lock()
        self._deadline = None
        self._label, self._on_fire = "", None
        if seconds > 0:
            threading.Thread(target=self._loop, daemon=True, name="bench-watchdog").start()

    def arm(self, label: str, on_fire):
        with self._lock:
            self._deadline = time.monotonic() + self.seconds
            self._label, self._on_fire = label, on_fire

    def disarm(self):
        with self._lock:
            self._deadline = None

    def _loop(self):
        while True:
            time.sleep(1.0)
            with self._lock:
                fire = self._deadline is not None and time.monotonic() > self._deadline
                label, on_fire = self._label, self._on_fire
            if fire:
                msg = f"{label}: no result after {self.seconds:.0f} s (hung?); the worker stopped"
                try:
                    on_fire(msg)
                finally:
                    print(f"bench: watchdog: {msg}", flush=True)
                    sys.stderr.flush()
                    os._exit(4)


class Ctx:
    """What rows see (README: rank, world, device, group, coconet(key), rand(...))."""

    def __init__(self, args, torch, dist, device, build: dict):
        self.torch, self.dist = torch, dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.device = device
        self.group = dist.group.WORLD
        self.quick = args.quick
        self.skip_coconetc = args.skip_coconetc
        self._build = build
        self._build_path = args.build
        self._libs = {}
        self._live = []
        # The control plane (agreeing on outcomes, gathering times, sharing NCCL ids) runs on
        # a gloo group of its own, on the host: it never queues behind, nor mismatches with, a
        # collective that a failed row left pending on the data group.
        self.control = dist.new_group(backend="gloo")
        self.watchdog = Watchdog(args.row_timeout)

    # -- for workloads -------------------------------------------------------------------
    def coconet(self, key: str):
        """A new instance of the program built for KEY (its own NCCL communicator, on the
        current stream); destroyed when the row that made it is freed. Collective."""
        if self.device.type != "cuda":
            raise RuntimeError("coconetc rows need CUDA (use --skip-coconetc with --device cpu)")
        rec = self._build.get("programs", {}).get(key)
        if rec is None:
            raise RuntimeError(f"program '{key}' is not in {self._build_path} (not built)")
        if rec.get("error") or not rec.get("lib"):
            first = (rec.get("error") or "no library").strip().splitlines()[0]
            raise RuntimeError(f"program '{key}' was not built: {first} (log: {rec.get('log')})")
        if key not in self._libs:
            from coconet import Library
            self._libs[key] = Library(rec["lib"], rec.get("program"))
        prog = self._libs[key].create(self.control)
        self._live.append(prog)
        return prog

    def rand(self, shape, dtype, seed: int, same_on_all_ranks: bool = True, scale: float = 1.0):
        """A deterministic random tensor on the device: normal(0, scale) for float dtypes,
        integers in [-8, 8) (u8: [0, 16)) for integer ones, fair coins for bool. The same on
        every rank, or different per rank (seeded by the rank)."""
        torch = self.torch
        g = torch.Generator(device=self.device)
        g.manual_seed(seed * 1000003 + (0 if same_on_all_ranks else 7919 * (self.rank + 1)))
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=g, device=self.device, dtype=torch.float32)
            if scale != 1.0:
                t.mul_(scale)
            return t if dtype == torch.float32 else t.to(dtype)
        if dtype == torch.bool:
            return torch.rand(shape, generator=g, device=self.device) < 0.5
        lo, hi = (0, 16) if dtype == torch.uint8 else (-8, 8)
        return torch.randint(lo, hi, shape, generator=g, device=self.device, dtype=dtype)

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    # -- for bench.py ---------------------------------------------------------------------
    def release(self):
        """Destroys the programs made since the last call and frees cached memory."""
        errors = []
        for p in self._live:
            try:
                p.destroy()
            except Exception as e:
                errors.append(str(e))
        self._live.clear()
        gc.collect()
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()
        return errors

    def agree(self, status: int, message: str = "", collectives: bool = True) -> tuple[int, list[str]]:
        """The worst status over the ranks (0 ok, 1 check failed, 2 exception), and the
        messages of the ranks that had one (gathered only when some rank failed, so the usual
        path is one tiny all-reduce). With `collectives` (the code that failed may have queued
        collectives), an exception on some ranks only raises OutOfStep: the other ranks may
        have queued collectives that nothing will match."""
        t = self.torch.tensor([float(status == 2), float(status == 1)])
        self.dist.all_reduce(t, group=self.control)
        n_exc, n_fail = int(t[0].item()), int(t[1].item())
        if not n_exc and not n_fail:
            return 0, []
        msgs = [None] * self.world
        self.dist.all_gather_object(msgs, message, group=self.control)
        msgs = [f"rank {r}: {m}" for r, m in enumerate(msgs) if m]
        if collectives and 0 < n_exc < self.world:
            raise OutOfStep(msgs)
        return (2 if n_exc else 1), msgs

    def reduce(self, values: list[float], op: str) -> list[float]:
        t = self.torch.tensor(values, dtype=self.torch.float64)
        self.dist.all_reduce(t, op=getattr(self.dist.ReduceOp, op), group=self.control)
        return t.tolist()

    def per_rank(self, times: list[float]) -> list[list[float]]:
        """Every rank's per-iteration times, in rank order."""
        torch = self.torch
        t = torch.tensor(times, dtype=torch.float64)
        parts = [torch.empty_like(t) for _ in range(self.world)]
        self.dist.all_gather(parts, t, group=self.control)
        return [p.tolist() for p in parts]

    @staticmethod
    def max_over_ranks(ranks: list[list[float]]) -> list[float]:
        """Per iteration, the maximum over the ranks."""
        return [max(col) for col in zip(*ranks)]


class OutOfStep(Exception):
    """A row raised on some ranks only: the process group cannot be trusted any more."""


# -- comparing outputs -------------------------------------------------------------------------

def default_tol(torch, dtype) -> tuple[float, float]:
    """(rtol, atol) when a row gives none for an output: a few units of the last place."""
    return {torch.float64: (1e-12, 1e-15), torch.float32: (1e-5, 1e-6),
            torch.float16: (2e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-4)}.get(dtype, (0.0, 0.0))


class Mismatch(Exception):
    """The outputs cannot be compared (missing name, other shape)."""


def compare_local(torch, out: dict, ref: dict, tol: dict | None) -> list[tuple]:
    """Per reference output: (name, rtol, atol, max_abs, max_rel, max_of_tolerance, elements
    out of tolerance) on this rank; max_of_tolerance is the largest |a - b| / (atol + rtol |b|). An element is within tolerance when |a - b| <= atol + rtol * |b|, or a == b
    (infinities), or both are NaN."""
    res = []
    for name in sorted(ref):
        if name not in out:
            raise Mismatch(f"output '{name}' missing (the row gives {sorted(out)})")
        a, b = out[name].detach(), ref[name]
        if tuple(a.shape) != tuple(b.shape):
            raise Mismatch(f"output '{name}' has shape {list(a.shape)}, the reference {list(b.shape)}")
        rtol, atol = (tol or {}).get(name) or default_tol(torch, b.dtype)
        fa, fb = a.reshape(-1), b.reshape(-1)
        max_abs = max_rel = max_tol = 0.0
        bad = 0
        for i in range(0, fa.numel(), CHUNK):
            x = fa[i:i + CHUNK].to(torch.float64)
            y = fb[i:i + CHUNK].to(torch.float64)
            same = (x == y) | (torch.isnan(x) & torch.isnan(y))
            d = torch.where(same, torch.zeros_like(x), (x - y).abs())
            allowed = atol + rtol * y.abs()
            ok = same | (d <= allowed)
            bad += int((~ok).sum().item())
            d = torch.nan_to_num(d, nan=math.inf)
            if d.numel():
                max_abs = max(max_abs, float(d.max().item()))
                max_rel = max(max_rel, float((d / y.abs().clamp_min(1e-300)).max().item()))
                # The error as a fraction of what the tolerance allows (<= 1 passes).
                frac = torch.where(d == 0, torch.zeros_like(d), d / allowed.clamp_min(1e-300))
                max_tol = max(max_tol, float(frac.max().item()))
            del x, y, same, d, ok, allowed
        res.append((name, rtol, atol, max_abs, max_rel, max_tol, bad))
    return res


# -- one config ----------------------------------------------------------------------------------

def row_meta(rr: dict, row):
    """Copies what a Row declares into its record (duck-typed: any object with the fields)."""
    for key in ("state_bytes", "bytes", "note"):
        v = getattr(row, key, None)
        if v not in (None, ""):
            rr[key] = v
    rr["checked"] = bool(getattr(row, "check", True))
    if getattr(row, "graph", False):
        rr["graph"] = True   # replayed as a CUDA graph: its figure is the median of the replays


def run_config(module, cfg: dict, ctx: Ctx, args, rec: dict, save, log, fail):
    rows: dict[str, dict] = {}

    def rowrec(name):
        if name not in rows:
            rows[name] = {"name": name}
            rec["rows"].append(rows[name])
        return rows[name]

    def row_factories(mode):
        """The workload's rows for `mode`, or None (recorded) when any rank failed to make them."""
        status, msgs = 0, []
        try:
            factories = list(module.rows(cfg, ctx, mode))
        except Exception:
            status, msgs = 2, [traceback.format_exc(limit=4)]
            factories = []
        status, msgs = ctx.agree(status, msgs[0] if msgs else "", collectives=False)
        if status:
            rec["error"] = f"rows({mode}) failed: {msgs}"
            save()
            return None
        if rec.get("headline"):   # exactly the headline's rows: every peer and floor, always
            want = headline_rows(rec["headline"])
            have = [n for n, _ in factories]
            lacking = [n for n in want if n not in have]
            if lacking:
                rec["error"] = f"rows({mode}): the workload lacks headline rows {lacking}"
                save()
                return None
            factories = [f for f in factories if f[0] in want]
        elif args.rows:  # developer option: these rows and the first (the check's reference)
            keep = set(args.rows.split(","))
            factories = [f for i, f in enumerate(factories) if i == 0 or f[0] in keep]
        return factories

    # ---- check mode
    factories = row_factories("check")
    if factories is None:
        return
    reference = None
    for name, factory in factories:
        rr = rowrec(name)
        if ctx.skip_coconetc and name.startswith("coconetc"):
            rr["check"] = {"status": "skipped", "reason": "--skip-coconetc"}
            log(f"  {name}: skipped (--skip-coconetc)")
            continue
        # --check-repeats K: a row compared with the reference is checked K times, each on a
        # fresh instance (races that show now and then); the record keeps the first failure.
        attempts = failed = 0
        while True:
            row = out = None
            status, msg = 0, ""
            ctx.watchdog.arm(f"config {rec['name']}, row {name}, check mode", fail)
            try:
                row = factory()
                row_meta(rr, row)
                if getattr(row, "reset", None):
                    row.reset()
                row.step()
                if getattr(row, "finish", None):
                    row.finish()            # bounded wait; reports device-side errors
                ctx.sync()
                if getattr(row, "check", True):
                    out = row.outputs()
            except Exception:
                status, msg = 2, traceback.format_exc(limit=6)
            status, msgs = ctx.agree(status, msg)
            compared = False
            if status:
                result = {"status": "error", "error": msgs}
            elif not getattr(row, "check", True):
                result = {"status": "unchecked", "note": "computes a floor, not the result"}
            elif reference is None:
                reference = (name, {k: v.detach().clone() for k, v in out.items()})
                result = {"status": "reference"}
                rec["reference"] = name
            else:
                result = check_against(ctx, out, reference, getattr(row, "tol", None))
                compared = True
            del row, out
            errs = ctx.release()
            ctx.watchdog.disarm()
            if errs:
                rr.setdefault("warnings", []).extend(errs)
            attempts += 1
            failed += result["status"] != "pass"
            if attempts == 1 or (result["status"] != "pass" and failed == 1):
                rr["check"] = result   # the first attempt, then the first failure
            if not compared or attempts >= args.check_repeats:
                break
        if attempts > 1:
            rr["check"]["attempts"], rr["check"]["failed_attempts"] = attempts, failed
        log(f"  {name}: check {rr['check']['status']}"
            + (f" ({brief(rr['check'].get('error') or rr['check'].get('worst', ''))})"
               if rr["check"]["status"] not in ("pass", "reference", "unchecked") else ""))
        save()

    # ---- time mode
    factories = row_factories("time")
    if factories is None:
        return
    if args.interleave > 1:
        time_interleaved(ctx, args, rec, factories, rowrec, save, log, fail,
                         after=lambda row: check_after(ctx, module, cfg, row, reference))
        ctx.release()
        return
    for name, factory in factories:
        rr = rowrec(name)
        if not timeable(rr):
            continue
        row = None
        status, msg, times, extra = 0, "", [], {}
        ctx.watchdog.arm(f"config {rec['name']}, row {name}, time mode", fail)
        try:
            row = factory()
            row_meta(rr, row)
            times, extra = time_row(ctx, row, args.warmup, args.iters, args.warmup_seconds)
        except Exception:
            status, msg = 2, traceback.format_exc(limit=6)
        status, msgs = ctx.agree(status, msg)
        if status:
            rr["time"] = {"status": "error", "error": msgs}
        else:
            rr["time"] = time_record(ctx, rr, times, extra)
            after = check_after(ctx, module, cfg, row, reference)
            if after is not None:
                rr["check_after"] = after
                if after["status"] != "pass":
                    log(f"  {name}: check after the timed steps {after['status']}: "
                        f"{brief(after.get('error') or after.get('worst') or after.get('note', ''))}")
        del row
        errs = ctx.release()
        ctx.watchdog.disarm()
        if errs:
            rr.setdefault("warnings", []).extend(errs)
        log_time(log, name, rr["time"])
        save()
    reference = None   # (the reference outputs freed before the next config)
    ctx.release()


def timeable(rr: dict) -> bool:
    """Whether a row's check lets it be timed; if not, its time record says why. A row that
    exists in time mode only is recorded as not checked."""
    check = rr.get("check", {}).get("status")
    if check in ("skipped", "error", "fail"):
        rr["time"] = {"status": "skipped", "reason": f"check: {check}"}
        return False
    if check is None:
        rr["check"] = {"status": "not run", "note": "the row exists in time mode only"}
    return True


def time_record(ctx: Ctx, rr: dict, times: list[float], extra: dict) -> dict:
    """rr["time"] from this rank's step times and time_row's `extra` (the slowest rank's)."""
    ranks = ctx.per_rank(times)
    slowest = ctx.max_over_ranks(ranks)
    # the iterations in order (the slowest rank's, and each rank's): a spread that is
    # two clusters rather than one shows here
    # host_us and queued_us (see time_row): the slowest rank's
    keys = [k for k in ("host_us", "queued_us", "queued_ok", "queued_steps") if k in extra]
    worst = [max(col) if k != "queued_ok" else min(col)
             for k, col in zip(keys, zip(*ctx.per_rank([float(extra[k]) for k in keys])))]
    more = {k: (bool(v) if k == "queued_ok" else int(v) if k == "queued_steps" else round(v, 1))
            for k, v in zip(keys, worst)}
    t = dict(status="ok", **stats(slowest), **more, iters_us=[round(x, 1) for x in slowest])
    if ctx.world > 1:
        t["rank_iters_us"] = [[round(x, 1) for x in r] for r in ranks]
    if rr.get("bytes"):
        sec = t["median_us"] * 1e-6
        rr["algbw_gbps"] = round(rr["bytes"] / sec / 1e9, 3)
        rr["busbw_gbps"] = round(rr["bytes"] * 2 * (ctx.world - 1) / ctx.world / sec / 1e9, 3)
    return t


def log_time(log, name: str, t: dict):
    log(f"  {name}: " + (f"median {t['median_us']:.1f} us (p10 {t['p10_us']:.1f}, "
                         f"p90 {t['p90_us']:.1f}; queued {t.get('queued_us', 0):.1f}"
                         f"{'' if t.get('queued_ok', True) else ' (host-bound)'}, host "
                         f"{t['host_us']:.1f} per step)" if t["status"] == "ok"
                         else f"time {t['status']}: {brief(t.get('error') or t.get('reason'))}"))


def take_turns(ctx: Ctx, made, per: list[int], times: dict, host: dict):
    """time_interleaved's rounds: in round i every row takes one untimed step (the first after
    another row's), then per[i] timed ones; appends the step times (us) to times[name] and the
    host's time to issue them to host[name]."""
    torch = ctx.torch
    for n in per:
        for name, _, row in made:
            ctx.sync()
            ctx.dist.barrier()
            row.step()
            if ctx.device.type == "cuda":
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
                h0 = time.perf_counter()
                for i in range(n):
                    starts[i].record()
                    row.step()
                    ends[i].record()
                if getattr(row, "finish", None):
                    row.finish()
                host[name] += (time.perf_counter() - h0) * 1e6
                torch.cuda.synchronize(ctx.device)
                times[name] += [s_.elapsed_time(e) * 1000.0 for s_, e in zip(starts, ends)]
            else:                       # developer mode: host clock
                for _ in range(n):
                    t0 = time.perf_counter()
                    row.step()
                    times[name].append((time.perf_counter() - t0) * 1e6)
            ctx.sync()


def check_after(ctx: Ctx, module, cfg: dict, row, reference) -> dict | None:
    """The row's outputs checked again after its timed steps (so in the form that was timed:
    Megatron's dropout at the timed probability, say): back to its initial state where it has a
    reset, one more step, then compared with the check's reference outputs, by the workload's
    post_check where it has one (it returns (elements wrong, what it found) or None for the plain
    comparison). None for a row that computes no result (a floor) or without a reference."""
    if reference is None or not getattr(row, "check", True):
        return None
    status, msg, out = 0, "", None
    try:
        if getattr(row, "reset", None):
            row.reset()
        row.step()
        if getattr(row, "finish", None):
            row.finish()
        ctx.sync()
        out = row.outputs()
    except Exception:
        status, msg = 2, traceback.format_exc(limit=6)
    status, msgs = ctx.agree(status, msg)
    if status:
        return {"status": "error", "error": msgs}
    hook = getattr(module, "post_check", None)
    found = None
    status, msg = 0, ""
    try:
        found = hook(cfg, ctx, out, reference[1], getattr(row, "tol", None) or {}, "time") if hook else None
    except Exception:
        status, msg = 2, traceback.format_exc(limit=4)
    status, msgs = ctx.agree(status, msg, collectives=False)
    if status:
        return {"status": "error", "error": msgs}
    if found is None:
        return check_against(ctx, out, reference, getattr(row, "tol", None))
    bad, detail = found
    total = int(ctx.reduce([float(bad)], "SUM")[0])
    return {"status": "pass" if total == 0 else "fail", "against": reference[0], "note": detail,
            **({"worst": f"{total} elements wrong: {detail}"} if total else {})}


def time_interleaved(ctx: Ctx, args, rec: dict, factories, rowrec, save, log, fail, after=None):
    """--interleave K: every row of the config made at once, each warmed up as time_row does,
    then timed in K rounds of iters / K steps, the rows taking turns (one untimed step before
    each turn), so that each row's steps are spread over the same stretch of the GPUs' clock
    and power drift instead of one row timed wholly before the next. queued_us last, row by row."""
    made = []
    for name, factory in factories:
        rr = rowrec(name)
        if not timeable(rr):
            continue
        status, msg, row = 0, "", None
        ctx.watchdog.arm(f"config {rec['name']}, row {name}, time mode (make, warm-up)", fail)
        try:
            row = factory()
            row_meta(rr, row)
            warm_up(ctx, row, args.warmup, args.warmup_seconds)
        except Exception:
            status, msg = 2, traceback.format_exc(limit=6)
        status, msgs = ctx.agree(status, msg)
        ctx.watchdog.disarm()
        if status:
            rr["time"] = {"status": "error", "error": msgs}
            del row
            continue
        made.append((name, rr, row))
    if not made:
        return
    k = max(1, min(args.interleave, args.iters))
    per = [args.iters // k + (1 if i < args.iters % k else 0) for i in range(k)]
    times = {name: [] for name, _, _ in made}
    host = {name: 0.0 for name, _, _ in made}   # microseconds the host took to issue the timed steps
    ctx.watchdog.arm(f"config {rec['name']}, {len(made)} rows interleaved in {k} rounds", fail)
    status, msg = 0, ""
    try:
        take_turns(ctx, made, per, times, host)
    except Exception:
        status, msg = 2, traceback.format_exc(limit=6)
    status, msgs = ctx.agree(status, msg)
    ctx.watchdog.disarm()
    if status:
        for _, rr, _ in made:
            rr["time"] = {"status": "error", "error": msgs, "note": "interleaved: every row's rounds stopped"}
        save()
        return
    for name, rr, row in made:
        ctx.watchdog.arm(f"config {rec['name']}, row {name}, queued steps", fail)
        if ctx.device.type == "cuda":
            extra = queued(ctx, row, args.iters, host[name] / max(args.iters, 1))
        else:
            extra = {"host_us": sum(times[name]) / max(len(times[name]), 1)}
        ctx.watchdog.disarm()
        rr["time"] = time_record(ctx, rr, times[name], extra)
        rr["time"]["interleaved"] = {"rounds": k, "rows": [n_ for n_, _, _ in made]}
        found = after(row) if after else None
        if found is not None:
            rr["check_after"] = found
        log_time(log, name, rr["time"])
        save()
    del made
    ctx.release()


def check_against(ctx: Ctx, out: dict, reference, tol) -> dict:
    """Compares this row's outputs with the reference on every rank; all ranks agree."""
    torch = ctx.torch
    ref_name, ref = reference
    status, msg, res = 0, "", []
    try:
        res = compare_local(torch, out, ref, tol)
    except Mismatch as e:
        status, msg = 1, str(e)
    except Exception:
        status, msg = 2, traceback.format_exc(limit=4)
    status, msgs = ctx.agree(status, msg, collectives=False)
    if status:
        return {"status": "fail" if status == 1 else "error", "against": ref_name, "error": msgs}
    maxes = ctx.reduce([v for r in res for v in (r[3], r[4], r[5])], "MAX")
    bads = ctx.reduce([float(r[6]) for r in res], "SUM")
    outputs, ok, worst = {}, True, ""
    for i, (name, rtol, atol, *_) in enumerate(res):
        o = {"max_abs": maxes[3 * i], "max_rel": maxes[3 * i + 1],
             "max_of_tolerance": maxes[3 * i + 2], "rtol": rtol, "atol": atol,
             "out_of_tolerance": int(bads[i])}
        outputs[name] = o
        if bads[i]:
            ok = False
            worst += f"{name}: {int(bads[i])} elements out of tolerance, max abs {o['max_abs']:.3g}, " \
                     f"max rel {o['max_rel']:.3g}; "
    return {"status": "pass" if ok else "fail", "against": ref_name, "outputs": outputs,
            **({"worst": worst.strip("; ")} if worst else {})}


def time_row(ctx: Ctx, row, warmup: int, iters: int, warmup_seconds: float = 0.0) -> tuple[list[float], dict]:
    """Per-iteration times on this rank, in microseconds, and two more figures (`extra`):
    host_us, the host's time to issue one step (Python, the library's host code, the launches;
    the timed loop never waits for the GPU, so a step that the host issues more slowly than the
    GPU runs it is timed from its first launch on, with the host's gaps in it), and queued_us,
    the GPU's own time per step: `iters` steps issued while the GPU sleeps, so that they run back
    to back with the host ahead (as in training, where the backward pass keeps the queue full).
    A row whose median is well above its queued_us was timed by its host path.

    Warm-up: `warmup` steps, then more until about `warmup_seconds` have passed (the same count
    on every rank), so that every row is timed at the clocks it settles to (GEMM-heavy overlapped
    rows slow their GPUs' clocks under the power they draw within a fraction of a second)."""
    torch = ctx.torch
    warm_up(ctx, row, warmup, warmup_seconds)
    if ctx.device.type == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        h0 = time.perf_counter()
        for i in range(iters):          # no host synchronisation inside the loop
            starts[i].record()
            row.step()
            ends[i].record()
        if getattr(row, "finish", None):
            row.finish()
        torch.cuda.synchronize(ctx.device)
        times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
        extra = queued(ctx, row, iters, (time.perf_counter() - h0) * 1e6 / max(iters, 1))
    else:                               # developer mode: host clock, gloo is synchronous
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            row.step()
            times.append((time.perf_counter() - t0) * 1e6)
        extra = {"host_us": sum(times) / max(len(times), 1)}
    return times, extra


def warm_up(ctx: Ctx, row, warmup: int, warmup_seconds: float):
    """time_row's warm-up: the row's reset, `warmup` steps, then more until about
    `warmup_seconds` have passed (the same count on every rank)."""
    dist = ctx.dist
    if getattr(row, "reset", None):
        row.reset()
    ctx.sync()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(warmup):
        row.step()
    ctx.sync()
    if warmup_seconds > 0:
        per_step = (time.perf_counter() - t0) / max(warmup, 1)
        more = ctx.reduce([math.ceil(max(warmup_seconds - per_step * warmup, 0.0) / max(per_step, 1e-6))], "MAX")[0]
        for _ in range(int(min(more, 100000))):
            row.step()
        ctx.sync()
    dist.barrier()


def queued(ctx: Ctx, row, iters: int, loop_us: float) -> dict:
    """queued_once(), and again with half the steps while the host did not get ahead and at
    least 10 steps remain: a step of many launches (the MoE pipeline's copies at 4 GPUs) fills
    CUDA's launch queue after some tens of steps, and the host then waits for the GPU.
    queued_steps says how many counted."""
    n = iters
    while True:
        r = queued_once(ctx, row, n, loop_us)
        r["queued_steps"] = n
        # every rank retries or none (the steps are collective)
        if ctx.reduce([1.0 if r["queued_ok"] else 0.0], "MIN")[0] > 0 or n < 20:
            return r
        n //= 2


def queued_once(ctx: Ctx, row, iters: int, loop_us: float) -> dict:
    """`iters` steps queued behind a sleeping kernel (time_row's queued_us and host_us). The
    sleep lasts twice what the timed loop took the host (`loop_us` per step) plus 2 ms, the same
    on every rank (one more, untimed, step is issued first); if the host still took longer to
    issue the steps (queued_ok false), queued_us has host gaps in it."""
    torch, dist = ctx.torch, ctx.dist
    sleep_us = ctx.reduce([2.0 * iters * loop_us + 2000.0], "MAX")[0]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    # cycles at 2 GHz (H100 / H200 boost clocks are 1.98 GHz): a rough length is enough
    torch.cuda._sleep(int(sleep_us * 2000))
    # one untimed step first: the ranks' sleeps end at different times (their clocks differ),
    # and the first collective after them waits for the last; timing it would count that wait
    # (Adam's bare all-reduce at 2^22 read 305.6 us a step so, against a 62.2 us median)
    row.step()
    start.record()
    h0 = time.perf_counter()
    for _ in range(iters):
        row.step()
    host = (time.perf_counter() - h0) * 1e6
    end.record()
    if getattr(row, "finish", None):
        row.finish()
    torch.cuda.synchronize(ctx.device)
    return {"host_us": host / max(iters, 1),
            "queued_us": start.elapsed_time(end) * 1000.0 / max(iters, 1),
            "queued_ok": host < sleep_us}


# -- the worker --------------------------------------------------------------------------------

def metadata(args, torch, device, world) -> dict:
    meta = {"date": utc_now(), "world": world, "device": device.type,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "host": socket.gethostname(), "python": sys.version.split()[0],
            "command": args.command or os.environ.get("COCONET_BENCH_COMMAND")
            or "torchrun ... " + " ".join(sys.argv),
            "worker_argv": sys.argv, "warmup": args.warmup, "warmup_seconds": args.warmup_seconds, "iters": args.iters,
            "interleave": args.interleave, "headline": args.headline, "rep": args.rep,
            "commit": os.environ.get("BENCH_COMMIT"),
            "quick": args.quick, "skip_coconetc": args.skip_coconetc,
            "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
            "nccl_root": os.environ.get("NCCL_ROOT")}
    if device.type == "cuda":
        meta["gpu"] = torch.cuda.get_device_name(device)
        meta["gpu_count"] = torch.cuda.device_count()
        try:
            v = torch.cuda.nccl.version()
            meta["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as e:
            meta["nccl"] = f"unknown ({e})"
        try:
            import subprocess
            meta["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.split()[0]
        except Exception:
            meta["driver"] = None
    else:
        meta["gpu"] = "none (CPU, gloo: developer run, timings meaningless)"
        meta["gpu_count"] = 0
        meta["nccl"] = "none (gloo)"
    return meta


def run_workload(name: str, ctx: Ctx, args, meta: dict):
    raw = {"schema": "coconet-bench-raw/1", "workload": name, "world": ctx.world,
           "status": "running", "meta": meta, "configs": []}
    path = raw_path(args.out, name, ctx.world, args.rep)
    # A workload whose worker died in one of its configs (mark_failed: "interrupted") goes on in
    # this worker from the configs it had not reached; every rank reads the file before rank 0
    # rewrites it (the first save comes after the ranks agreed below).
    prior = json.loads(path.read_text()) if path.exists() else None
    if prior and prior.get("status") == "interrupted":
        raw["configs"] = prior.get("configs", [])
        raw["interruptions"] = prior.get("interruptions", [])
    done = {c.get("name") for c in raw["configs"]}

    def save():
        if ctx.rank == 0:
            write_json(path, raw)

    def log(line):
        if ctx.rank == 0:
            print(f"bench: {line}", flush=True)

    def fail(msg):
        raw["status"], raw["error"] = "failed", msg
        save()

    status, msg, cfgs = 0, "", []
    try:
        sys.path.insert(0, str(HERE))
        module = importlib.import_module(f"workloads.{name}")
        cfgs = list(module.configs(ctx.world, args.quick))
        if args.headline:   # the headline's configs, each with its rows, peers and floors
            specs = {id(c): module.headline(c, ctx.world) for c in cfgs}
            cfgs = [dict(c, _headline=specs[id(c)]) for c in cfgs if specs[id(c)] is not None]
        if args.configs:
            keep = set(args.configs.split(","))   # names with '_' for ' ' match too (BENCH_ARGS splits at spaces)
            cfgs = [c for c in cfgs if c.get("name") in keep or str(c.get("name")).replace(" ", "_") in keep]
    except Exception:
        status, msg = 2, traceback.format_exc(limit=5)
    status, msgs = ctx.agree(status, msg, collectives=False)
    save()
    if status:
        raw["status"], raw["error"] = "failed", "; ".join(msgs)
        save()
        log(f"{name}: FAILED before its configs: {raw['error']}")
        return
    if not cfgs:
        raw["note"] = f"no {'headline ' if args.headline else ''}configs at {ctx.world} GPUs"
    for cfg in cfgs:
        if str(cfg.get("name")) in done:
            continue
        spec = cfg.pop("_headline", None)
        rec = {"name": str(cfg.get("name")), "params": {k: v for k, v in cfg.items() if k != "name"},
               "reference": None, "rows": [], **({"headline": spec} if spec else {})}
        raw["configs"].append(rec)
        save()   # (so that a worker dying in this config leaves it on record: mark_failed)
        log(f"{name} P={ctx.world} {rec['name']}")
        t0 = time.perf_counter()
        try:
            run_config(module, cfg, ctx, args, rec, save, log, fail)
        except OutOfStep as e:
            raw["status"] = "failed"
            raw["error"] = (f"config {rec['name']}: a row raised on some ranks only, so the "
                            f"process group may be out of step; the rest of this workload was "
                            f"not run: {'; '.join(e.args[0])}")
            save()
            log(f"{name}: FAILED: {brief(raw['error'])}")
            raise
        rec["seconds"] = round(time.perf_counter() - t0, 1)
        save()
    raw["status"] = "complete"
    raw["finished"] = utc_now()
    save()


def worker(args) -> int:
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    timeout = datetime.timedelta(seconds=args.pg_timeout)
    try:
        dist.init_process_group(backend, timeout=timeout,
                                device_id=device if device.type == "cuda" else None)
    except TypeError:   # an older PyTorch without device_id
        dist.init_process_group(backend, timeout=timeout)
    # torch.compile rows recompile per size; keep every size's graph.
    try:
        import torch._dynamo as dynamo
        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, max(64, getattr(dynamo.config, knob)))
    except Exception:
        pass
    build = {}
    if args.build and args.build.exists():
        build = json.loads(args.build.read_text())
    ctx = Ctx(args, torch, dist, device, build)
    meta = metadata(args, torch, device, ctx.world)
    meta["build"] = str(args.build) if args.build else None
    for name in workload_names(args.workloads):
        try:
            run_workload(name, ctx, args, meta)
        except OutOfStep:
            # Collectives may be pending that nothing will match: leave without waiting for
            # them. run.sh starts a new worker for the workloads not run yet.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(3)
    dist.barrier()
    dist.destroy_process_group()
    return 0


# -- helpers for run.sh (no torchrun) ------------------------------------------------------------

def pending(args) -> int:
    """Prints the workloads (comma list) whose result for --world is not written yet, or that a
    worker left "interrupted" (it died in one config; the others are still to run)."""
    def waiting(w):
        path = raw_path(args.out, w, args.world, args.rep)
        return not path.exists() or json.loads(path.read_text()).get("status") == "interrupted"
    todo = [w for w in workload_names(args.workloads) if waiting(w)]
    print(",".join(todo))
    return 0


def mark_failed(args) -> int:
    """Marks the results for --world of the workloads still "running" (the worker died in them),
    or with --absent those not started at all (the worker died before). A workload whose worker
    died inside a config it had started in that run becomes "interrupted": that config is
    recorded as failed and a new worker runs the configs after it (pending). One that died with
    no config of its own started fails as a whole, so every new worker makes progress."""
    for w in workload_names(args.workloads):
        path = raw_path(args.out, w, args.world, args.rep)
        raw = json.loads(path.read_text()) if path.exists() else None
        if args.absent:
            if raw is not None and raw.get("status") != "interrupted":
                continue   # (an interrupted one: the worker resuming it made no progress; it fails)
            raw = raw or {"schema": "coconet-bench-raw/1", "workload": w, "world": args.world,
                          "configs": [], "meta": {"date": utc_now(), "command": args.command
                                                  or os.environ.get("COCONET_BENCH_COMMAND")}}
        elif raw is None or raw.get("status") != "running":
            continue
        reason = args.reason + (f" (log: {args.log})" if args.log else "")
        last = (raw.get("configs") or [None])[-1]
        if args.again and not args.absent:
            # stopped from outside (a deadline): the config it was in is dropped, to run again
            if last is not None and "seconds" not in last and "error" not in last:
                raw["configs"].pop()
            raw.setdefault("interruptions", []).append({"config": last.get("name") if last else None,
                                                        "reason": reason, "again": True})
            raw["status"] = "interrupted"
            raw["error"] = f"stopped: {reason}"
            write_json(path, raw)
            print(f"{w} P={args.world}: stopped; {last.get('name') if last else 'its first config'} and the rest run next time")
            continue
        if not args.absent and last is not None and "seconds" not in last and "error" not in last:
            last["error"] = reason
            for r in last.get("rows", []):
                if r.get("time", {}).get("status") != "ok":
                    r["time"] = {"status": "error", "error": f"the worker died in this config: {reason}"}
            raw.setdefault("interruptions", []).append({"config": last.get("name"), "reason": reason})
            raw["status"] = "interrupted"
            raw["error"] = f"the worker died in config {last.get('name')}: {reason}"
            write_json(path, raw)
            print(f"{w} P={args.world}: interrupted in {last.get('name')}; the configs after it go on in a new worker")
            continue
        raw["status"] = "failed"
        raw["error"] = reason
        write_json(path, raw)
        print(f"{w} P={args.world}: marked failed: {raw['error']}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/coconet-bench-results")),
                    help="results folder (raw JSON goes to OUT/raw/)")
    ap.add_argument("--build", type=Path, help="build.py's JSON (libraries of the programs)")
    ap.add_argument("--workloads", help="comma list (default: every module in workloads/)")
    ap.add_argument("--configs", help="only these config names, comma-separated, '_' for ' ' (developer option)")
    ap.add_argument("--rows", help="only these rows, comma-separated, and the first (the reference) (developer option)")
    ap.add_argument("--check-repeats", type=int, default=1,
                    help="check each row compared with the reference this many times, each a fresh instance (developer option)")
    ap.add_argument("--headline", action="store_true",
                    help="the headline: each workload's headline configs with exactly their rows (the "
                         "program, every peer, the floors); --rows and --configs are refused")
    ap.add_argument("--rep", type=int, help="the K-th independent run of a headline (raw file WORKLOAD-pP-rK.json)")
    ap.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (default 10; quick 3)")
    ap.add_argument("--warmup-seconds", type=float, help="then warm up until about this long has passed "
                    "(default 1; quick 0): the GPUs' clocks settle under sustained load")
    ap.add_argument("--iters", type=int, help="timed iterations (default 50; quick 10)")
    ap.add_argument("--interleave", type=int, default=0, metavar="K",
                    help="time a config's rows in K rounds of iters/K steps, taking turns, instead of "
                         "one row after another (rows drifting with the GPUs' clocks compare at the same times)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: gloo on the host (developer runs of the peer rows)")
    ap.add_argument("--skip-coconetc", action="store_true", help="leave out the coconetc* rows")
    ap.add_argument("--row-timeout", type=float, default=900.0,
                    help="seconds one row (build, check or warm-up and timing) may take before "
                         "the worker gives up on it as hung (0: no limit)")
    ap.add_argument("--pg-timeout", type=float, default=600.0,
                    help="seconds a collective may wait before the process group gives up")
    ap.add_argument("--command", help="the command line to record (run.sh passes its own)")
    # run.sh helpers
    ap.add_argument("--pending", action="store_true", help="print workloads without a result for --world")
    ap.add_argument("--mark-failed", action="store_true", help="record a worker that died")
    ap.add_argument("--absent", action="store_true", help="with --mark-failed: those not started")
    ap.add_argument("--again", action="store_true",
                    help="with --mark-failed: the worker was stopped from outside; the config it was in runs again")
    ap.add_argument("--world", type=int, help="with --pending / --mark-failed")
    ap.add_argument("--reason", default="the worker exited before finishing")
    ap.add_argument("--log", help="with --mark-failed: the worker's log")
    args = ap.parse_args()
    if args.headline and (args.rows or args.configs):
        ap.error("--headline runs every headline row and config: --rows and --configs are refused")
    if args.warmup is None:
        args.warmup = 3 if args.quick else 10
    if args.warmup_seconds is None:
        args.warmup_seconds = 0.0 if args.quick else 0.25 if args.headline else 1.0
    if args.iters is None:
        args.iters = 10 if args.quick else 40 if args.headline else 50
    if args.pending:
        return pending(args)
    if args.mark_failed:
        return mark_failed(args)
    return worker(args)


if __name__ == "__main__":
    sys.exit(main())
