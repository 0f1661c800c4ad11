#!/usr/bin/env python3
"""Turns the benchmark results into a report: RESULTS/results.md and RESULTS/plots/*.png.

    python3 tools/bench/gpu/report.py --results docs/benchmarks/gpu

Reads every RESULTS/raw/*.json (bench.py) and RESULTS/build.json (build.py), whatever
workloads they hold. The markdown has, per workload and world size, a table of median times
(config rows x row columns), the speed-up over eager and the time over the floor where the
workload has them, bus bandwidth, optimizer state per GPU, the checks, and the failures; then
issue 5's targets, each MET, MISSED or NOT MEASURED with the measured ratios; then the
compiler's times. Plots: time against size per row, log-log, one per workload and world size.
Every file names the GPU, the NCCL version, the date and the command. Nothing is estimated:
a number that was not measured is not shown, and a target without data is NOT MEASURED.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

EAGER, FLOOR_DEFAULT = "eager", "nccl_allreduce"
TOO_SLOW_TOL = 1.0   # "no slower": ratio >= 1.0 exactly (medians), no allowance


# -- loading -------------------------------------------------------------------------------------

def load(results: Path):
    raws = []
    for p in sorted((results / "raw").glob("*.json")):
        try:
            r = json.loads(p.read_text())
            r["_file"] = p.name
            raws.append(r)
        except (OSError, json.JSONDecodeError) as e:
            print(f"report: skipping {p}: {e}", file=sys.stderr)
    build = None
    if (results / "build.json").exists():
        build = json.loads((results / "build.json").read_text())
    return raws, build


def rows_of(cfg: dict) -> dict[str, dict]:
    return {r["name"]: r for r in cfg.get("rows", [])}


def median(row: dict | None) -> float | None:
    if row and row.get("time", {}).get("status") == "ok":
        return row["time"]["median_us"]
    return None


def queued(row: dict | None) -> float | None:
    """The row's GPU time per step with the host ahead (bench.py's queued_us), where the host got
    ahead of the sleep (queued_ok) and the step did work (a one-rank all-reduce queues nothing)."""
    t = (row or {}).get("time") or {}
    if t.get("status") == "ok" and t.get("queued_ok") and (t.get("queued_us") or 0) > 0:
        return t["queued_us"]
    return None


def row_problem(row: dict | None) -> str | None:
    """Why a row has no time (None when it has one)."""
    if row is None:
        return "not run"
    c = row.get("check", {}).get("status")
    t = row.get("time", {}).get("status")
    if t == "ok":
        return None
    if c == "fail":
        return "check FAILED"
    if c == "error":
        return "error"
    if c == "skipped":
        return "skipped"
    if t == "error":
        return "error (timing)"
    return "not timed"


def floor_row(raw: dict) -> str | None:
    """The row that computes a floor (check=False), if the workload has one."""
    for cfg in raw.get("configs", []):
        for r in cfg.get("rows", []):
            if r.get("checked") is False:
                return r["name"]
    return None


def column_order(raw: dict) -> list[str]:
    names = []
    for cfg in raw.get("configs", []):
        for r in cfg.get("rows", []):
            if r["name"] not in names:
                names.append(r["name"])
    return names


def brief(msg, limit: int = 220) -> str:
    """One line of an error (a traceback's last line, per rank when they differ)."""
    if isinstance(msg, list):
        parts = []
        for m in msg:
            b = brief(m, limit)
            tail = b.split(": ", 1)[1] if b.startswith("rank ") and ": " in b else b
            if not any(tail in p for p in parts):
                parts.append(b)
        return "; ".join(parts)[:limit * 2]
    lines = [l.strip() for l in str(msg or "").splitlines() if l.strip()]
    if not lines:
        return ""
    head = lines[0].split(": ", 1)[0] + ": " if lines[0].startswith("rank ") and len(lines) > 1 else ""
    text = head + lines[-1]
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- formatting ----------------------------------------------------------------------------------

def fmt_us(v: float | None) -> str:
    if v is None:
        return "—"
    if v < 10:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:,.0f}"


def fmt_ratio(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}x"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def machine_line(meta: dict) -> str:
    return (f"{meta.get('gpu', '?')} (x{meta.get('world', '?')} of {meta.get('gpu_count', '?')}), "
            f"NCCL {meta.get('nccl', '?')}, PyTorch {meta.get('torch', '?')}, {meta.get('date', '?')}")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


# -- one workload at one world size ---------------------------------------------------------------

