#!/usr/bin/env python3
"""Turns a results folder into a report: RESULTS/results.md and RESULTS/plots/*.png.

    python3 tools/bench/gpu/report.py --results RESULTS

Reads every RESULTS/raw/*.json (bench.py) and RESULTS/build.json (build.py), whatever
workloads they hold. The markdown opens with the headline table of the folder (headline.py: each
config against its strongest peer by GPU time, its floor, its targets and verdicts: the same code
as docs/benchmarks/README.md), then has, per workload and world size and run, a table of median
times (config rows x row columns), the GPU time per step with the host ahead, the speed-up over
eager and the time over the floor where the workload has them, bus bandwidth, optimizer state
per GPU, the checks (before and after the timed steps), and the failures; then the compiler's
times. Plots: time against size per row, log-log, one per workload and world size. Every file
names the GPU, the NCCL version, the date and the command. Nothing is estimated: a number that
was not measured is not shown.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

EAGER = "eager"


# -- loading -------------------------------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parent))


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
    (two equal kernels timed so can read several percent apart); nothing for a CPU run or one row."""
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
    rep = meta.get("rep")
    lines = [f"### {w}, {P} GPU{'s' if P != 1 else ''}{f', run {rep}' if rep else ''}", ""]
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
            after = (rs.get(c, {}).get("check_after") or {}).get("status")
            if after:
                st += f"; after: {after}"
            cells.append(st)
        body.append([cfg["name"]] + cells)
    lines += [f"Checks against the reference (`{cfgs[0].get('reference') or '—'}`; the largest "
              f"error as a fraction of the row's tolerance, over all outputs and ranks; `after`: the "
              f"check after the timed steps):", ""] + table(["config"] + cols, body) + [""]

    # Failures.
    fails = []
    for cfg in cfgs:
        if cfg.get("error"):
            fails.append(f"- {cfg['name']}: {brief(cfg['error'], 400)}")
        for r in cfg.get("rows", []):
            for part in ("check", "check_after", "time"):
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
        rep = f"-r{meta['rep']}" if meta.get("rep") else ""
        name = f"{w}-p{P}{rep}.png" if kind == "time" else f"{w}-p{P}{rep}-busbw.png"
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


def headline_section(results: Path) -> list[str]:
    """The folder's headline table (headline.py's entries of this one run)."""
    import headline
    run = headline.Run(results)
    es = []
    for (w, P) in sorted(run.files):
        raws = run.files[(w, P)]
        for name in dict.fromkeys(c.get("name") for raw in raws for c in raw.get("configs", [])):
            e = headline.entry(w, P, run, raws, name, [run])
            if e:
                es.append(e)
    if not es:
        return []
    return ["## Headline", "",
            "Each config against its strongest peer by GPU time (headline.py; † a CUDA graph's median), "
            "the median of this folder's runs with their range:", ""] + headline.table(es, with_run=False) + [""]


def report(results: Path, plots_on: bool = True) -> str:
    raws, build = load(results)
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

    lines += headline_section(results)
    lines += ["## Results", ""]
    for raw in sorted(raws, key=lambda r: (str(r.get("workload")), r.get("world") or 0)):
        files = plot_workload(raw, plots) if plots_on else []
        lines += workload_section(raw, files[0] if files else None)
        for extra in files[1:]:
            lines += [f"![{raw.get('workload')}, {raw.get('world')} GPUs, bus bandwidth](plots/{extra})", ""]
    lines += compiler_section(build)
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, required=True, help="the results folder (raw/, build.json)")
    ap.add_argument("--out", type=Path, help="markdown file (default RESULTS/results.md)")
    ap.add_argument("--no-plots", action="store_true", help="no plots (a headline run's are docs/benchmarks/plots/)")
    args = ap.parse_args()
    text = report(args.results, not args.no_plots)
    out = args.out or args.results / "results.md"
    out.write_text(text)
    # The headline's rows on the console.
    head = text.split("## Headline", 1)[1].split("## Results", 1)[0] if "## Headline" in text else ""
    for line in head.splitlines():
        if line.startswith("| ") and not line.startswith("| workload"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            print(f"  {cells[0]} P={cells[2]} {cells[1]}: {cells[10]}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
