#!/usr/bin/env python3
"""The headline: one table of every workload against its strongest peer, by GPU time, and its plots.

    python3 tools/bench/gpu/headline.py [--runs docs/benchmarks/runs] [--out docs/benchmarks/README.md]

Reads every run folder under --runs (RUN/raw/*.json, written by bench.py; a headline run has
WORKLOAD-pP-rK.json, one file per independent run K) and, for each workload and GPU count, takes
the newest run that has it. Each config's headline (its coconetc row, peers, floors and targets)
is the one the run recorded (bench.py --headline) or, for a run made before headlines existed,
the workload module's headline() of its config: the peers such a run lacked are named.

The figure of a row in one run is its GPU time per step with the host ahead (bench.py's
queued_us: steps queued back to back behind a sleeping kernel) or, for a row replayed as a CUDA
graph, the median of its replays (its GPU time where that is less: never worse for the peer). A headline figure is the median of the runs' figures, shown
with their minimum and maximum. The strongest peer of a config is the peer with the smallest
figure. Verdicts (judge()): a target "speed-up over the strongest peer >= v" is met when it holds
at both spreads' unfavourable ends (the peer's fastest run against coconetc's slowest), missed
when it fails at their favourable ends, and level when v lies inside; a target "time over the
floor <= v" likewise. A verdict counts as final only with at least MIN_RUNS runs and every peer
measured; otherwise it is marked provisional and says why. A row whose check failed, before or
after its timed steps, fails the config.

report.py imports this module: a run folder's results.md carries the same table, computed here.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
MIN_RUNS = 3
RUN_FILE = re.compile(r"(?P<w>[A-Za-z0-9_]+)-p(?P<p>\d+)(?:-r(?P<r>\d+))?\.json$")


# -- one row's figure ------------------------------------------------------------------------------

def figure(row: dict | None) -> tuple[float, str] | None:
    """(microseconds, basis) of a row in one run: "gpu" (queued GPU time, the host ahead) or
    "graph" (a CUDA graph's: the median of its replays, or its GPU time where that is less, as
    where torch.compile's graphs add host work to each replay); None where the run has neither."""
    t = (row or {}).get("time") or {}
    if t.get("status") != "ok":
        return None
    gpu = float(t["queued_us"]) if t.get("queued_ok") and (t.get("queued_us") or 0) > 0 else None
    if (row or {}).get("graph"):   # the peer's better figure: never more than its GPU time
        return min(float(t["median_us"]), gpu or float("inf")), "graph"
    return (gpu, "gpu") if gpu is not None else None


def failed(row: dict | None) -> str | None:
    """Why a row's result cannot be trusted (a failed check, before or after the timed steps)."""
    for part, what in (("check", "check"), ("check_after", "check after the timed steps")):
        st = ((row or {}).get(part) or {}).get("status")
        if st in ("fail", "error"):
            return f"{what} {'FAILED' if st == 'fail' else 'error'}"
    return None


def spread(values: list[float]) -> dict | None:
    """median, min, max and count of a row's figures over the runs."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


# -- verdicts --------------------------------------------------------------------------------------

def judge(target: dict, c: dict | None, peer: dict | None, floor: dict | None) -> tuple[str, float | None]:
    """(verdict, ratio) of one target: "met", "missed", "level" (the target's value lies inside the
    spread of the ratio) or "not measured". The ratio is of the medians: the strongest peer's over
    coconetc's (basis "peer", a speed-up) or coconetc's over the floor's (basis "floor"). The
    spread of the ratio runs from the spreads' one end to the other (min / max and max / min)."""
    other = peer if target["basis"] == "peer" else floor
    if not c or not other:
        return "not measured", None
    if target["basis"] == "peer":
        ratio = other["median"] / c["median"]
        lo, hi = other["min"] / c["max"], other["max"] / c["min"]
    else:
        ratio = c["median"] / other["median"]
        lo, hi = c["min"] / other["max"], c["max"] / other["min"]
    v = target["value"]
    if target["op"] == ">=":
        return ("met" if lo >= v else "missed" if hi < v else "level"), ratio
    return ("met" if hi <= v else "missed" if lo > v else "level"), ratio


def combine(verdicts: list[str]) -> str:
    """One verdict of a config's targets: missed if any is, then not measured, level, met."""
    for v in ("missed", "not measured", "level"):
        if v in verdicts:
            return v
    return "met" if verdicts else "not measured"


# -- runs ------------------------------------------------------------------------------------------

def import_workload(name: str):
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(f"workloads.{name}")


def spec_of(workload: str, params: dict, world: int, recorded: dict | None) -> dict | None:
    """A config's headline: as recorded by bench.py --headline (its rows, floors and targets are
    what was measured and judged; what limits it and the plots' series are the module's current
    words where it has them), else the module's headline()."""
    try:
        fn = getattr(import_workload(workload), "headline", None)
        now = fn(params, world) if fn else None
    except Exception:
        now = None
    if recorded:
        return dict(recorded, **{k: now[k] for k in ("limit", "series", "x", "x_label") if now and k in now})
    return now


class Run:
    """One run folder: its raw files grouped by (workload, world), each a list of runs."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files: dict[tuple[str, int], list[dict]] = {}
        for p in sorted((folder / "raw").glob("*.json")):
            m = RUN_FILE.match(p.name)
            if not m:
                continue
            try:
                raw = json.loads(p.read_text())
            except (OSError, json.JSONDecodeError) as e:
                print(f"headline: skipping {p}: {e}", file=sys.stderr)
                continue
            raw["_file"] = str(p)
            key = (raw.get("workload") or m["w"], int(raw.get("world") or m["p"]))
            self.files.setdefault(key, []).append(raw)

    def date(self, key) -> str:
        return max((r.get("meta", {}).get("date") or "") for r in self.files[key])


def load_runs(root: Path) -> list[Run]:
    return [Run(d) for d in sorted(root.iterdir()) if (d / "raw").is_dir()] if root.is_dir() else []


def newest(runs: list[Run]) -> dict[tuple[str, int], Run]:
    """For each (workload, world), the run folder whose files of it are newest."""
    best: dict = {}
    for run in runs:
        for key in run.files:
            if key not in best or run.date(key) > best[key].date(key):
                best[key] = run
    return best


def machine(meta: dict) -> str:
    gpu = str(meta.get("gpu") or "?").replace("NVIDIA ", "").replace(" 80GB HBM3", "")
    return f"{meta.get('world', '?')}x {gpu}"


# -- one config of one workload ---------------------------------------------------------------------

def entry(workload: str, world: int, run: Run, raws: list[dict], cfg_name: str, all_runs: list[Run]) -> dict | None:
    """The headline row of one config: figures, strongest peer, floor, verdict, notes."""
    recs = []
    for raw in raws:
        for c in raw.get("configs", []):
            if c.get("name") == cfg_name:
                recs.append((raw, c))
    if not recs:
        return None
    params = recs[0][1].get("params", {})
    spec = spec_of(workload, params, world, recs[0][1].get("headline"))
    if not spec:
        return None
    rows_in = [{r["name"]: r for r in c.get("rows", [])} for _, c in recs]

    def figs(name):
        out, basis, bad = [], set(), None
        for rs in rows_in:
            r = rs.get(name)
            bad = bad or failed(r)
            f = figure(r)
            if f:
                out.append(f[0])
                basis.add(f[1])
        return out, basis, bad

    c_vals, c_basis, c_bad = figs(spec["coconetc"])
    c = spread(c_vals)
    peers, lacking, notes = {}, [], []
    for p in spec["peers"]:
        vals, basis, bad = figs(p)
        if bad:
            notes.append(f"{p}: {bad}")
        if vals and not bad:
            peers[p] = dict(spread(vals), graph="graph" in basis)
        elif not bad:
            lacking.append(p)
    strongest = min(peers, key=lambda p: peers[p]["median"]) if peers else None
    peer = peers.get(strongest)
    # the floor, run by run, combined by the spec's rule where every floor row has a figure
    fl_vals = []
    for rs in rows_in:
        parts = [figure(rs.get(f)) for f in spec["floors"]]
        if spec["floors"] and all(parts):
            xs = [p[0] for p in parts]
            fl_vals.append({"first": xs[0], "max": max(xs), "sum": sum(xs)}[spec.get("floor_rule", "first")])
    floor = spread(fl_vals)
    floor_missing = [f for f in spec["floors"] if not any(figure(rs.get(f)) for rs in rows_in)]
    verdicts, ratios = [], {}
    for t in spec["targets"]:
        v, r = judge(t, c, peer, floor)
        verdicts.append(v)
        ratios[t["basis"]] = r
    verdict = combine(verdicts)
    provisional = []
    if c_bad:
        verdict = "FAILED"
        notes.insert(0, f"coconetc: {c_bad}")
    n = c["n"] if c else 0
    if verdict not in ("FAILED", "not measured"):
        if n < MIN_RUNS:
            provisional.append(f"{n} run{'s' if n != 1 else ''}")
        if lacking and verdict != "missed":
            provisional.append("peers not measured")
    if lacking:
        notes.append("lacks " + ", ".join(lacking) + supplement(workload, world, cfg_name, spec, lacking, all_runs, run))
    if floor_missing:
        notes.append("floor not measured: " + ", ".join(floor_missing))
    if not c:
        notes.insert(0, f"coconetc: {row_status(rows_in, spec['coconetc'])}")
    meta = raws[0].get("meta", {})
    return {"workload": workload, "world": world, "config": cfg_name, "params": params, "spec": spec,
            "coconetc": c, "coconetc_graph": "graph" in c_basis, "peers": peers, "strongest": strongest,
            "peer": peer, "floor": floor, "ratio_peer": (peer["median"] / c["median"]) if peer and c else None,
            "ratio_floor": (c["median"] / floor["median"]) if floor and c else None,
            "verdict": verdict, "provisional": provisional, "lacking": lacking, "notes": notes,
            "run": run.folder.name, "date": run.date((workload, world))[:10], "machine": machine(meta),
            "rows": {name: spread(figs(name)[0]) for name in dict.fromkeys(
                [spec["coconetc"]] + spec["peers"] + spec["floors"])},
            "graph_rows": [name for name in spec["peers"] if peers.get(name, {}).get("graph")]}


def row_status(rows_in: list[dict], name: str) -> str:
    for rs in rows_in:
        r = rs.get(name)
        if r is None:
            return "not run"
        t = r.get("time") or {}
        if t.get("status") == "ok" and not t.get("queued_ok", True):
            return "no GPU time (the host did not get ahead of the queued steps)"
        if t.get("status") == "ok" and "queued_us" not in t:
            return "no GPU time recorded (medians only)"
        if t.get("status") != "ok":
            return f"time {t.get('status', 'missing')}"
    return "no figure"


def supplement(workload, world, cfg_name, spec, lacking, runs: list[Run], used: Run) -> str:
    """For peers a run lacked: the newest other run with coconetc and that peer in the same config,
    its ratio (GPU time where it has it, else the medians, said so)."""
    found = []
    for p in lacking:
        best = None
        for run in runs:
            for raw in run.files.get((workload, world), []):
                for c in raw.get("configs", []):
                    if c.get("name") != cfg_name:
                        continue
                    rs = {r["name"]: r for r in c.get("rows", [])}
                    a, b = rs.get(spec["coconetc"]), rs.get(p)
                    fa, fb = figure(a), figure(b)
                    if fa and fb:
                        cand = (raw.get("meta", {}).get("date", ""), fb[0] / fa[0], "GPU time")
                    elif (a or {}).get("time", {}).get("status") == "ok" and (b or {}).get("time", {}).get("status") == "ok":
                        cand = (raw.get("meta", {}).get("date", ""), b["time"]["median_us"] / a["time"]["median_us"],
                                "per-step medians, host included")
                    else:
                        continue
                    if best is None or cand[0] > best[0]:
                        best = cand
        if best:
            found.append(f"{p} in the {best[0][:10]} run: speed-up {best[1]:.2f}x ({best[2]})")
    return f" ({'; '.join(found)})" if found else ""


def entries(runs: list[Run]) -> list[dict]:
    """Every headline row, workload by workload, GPU count by GPU count."""
    out = []
    for (workload, world), run in sorted(newest(runs).items()):
        raws = run.files[(workload, world)]
        names = list(dict.fromkeys(c.get("name") for raw in raws for c in raw.get("configs", [])))
        for name in names:
            e = entry(workload, world, run, raws, name, runs)
            if e:
                out.append(e)
    return out


# -- the markdown ---------------------------------------------------------------------------------

def fmt_us(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def cell(s: dict | None, graph: bool = False) -> str:
    if not s:
        return "—"
    mark = " †" if graph else ""
    if s["n"] == 1:
        return f"{fmt_us(s['median'])}{mark}"
    return f"{fmt_us(s['median'])}{mark} ({fmt_us(s['min'])}-{fmt_us(s['max'])})"


def verdict_cell(e: dict) -> str:
    v = e["verdict"]
    text = f"**{v}**" if v in ("missed", "FAILED") else v
    if e["provisional"]:
        text += f", provisional ({'; '.join(e['provisional'])})"
    return text


def shape(e: dict) -> str:
    return e["config"]


def table(es: list[dict], with_run: bool = True) -> list[str]:
    head = ["workload", "shape", "GPUs", "coconetc (us)", "strongest peer (us)", "peer", "floor (us)",
            "speed-up vs peer", "x floor", "target", "verdict", "what limits it / notes"]
    if with_run:
        head.append("run")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in es:
        notes = list(e["notes"])
        if e["verdict"] in ("missed", "level"):
            notes.insert(0, e["spec"].get("limit") or "")
        peer_name = e["strongest"] or "—"
        cells = [e["workload"], shape(e), str(e["world"]), cell(e["coconetc"], e["coconetc_graph"]),
                 cell(e["peer"], bool(e["peer"] and e["peer"].get("graph"))), f"`{peer_name}`",
                 cell(e["floor"]) + (f" ({'+'.join(e['spec']['floors'])})" if e["floor"] and len(e["spec"]["floors"]) > 1 else
                                     f" (`{e['spec']['floors'][0]}`)" if e["floor"] else ""),
                 f"{e['ratio_peer']:.2f}x" if e["ratio_peer"] else "—",
                 f"{e['ratio_floor']:.2f}x" if e["ratio_floor"] else "—",
                 "; ".join(t["text"] for t in e["spec"]["targets"]) or "—",
                 verdict_cell(e), "; ".join(n for n in notes if n).replace("|", "\\|") or ""]
        if with_run:
            cells.append(f"[{e['date']} {e['machine']}](runs/{e['run']}/)")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def summary(es: list[dict]) -> list[str]:
    """One line per workload and GPU count: verdict counts, speed-up range, the run's date."""
    groups: dict[tuple, list[dict]] = {}
    for e in es:
        groups.setdefault((e["workload"], e["world"]), []).append(e)
    lines = ["| workload | GPUs | configs | met | level | missed | failed / not measured | provisional | "
             "speed-up vs strongest peer | run |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (w, P), g in groups.items():
        n = {v: sum(1 for e in g if e["verdict"] == v) for v in ("met", "level", "missed", "FAILED", "not measured")}
        ratios = [e["ratio_peer"] for e in g if e["ratio_peer"]]
        rng = f"{min(ratios):.2f}x - {max(ratios):.2f}x" if ratios else "—"
        prov = sum(1 for e in g if e["provisional"])
        lines.append(f"| {w} | {P} | {len(g)} | {n['met']} | {n['level']} | {n['missed']} | "
                     f"{n['FAILED'] + n['not measured']} | {prov} | {rng} | {g[0]['date']} {g[0]['machine']} |")
    return lines


def runs_table(runs: list[Run], used: dict) -> list[str]:
    """The run folders the table rests on: machine, software, date, commit and command."""
    lines = ["| run | workloads | GPU | driver | NCCL | PyTorch | date | commit | command |", "|---|---|---|---|---|---|---|---|---|"]
    for run in sorted({id(r): r for r in used.values()}.values(), key=lambda r: r.folder.name, reverse=True):
        keys = sorted(k for k, r in used.items() if r is run)
        metas = [raw.get("meta", {}) for k in keys for raw in run.files[k]]
        m = metas[0] if metas else {}
        dates = sorted(x.get("date", "") for x in metas)
        cmds = sorted({x.get("command") or "?" for x in metas})
        commits = sorted({x.get("commit") or "not recorded" for x in metas})
        what = ", ".join(f"{w} P={p}" for w, p in keys)
        lines.append(f"| [{run.folder.name}](runs/{run.folder.name}/) | {what} | {m.get('gpu', '?')} x{m.get('gpu_count', '?')} | "
                     f"{m.get('driver') or 'not recorded'} | {m.get('nccl', '?')} | {m.get('torch', '?')} | "
                     f"{dates[0][:16]}{' .. ' + dates[-1][:16] if dates[-1][:16] != dates[0][:16] else ''} | "
                     f"{', '.join(commits)} | {'; '.join('`' + c + '`' for c in cmds)} |")
    return lines


def readme(runs_root: Path, plots_rel: str = "plots") -> tuple[str, list[dict]]:
    runs = load_runs(runs_root)
    used = newest(runs)
    es = entries(runs)
    counts = {}
    for e in es:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    lines = ["# Benchmarks", "",
             "coconetc's generated programs against the strongest PyTorch peer of each workload, on the "
             "same GPUs, in the same processes. Made by `tools/bench/gpu/run.sh --headline` on a GPU "
             "machine (it builds the programs, runs every workload at every GPU count present and "
             "writes this page; tools/bench/gpu/README.md); every figure comes from a raw result "
             "file under `runs/` that names the GPU, the date and the command.", "",
             "How to read the table:",
             "- Times are GPU time per step in microseconds: steps queued back to back behind a "
             "sleeping kernel, the host ahead, as in training; † marks a peer replayed as a CUDA graph, "
             "whose figure is the median of its replays (or its GPU time where that is less). Each "
             "figure is the median of the independent "
             "runs (separate processes), with their minimum and maximum in parentheses.",
             "- The strongest peer is the fastest of the workload's peers in that config (eager PyTorch, "
             "torch.compile in mode max-autotune-no-cudagraphs, PyTorch's fused kernels, `embedding_bag`, "
             "async TP, and for decode and small sizes the same captured in CUDA graphs or compiled in mode "
             "reduce-overhead). Speed-up = its time / coconetc's. The floor is the cost the step cannot "
             "avoid, measured: the memory traffic (a device copy of the bytes the step must move; a "
             "step that mostly reads can run a little under it), NCCL's collective alone, or the "
             "matmul alone; x floor = coconetc's time / the floor's.",
             f"- Verdict: met when the target holds at both spreads' unfavourable ends, missed when it "
             f"fails at their favourable ends, level when the target lies inside the spread. It is "
             f"final with at least {MIN_RUNS} runs and every peer measured, else provisional (why is "
             f"said). Every row was checked against the reference before and after its timed steps; "
             f"a failed check reads FAILED. Verdicts are computed by tools/bench/gpu/headline.py, the "
             f"same code as every run's results.md.", ""]
    if counts:
        lines += ["## Summary", "", "Per workload and GPU count: the verdicts of its configs and the range of "
                  "coconetc's speed-up over the strongest peer (above 1: coconetc faster).", ""]
        lines += summary(es) + [""]
    lines += ["## Results", ""] + table(es) + [""]
    lines += ["## Runs", "",
              "The newest run of each workload and GPU count; the raw JSON (every row, every run, "
              "checks, step times) is in the run's folder.", ""] + runs_table(runs, used) + [""]
    plots = plot_all(es, runs_root.parent / plots_rel)
    if plots:
        lines += ["## Plots", "", "GPU time against size, every row of the headline (median of the runs, "
                  "bars from the fastest to the slowest run).", ""]
        lines += [f"![{Path(p).stem}]({plots_rel}/{Path(p).name})" for p in plots] + [""]
    lines += ["## Other measurements", "",
              "- [check-speed.md](check-speed.md): `coconetc check` of generated programs (CPU).",
              "- [verify-speed.md](verify-speed.md): `coconetc verify` of every sample (CPU interpreter).", ""]
    return "\n".join(lines) + "\n", es


# -- plots -----------------------------------------------------------------------------------------

def plot_all(es: list[dict], folder: Path) -> list[str]:
    """One PNG per workload: a panel per series and GPU count, GPU time against size, every row."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401
    except ImportError:
        return []
    files = []
    by_w: dict[str, list[dict]] = {}
    for e in es:
        by_w.setdefault(e["workload"], []).append(e)
    folder.mkdir(parents=True, exist_ok=True)
    for w, group in by_w.items():
        panels: dict[tuple, list[dict]] = {}
        for e in group:
            series = e["spec"].get("series") or ""
            panels.setdefault((series, e["world"]), []).append(e)
        keys = sorted(panels, key=lambda k: (k[1], k[0]))
        cols = min(3, len(keys))
        rows = (len(keys) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
        for ax, key in zip(axes.flat, keys):
            pts = panels[key]
            xs = [p["spec"].get("x") for p in pts]
            numeric = all(isinstance(x, (int, float)) for x in xs) and len(set(xs)) == len(xs)
            if not numeric:
                xs = list(range(len(pts)))
            names = list(dict.fromkeys(n for p in pts for n in p["rows"]))
            for name in names:
                px, py, lo, hi = [], [], [], []
                for x, p in zip(xs, pts):
                    s = p["rows"].get(name)
                    if s:
                        px.append(x)
                        py.append(s["median"])
                        lo.append(s["median"] - s["min"])
                        hi.append(s["max"] - s["median"])
                if px:
                    style = "-" if name.startswith("coconetc") else ":" if name in pts[0]["spec"]["floors"] else "--"
                    ax.errorbar(px, py, yerr=[lo, hi], marker="o", ms=3, ls=style, capsize=2, label=name,
                                lw=2.2 if name.startswith("coconetc") else 1.2)
            if numeric and len(xs) > 1:
                ax.set_xscale("log", base=2)
            if not numeric or len(xs) == 1:
                ax.set_xticks(xs)
                ax.set_xticklabels([p["config"] for p in pts], rotation=20, ha="right", fontsize=6)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(pts[0]["spec"].get("x_label") or "config", fontsize=8)
            ax.set_ylabel("GPU time per step (us)", fontsize=8)
            ax.set_title(f"{key[0] + ', ' if key[0] else ''}{key[1]} GPU{'s' if key[1] > 1 else ''} "
                         f"({pts[0]['machine']}, {pts[0]['date']})", fontsize=8)
            ax.grid(True, which="both", alpha=0.3)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6)
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        fig.suptitle(f"{w}: GPU time per step († peers: CUDA graph replays)", fontsize=10)
        fig.tight_layout()
        path = folder / f"{w}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        try:
            from report import shrink_png
            shrink_png(path)
        except Exception:
            pass
        files.append(str(path))
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=REPO / "docs" / "benchmarks" / "runs")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks" / "README.md")
    args = ap.parse_args()
    text, es = readme(args.runs)
    args.out.write_text(text)
    for e in es:
        print(f"{e['workload']:>10} P={e['world']} {e['config']:<32} {e['verdict']}"
              + (f" ({'; '.join(e['provisional'])})" if e["provisional"] else ""))
    print(f"wrote {args.out} ({len(es)} rows; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