def rows_order(raw: dict) -> str:
    """How the run line says the rows were timed: taking turns (--interleave), or one after
    another, each at the power state its own warm-up and the rows before it left the GPUs in
    (session 59: two equal layer norm kernels 10% apart so); nothing for a CPU run or one row."""
    meta = raw.get("meta", {})
    if (meta.get("interleave") or 0) > 1:
        return f", the rows taking turns in {meta['interleave']} rounds"
    most = max((len(c.get("rows", [])) for c in raw.get("configs", [])), default=0)
    if meta.get("device") == "cpu" or most < 2:
        return ""
    return (", the rows one after another (each timed at the power state its own warm-up and the rows"
            " before it left the GPUs in: compare close rows from a run with --interleave)")


def workload_section(raw: dict, plot: str | None) -> list[str]:
    meta = raw.get("meta", {})
    w, P = raw.get("workload"), raw.get("world")
    lines = [f"### {w}, {P} GPU{'s' if P != 1 else ''}", ""]
    lines.append(f"{machine_line(meta)}; `{meta.get('command', '?')}`; "
                 f"{meta.get('warmup', '?')} warm-up iterations"
                 + (f" then more to {meta['warmup_seconds']:g} s" if meta.get("warmup_seconds") else "")
                 + f" + {meta.get('iters', '?')} timed iterations"
                 + rows_order(raw)
                 + ("; **quick run: sizes and iterations reduced, not results**" if meta.get("quick") else "")
                 + ("; **CPU developer run: timings meaningless**" if meta.get("device") == "cpu" else ""))
    lines.append("")
    if raw.get("status") != "complete":
        lines += [f"**{str(raw.get('status', '?')).upper()}**: {brief(raw.get('error'), 600)}", ""]
    for i in raw.get("interruptions", []):   # a worker died in that config; the rest ran in a new one
        lines += [f"**Worker died** in config {i.get('config')} (its rows without a time are errors; "
                  f"the configs after it ran in a new worker): {brief(i.get('reason'), 300)}", ""]
    cfgs = raw.get("configs", [])
    if not cfgs:
        lines += [raw.get("note", "No configs ran."), ""]
        return lines
    cols = column_order(raw)
    floor = floor_row(raw)
    has_eager = EAGER in cols

    # Median times.
    body = []
    for cfg in cfgs:
        rs = rows_of(cfg)
        body.append([cfg["name"]] + [fmt_us(median(rs.get(c))) if median(rs.get(c)) is not None
                                     else (row_problem(rs.get(c)) or "—") for c in cols])
    lines += ["Median time per step (microseconds; p10-p90 in the raw JSON):", ""]
    lines += table(["config"] + cols, body) + [""]

    # Ratios.
    def ratio_table(title, base, invert):
        body = []
        for cfg in cfgs:
            rs = rows_of(cfg)
            b = median(rs.get(base))
            cells = []
            for c in cols:
                if c == base:
                    continue
                m = median(rs.get(c))
                cells.append(fmt_ratio((b / m if invert else m / b) if b and m else None))
            body.append([cfg["name"]] + cells)
        return [title, ""] + table(["config"] + [c for c in cols if c != base], body) + [""]

    if has_eager:
        lines += ratio_table(f"Speed-up over {EAGER} (its time / the row's time; above 1 is faster):",
                             EAGER, True)
    if floor:
        lines += ratio_table(f"Time over the floor `{floor}` (the row's time / the floor's; 1 is "
                             f"the floor):", floor, False)
    if not has_eager and not floor and len(cols) > 1:
        ref = next((c.get("reference") for c in cfgs if c.get("reference")), None)
        if ref:
            lines += ratio_table(f"Speed-up over the reference `{ref}` (its time / the row's time):",
                                 ref, True)

    # Rows still drifting in their timed steps (the median of the last 10 against the first 10),
    # from the per-step times bench.py keeps: their median depends on where the clocks were.
    drifting = []
    for cfg in cfgs:
        for c in cols:
            t = ((rows_of(cfg).get(c) or {}).get("time") or {}).get("iters_us") or []
            if len(t) >= 20:
                a, b = statistics.median(t[:10]), statistics.median(t[-10:])
                if a > 0 and abs(b / a - 1) > 0.03:
                    drifting.append(f"{cfg['name']} `{c}` {a:,.1f} -> {b:,.1f} us")
    if drifting:
        lines += ["Rows whose timed steps drifted by more than 3% (median of the first 10 -> of the "
                  "last 10; tools/bench/gpu/drift.py tabulates every row): " + "; ".join(drifting) + ".", ""]

    # The GPU's own time per step with the host ahead, and the host's time to issue a step
    # (bench.py's time_row): where the median is well above the queued time, the row was timed
    # by its host path.
    def q_cell(r):
        t = (r or {}).get("time") or {}
        if t.get("queued_us") is None:
            return "—"
        return (f"{fmt_us(t['queued_us'])}{'' if t.get('queued_ok', True) else '*'} / "
                f"{fmt_us(t['host_us'])}")
    if any(((rows_of(cfg).get(c) or {}).get("time") or {}).get("queued_us") is not None
           for cfg in cfgs for c in cols):
        body = [[cfg["name"]] + [q_cell(rows_of(cfg).get(c)) for c in cols] for cfg in cfgs]
        lines += ["GPU time per step with the host ahead (steps queued behind a sleeping kernel) / "
                  "the host's time to issue a step, microseconds (* the host did not get ahead):", ""]
        lines += table(["config"] + cols, body) + [""]

    # Bus bandwidth.
    bw_cols = [c for c in cols if any(rows_of(cfg).get(c, {}).get("busbw_gbps") for cfg in cfgs)]
    if bw_cols:
        body = [[cfg["name"]] + [
            f"{rows_of(cfg)[c]['busbw_gbps']:.1f}" if rows_of(cfg).get(c, {}).get("busbw_gbps") else "—"
            for c in bw_cols] for cfg in cfgs]
        lines += ["Bus bandwidth of the all-reduced bytes, 2(P-1)/P x bytes / median time (GB/s):", ""]
        lines += table(["config"] + bw_cols, body) + [""]

    # Optimizer state.
    st_cols = [c for c in cols if any(rows_of(cfg).get(c, {}).get("state_bytes") for cfg in cfgs)]
    if st_cols:
        body = [[cfg["name"]] + [fmt_bytes(rows_of(cfg).get(c, {}).get("state_bytes")) for c in st_cols]
                for cfg in cfgs]
        lines += ["Optimizer state per GPU:", ""] + table(["config"] + st_cols, body) + [""]

    # Checks.
    body = []
    for cfg in cfgs:
        rs = rows_of(cfg)
        cells = []
        for c in cols:
            chk = rs.get(c, {}).get("check", {})
            st = chk.get("status", "—")
            if st in ("pass", "fail") and chk.get("outputs"):
                frac = max(o.get("max_of_tolerance", 0) for o in chk["outputs"].values())
                st += f" ({frac:.2g} of tol)"
            cells.append(st)
        body.append([cfg["name"]] + cells)
    lines += [f"Checks against the reference (`{cfgs[0].get('reference') or '—'}`; the largest "
              f"error as a fraction of the row's tolerance, over all outputs and ranks):", ""] + table(["config"] + cols, body) + [""]

    # Failures.
    fails = []
    for cfg in cfgs:
        if cfg.get("error"):
            fails.append(f"- {cfg['name']}: {brief(cfg['error'], 400)}")
        for r in cfg.get("rows", []):
            for part in ("check", "time"):
                d = r.get(part, {})
                if d.get("status") in ("error", "fail") and (d.get("error") or d.get("worst")):
                    fails.append(f"- {cfg['name']}, {r['name']} ({part}): "
                                 f"{brief(d.get('error') or d.get('worst'), 400)}")
    if fails:
        lines += ["Failures:", ""] + fails + [""]
    notes = {}
    for cfg in cfgs:
        for r in cfg.get("rows", []):
            if r.get("note"):
                notes.setdefault(r["name"], r["note"])
    if notes:
        lines += ["Rows: " + "; ".join(f"`{k}`: {v}" for k, v in notes.items()) + ".", ""]
    if plot:
        lines += [f"![{w}, {P} GPUs](plots/{plot})", ""]
    return lines


# -- plots -----------------------------------------------------------------------------------------

def plot_workload(raw: dict, folder: Path) -> list[str]:
    """Time (and bus bandwidth where there is one) against size, per row; returns file names."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    cfgs = raw.get("configs", [])
    if not cfgs:
        return []
    meta = raw.get("meta", {})
    w, P = raw.get("workload"), raw.get("world")
    xs = [c.get("params", {}).get("x") for c in cfgs]
    numeric = all(isinstance(x, (int, float)) and x > 0 for x in xs) and len(set(xs)) == len(xs)
    xlabel = cfgs[0].get("params", {}).get("x_label", "size") if numeric else "config"
    if not numeric:
        xs = list(range(len(cfgs)))
    files = []
    for kind in ("time", "busbw"):
        fig, ax = plt.subplots(figsize=(8, 5))
        drawn = False
        for name in column_order(raw):
            pts = []
            for x, cfg in zip(xs, cfgs):
                r = rows_of(cfg).get(name)
                if not r or r.get("time", {}).get("status") != "ok":
                    continue
                t = r["time"]
                if kind == "time":
                    pts.append((x, t["median_us"], t["p10_us"], t["p90_us"]))
                elif r.get("busbw_gbps"):
                    pts.append((x, r["busbw_gbps"], None, None))
            if not pts:
                continue
            drawn = True
            px = [p[0] for p in pts]
            ax.plot(px, [p[1] for p in pts], marker="o", label=name)
            if kind == "time":
                ax.fill_between(px, [p[2] for p in pts], [p[3] for p in pts], alpha=0.15)
        if not drawn:
            plt.close(fig)
            continue
        if numeric:
            ax.set_xscale("log", base=2)
        else:
            ax.set_xticks(xs)
            ax.set_xticklabels([c["name"] for c in cfgs], rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("median time per step (us; band: p10-p90)" if kind == "time"
                      else "bus bandwidth (GB/s)")
        ax.set_title(f"{w}, {P} GPUs: {meta.get('gpu', '?')}, NCCL {meta.get('nccl', '?')}",
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.text(0.01, 0.01, f"{meta.get('date', '?')}  {meta.get('command', '?')}", fontsize=6,
                 ha="left", va="bottom")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        name = f"{w}-p{P}.png" if kind == "time" else f"{w}-p{P}-busbw.png"
        folder.mkdir(parents=True, exist_ok=True)
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        shrink_png(folder / name)
        files.append(name)
    return files


def shrink_png(path: Path) -> bool:
    """Rewrites a plot's PNG in at most 256 colours on white, the figures' background (Pillow, which
    matplotlib brings): about a third of the bytes, the same picture to the eye. Every result
    folder's plots go with the repository to each GPU run, whose copy is limited (64 MiB), and the
    RGBA plots (85 KB on average) had grown to half of the tracked bytes. Returns False (the file
    as saved) without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return False
    with Image.open(path) as im:
        rgba = im.convert("RGBA")
        opaque = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
        small = opaque.convert("RGB").quantize(colors=256)
    small.save(path, optimize=True)
    return True


# -- targets -----------------------------------------------------------------------------------------

# The workload names -> the workload modules that may measure them (first found wins).
ALIASES = {"megatron_row": ("megatron_row", "megatron"), "decode_gemv": ("decode_gemv", "gemv"),
           "dlrm_embedding": ("dlrm_embedding", "embedding"), "moe_gemm": ("moe_gemm", "moe"),
           "pipeline": ("pipeline",), "allreduce": ("allreduce",), "adam": ("adam",),
           "lamb": ("lamb",)}


class Results:
    """Lookup of rows by workload (the issue's name or the module's), world size and config."""

    def __init__(self, raws):
        self.by = {(r.get("workload"), r.get("world")): r for r in raws}

    def module(self, workload) -> str:
        for name in ALIASES.get(workload, (workload,)):
            if any(w == name for (w, _) in self.by):
                return name
        return workload

    def raw(self, workload, world):
        return self.by.get((self.module(workload), world))

    def worlds(self, workload) -> list[int]:
        name = self.module(workload)
        return sorted(P for (w, P) in self.by if w == name)

    def absent(self, workload, world, label) -> dict:
        """A point for a required config that has no result, saying why."""
        raw = self.raw(workload, world)
        name = self.module(workload)
        if raw is None:
            why = f"{name} not run at {world} GPUs"
        elif raw.get("status") not in ("complete", "running"):
            why = f"{name} at {world} GPUs {raw.get('status')}: {brief(raw.get('error'), 120)}"
        else:
            why = "config not in the results"
        return {"label": label, "value": None, "bad": False, "why": why}

    def configs(self, workload, world, pred=lambda p: True) -> list[dict]:
        raw = self.raw(workload, world)
        return [c for c in (raw or {}).get("configs", []) if pred(c.get("params", {}))]


def tokens(p: dict) -> int | None:
    """B*S of a config: "T", "tokens" or "BS", else "B" x "S"."""
    for k in ("T", "tokens", "BS"):
        if isinstance(p.get(k), int):
            return p[k]
    if isinstance(p.get("B"), int) and isinstance(p.get("S"), int):
        return p["B"] * p["S"]
    return None


def point(cfg: dict, num: str, den: str, label: str, time=median) -> dict:
    """ratio = time(num) / time(den) at one config (the medians, or another figure of the rows:
    `time`), or why there is none. A coconetc row that failed its check counts against the
    target."""
    rs = rows_of(cfg)
    a, b = time(rs.get(num)), time(rs.get(den))
    pr = {"label": label, "value": None, "bad": False, "why": None}
    if a is not None and b is not None:
        pr["value"] = a / b
        return pr
    why = []
    if a is None:
        problem = row_problem(rs.get(num)) or "no such figure"
        pr["bad"] = problem == "check FAILED"
        why.append(f"{num}: {problem}")
    if b is None:
        why.append(f"{den}: {row_problem(rs.get(den)) or 'no such figure'}")
    pr["why"] = ", ".join(why)
    return pr


def best_point(cfg: dict, den: str, label: str, prefix: str = "coconetc", time=median) -> dict:
    """point() of the fastest row named `prefix`* that did not fail its check, naming it
    ("row"), with the row named `prefix` itself (the program's own schedule) beside it where
    another row is faster ("default": its name and ratio); where none has a time, why not (bad when one
    of them failed its check)."""
    rs = rows_of(cfg)
    names = [n for n in rs if n.startswith(prefix)]
    timed = [n for n in names if time(rs[n]) is not None
             and rs[n].get("check", {}).get("status") != "fail"]
    if timed:
        best = min(timed, key=lambda n: time(rs[n]))
        pr = dict(point(cfg, best, den, label, time), row=best)
        if best != prefix and prefix in timed:
            pr["default"] = (prefix, point(cfg, prefix, den, label, time)["value"])
        return pr
    if not names:
        return point(cfg, prefix, den, label, time)
    pr = point(cfg, names[0], den, label, time)
    pr["bad"] = any(row_problem(rs[n]) == "check FAILED" for n in names)
    def absent_why(r):
        t = r.get("time") or {}
        if time is queued and t.get("status") == "ok" and t.get("queued_ok") is False:
            return "the host did not get ahead of the queued steps"
        return row_problem(r) or "no such figure"
    why = [f"{n}: {absent_why(rs[n])}" for n in names]
    if time(rs.get(den)) is None:
        why.append(f"{den}: {row_problem(rs.get(den)) or 'no such figure'}")
    pr["why"] = ", ".join(why)
    return pr


def verdict(points: list[dict], ok, show, expected: int | None = None) -> tuple[str, str]:
    """MET when every expected point was measured and passes `ok`; MISSED when a measured one
    fails it (or the generated program failed its check); NOT MEASURED otherwise."""
    measured = [p for p in points if p["value"] is not None]
    failing = [p for p in measured if not ok(p["value"])] + [p for p in points if p["bad"]]
    missing = [p for p in points if p["value"] is None and not p["bad"]]
    n_expected = expected if expected is not None else len(points)
    absent = max(0, n_expected - len(points))
    def shown(p):
        text = f"{p['label']}: {show(p['value'])}"
        if p.get("row"):
            # the fastest row, and the program's own schedule where that is another row
            default = f"; {p['default'][0]} {show(p['default'][1])}" if p.get("default") else ""
            text += f" ({p['row']}{default})"
        return text
    parts = [", ".join(shown(p) for p in measured)] if measured else []
    if failing:
        parts.append("failing: " + ", ".join(p["label"] + (f" ({p['why']})" if p["bad"] else "")
                                             for p in failing))
    if missing or absent:
        miss = [f"{p['label']} ({p['why']})" for p in missing]
        if absent:
            miss.append(f"{absent} configs not in the results")
        parts.append("not measured: " + ", ".join(miss))
    text = "; ".join(x for x in parts if x) or "no data"
    if failing:
        return "MISSED", text
    if missing or absent or not measured:
        return "NOT MEASURED", text
    return "MET", text


def speedup(v):
    return f"{1 / v:.2f}x"


def times(v):
    return f"{v:.2f}x"


def targets(res: Results, build: dict | None) -> list[tuple[str, str, str]]:
    """(target, status, measured) for each of issue 5's targets."""
    out = []
    pow2 = lambda n: f"2^{int(math.log2(n))}" if n and n & (n - 1) == 0 else str(n)

    # Adam and LAMB at 4 GPUs.
    for w in ("adam", "lamb"):
        want = [1 << e for e in (20, 22, 24, 26, 28)]
        cfg_of = {c["params"].get("N"): c for c in res.configs(w, 4)}
        big = [best_point(cfg_of[n], EAGER, pow2(n)) if n in cfg_of else
               res.absent(w, 4, pow2(n)) for n in want if n >= 1 << 24]
        allp = [best_point(cfg_of[n], EAGER, pow2(n)) if n in cfg_of else
                res.absent(w, 4, pow2(n)) for n in want]
        out.append((f"{w}, 4 GPUs: best coconetc row >= 1.4x faster than eager at N >= 2^24",
                    *verdict(big, lambda v: 1 / v >= 1.4, speedup)))
        out.append((f"{w}, 4 GPUs: best coconetc row no slower than eager at N = 2^20..2^28",
                    *verdict(allp, lambda v: v <= TOO_SLOW_TOL, speedup)))
        floor = [best_point(cfg_of[n], "nccl_allreduce", pow2(n)) if n in cfg_of else
                 res.absent(w, 4, pow2(n)) for n in want]
        out.append((f"{w}, 4 GPUs: best coconetc row within 1.15x of the NCCL all-reduce of the "
                    f"gradients", *verdict(floor, lambda v: v <= 1.15, times)))
        # The same by GPU time with the host ahead (bench.py's queued_us), where the run has it:
        # PyTorch's host path sets the all-reduce's median at small sizes (session 24).
        if any(queued(r) is not None for c in cfg_of.values() for r in rows_of(c).values()):
            floor_q = [best_point(cfg_of[n], "nccl_allreduce", pow2(n), time=queued) if n in cfg_of else
                       res.absent(w, 4, pow2(n)) for n in want]
            out.append((f"{w}, 4 GPUs: the same by GPU time with the host ahead (queued steps)",
                        *verdict(floor_q, lambda v: v <= 1.15, times)))
        pts = []
        for n in want:
            c = cfg_of.get(n)
            rs = rows_of(c) if c else {}
            a = rs.get("coconetc", {}).get("state_bytes")
            b = rs.get(EAGER, {}).get("state_bytes")
            pts.append({"label": pow2(n), "value": a / b if a and b else None, "bad": False,
                        "why": "no state_bytes recorded"} if c else res.absent(w, 4, pow2(n)))
        out.append((f"{w}, 4 GPUs: optimizer state per GPU 1/P (= 0.25) of eager's",
                    *verdict(pts, lambda v: v <= 0.25 * 1.001, lambda v: f"{v:.3f}")))

    # Megatron row-parallel layer.
    w = "megatron_row"
    combos = [(P, H, dt) for P in (2, 4) for H in (4096, 8192, 12288) for dt in ("bf16", "f16")]
    for title, den, ok, show in (
            ("megatron_row, 2 and 4 GPUs, B*S = 8192, H = 4096/8192/12288, bf16 and f16: "
             "best coconetc row >= 1.3x faster than eager", EAGER, lambda v: 1 / v >= 1.3, speedup),
            ("megatron_row, same shapes: best coconetc row faster than async TP", "async_tp",
             lambda v: v < 1.0, speedup)):
        pts = []
        for P, H, dt in combos:
            cs = res.configs(w, P, lambda p, H=H, dt=dt: tokens(p) == 8192 and p.get("H") == H
                             and str(p.get("dtype", "")).lower() == dt)
            label = f"P={P} H={H} {dt}"
            pts += [best_point(c, den, label) for c in cs] or [res.absent(w, P, label)]
        out.append((title, *verdict(pts, ok, show)))
    pts, small = [], False
    for P in (2, 4):
        cs = res.configs(w, P)
        for c in cs:
            t = tokens(c.get("params", {}))
            small = small or (t is not None and t <= 64)
            pts.append(best_point(c, EAGER, f"P={P} {c['name']}"))
        if not cs:
            pts.append(res.absent(w, P, f"P={P}"))
    status, text = verdict(pts, lambda v: v <= TOO_SLOW_TOL, speedup)
    if status == "MET" and not small:
        status, text = "NOT MEASURED", text + "; no decode shape (B*S <= 64) in the results"
    out.append(("megatron_row, 2 and 4 GPUs: best coconetc row never slower than eager at any shape "
                "(decode B*S = 1..64 included)", status, text))

    # The all-reduce alone, at every world size measured (2 or more GPUs).
    w = "allreduce"
    sizes = [(64 << 10) * 4 ** i for i in range(8)]
    pts_bw, pts_small = [], []
    worlds = [P for P in res.worlds(w) if P >= 2] or [2, 4]
    for P in worlds:
        cfg_of = {c["params"].get("bytes"): c for c in res.configs(w, P)}
        for b in sizes:
            label = f"P={P} {fmt_bytes(b)}"
            p = best_point(cfg_of[b], "nccl_allreduce", label) if b in cfg_of else \
                res.absent(w, P, label)
            pts_bw.append(p)
            if b <= 256 << 10:
                pts_small.append(p)
    out.append(("allreduce: best coconetc row's bus bandwidth >= NCCL's at every size "
                "64 KiB..1 GiB (time ratio coconetc / NCCL <= 1)",
                *verdict(pts_bw, lambda v: v <= 1.0, times)))
    out.append(("allreduce: best coconetc row at most half NCCL's time at <= 256 KiB",
                *verdict(pts_small, lambda v: v <= 0.5, times)))

    # Pipeline boundary, 4 GPUs.
    pts = [best_point(c, EAGER, c["name"]) for c in res.configs("pipeline", 4)]
    out.append(("pipeline, 4 GPUs in two groups: best coconetc row >= 1.3x faster than eager",
                *verdict(pts or [res.absent("pipeline", 4, "P=4")], lambda v: 1 / v >= 1.3, speedup)))

    # The SC'24 operators: >= 20% less time than the unfused path.
    for w, what in (("decode_gemv", "GEMV + all-reduce"), ("dlrm_embedding", "embedding + all-to-all"),
                    ("moe_gemm", "GEMM + all-to-all")):
        pts = []
        for P in [P for P in res.worlds(w) if P >= 2] or [2]:
            cs = res.configs(w, P)
            for c in cs:
                base = "unfused" if "unfused" in rows_of(c) else EAGER
                pts.append(best_point(c, base, f"P={P} {c['name']}"
                                 + ("" if base == "unfused" else " (vs eager)")))
            if not cs:
                pts.append(res.absent(w, P, f"P={P}"))
        out.append((f"{w}: {what}, best coconetc row >= 20% less time than the unfused path",
                    *verdict(pts, lambda v: v <= 0.8, lambda v: f"{(1 - v) * 100:.0f}% less")))
        # The same by GPU time with the host ahead, where the run has it (a row whose host did not
        # get ahead of the queued steps has none: bench.py's queued_ok).
        cs_all = [(P, c) for P in res.worlds(w) if P >= 2 for c in res.configs(w, P)]
        if any(queued(r) is not None for _, c in cs_all for r in rows_of(c).values()):
            pts_q = []
            for P, c in cs_all:
                base = "unfused" if "unfused" in rows_of(c) else EAGER
                pts_q.append(best_point(c, base, f"P={P} {c['name']}" + ("" if base == "unfused" else " (vs eager)"),
                                        time=queued))
            out.append((f"{w}: the same by GPU time with the host ahead (queued steps)",
                        *verdict(pts_q, lambda v: v <= 0.8, lambda v: f"{(1 - v) * 100:.0f}% less")))

    # The compiler.
    samples = (build or {}).get("samples") or []
    pts = [{"label": s["sample"].split("/")[-1], "value": s.get("median_ms") if not s.get("error") else None,
            "bad": False, "why": brief(s.get("error"), 80)} for s in samples]
    out.append(("coconetc compile of every sample < 100 ms (median of the repeats)",
                *verdict(pts or [{"label": "samples", "value": None, "bad": False, "why": "no build.json"}],
                         lambda v: v < 100, lambda v: f"{v:.0f} ms")))
    progs = (build or {}).get("programs") or {}
    built = {k: r for k, r in progs.items() if r.get("build_s") is not None and not r.get("error")}
    failed = [k for k, r in progs.items() if r.get("error")]
    if built:
        ts = sorted(r["build_s"] for r in built.values())
        out.append(("nvcc build time reported", "MET",
                    f"{len(built)} programs built, {ts[0]:.1f}-{ts[-1]:.1f} s each "
                    f"({(build or {}).get('parallel_builds', '?')} at once)"
                    + (f"; {len(failed)} failed: {', '.join(failed)}" if failed else "")
                    + "; see the compiler section"))
    else:
        out.append(("nvcc build time reported", "NOT MEASURED", "no program was built"))
    return out


# -- the report ----------------------------------------------------------------------------------------

def compiler_section(build: dict | None) -> list[str]:
    if not build:
        return ["## Compiler", "", "No build.json: nothing was compiled.", ""]
    lines = ["## Compiler", "",
             f"{build.get('coconetc_version') or build.get('coconetc')}; {build.get('nvcc') or 'nvcc ?'}; "
             f"NCCL {build.get('nccl') or '?'} ({build.get('nccl_root')}); GPU {build.get('gpu') or '?'}; "
             f"{build.get('date')}; `{build.get('command')}`; {build.get('cpu', '')}", ""]
    if build.get("samples"):
        lines += [f"`coconetc compile` of every sample ({build.get('samples_note', '')}):", ""]
        lines += table(["sample", "schedule", "median ms", "max ms", "error"],
                       [[s["sample"], s.get("schedule") or "—", f"{s.get('median_ms', 0):.1f}",
                         f"{s.get('max_ms', 0):.1f}", brief(s.get("error"), 120) or ""]
                        for s in build["samples"]]) + [""]
    progs = build.get("programs") or {}
    if progs:
        lines += [f"Benchmark programs: coconetc compile (ms), CMake configure and nvcc build (s), "
                  f"{build.get('parallel_builds', '?')} builds at once, -j "
                  f"{build.get('build_jobs_each', '?')} each:", ""]
        lines += table(["key", "source", "schedule", "flags", "compile ms", "configure s",
                        "build s", "status"],
                       [[k, r.get("source", "?"), r.get("schedule") or "none",
                         " ".join(r.get("flags") or []) or "—",
                         str(r.get("compile_ms", "—")), str(r.get("configure_s", "—")),
                         str(r.get("build_s", "—")),
                         "ok" if not r.get("error") else brief(r["error"], 160)]
                        for k, r in sorted(progs.items())]) + [""]
    if build.get("import_errors"):
        lines += ["Workloads that did not import: " + "; ".join(
            f"{k}: {brief(v, 200)}" for k, v in build["import_errors"].items()), ""]
    return lines


def report(results: Path) -> str:
    raws, build = load(results)
    res = Results(raws)
    plots = results / "plots"
    lines = ["# coconetc GPU benchmarks", "",
             "Generated by `tools/bench/gpu/report.py` from the raw results in `raw/` and "
             "`build.json` (tools/bench/gpu/README.md says how they are measured). Times are "
             "medians over the timed iterations, each between two CUDA events on the current "
             "stream with no host synchronisation inside the loop, the slowest rank counting "
             "per iteration.", ""]
    machines = {}
    for r in raws:
        m = r.get("meta", {})
        key = (m.get("gpu"), m.get("nccl"), m.get("torch"), m.get("command"))
        machines.setdefault(key, []).append(f"{r.get('workload')} P={r.get('world')} ({m.get('date', '?')})")
    if machines:
        lines += ["Runs:", ""]
        for (gpu, nccl, torch_v, cmd), what in machines.items():
            lines.append(f"- {gpu}, NCCL {nccl}, PyTorch {torch_v}, `{cmd}`: {', '.join(what)}")
        lines.append("")
    else:
        lines += ["No raw results found.", ""]

    lines += ["## Targets (issue 5)", "",
              "MET: every required point measured and passing; MISSED: a measured point fails "
              "(or coconetc failed its check); NOT MEASURED: data missing. Ratios are of median "
              "times. The best coconetc row is, per config, the fastest row named coconetc* "
              "that did not fail its check; its name follows the figure, and where that is not the "
              "row `coconetc` (the sample's own schedule) that row's figure too.", ""]
    lines += table(["target", "status", "measured"],
                   [[t, f"**{s}**", m.replace("|", "\\|")] for t, s, m in targets(res, build)]) + [""]

    lines += ["## Results", ""]
    for raw in sorted(raws, key=lambda r: (str(r.get("workload")), r.get("world") or 0)):
        files = plot_workload(raw, plots)
        lines += workload_section(raw, files[0] if files else None)
        for extra in files[1:]:
            lines += [f"![{raw.get('workload')}, {raw.get('world')} GPUs, bus bandwidth](plots/{extra})", ""]
    lines += compiler_section(build)
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path("docs/benchmarks/gpu"),
                    help="the results folder (raw/, build.json)")
    ap.add_argument("--out", type=Path, help="markdown file (default RESULTS/results.md)")
    args = ap.parse_args()
    text = report(args.results)
    out = args.out or args.results / "results.md"
    out.write_text(text)
    # The targets on the console.
    for line in text.splitlines():
        if line.startswith("| ") and "**" in line:
            print(line)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
