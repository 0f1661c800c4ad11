#!/usr/bin/env python3
"""Compiles and builds the programs that the workload modules declare.

For every PROGRAMS entry (KEY -> dict(source, schedule, replace, flags, schedule_append,
compiler)) of the chosen workloads (`flags`, optional: extra `coconetc compile` arguments, e.g.
["--no-device-collectives"]; `schedule_append`, optional: text added to the end of the schedule;
`compiler`, optional: another coconetc executable for this program than --coconetc):
  1. writes the source (with the `replace` substitutions applied) and its schedule (with
     `schedule_append`) to WORK/src/KEY.cnet and WORK/src/KEY.sched,
  2. runs `coconetc compile WORK/src/KEY.cnet --schedule S|none -I stdlib -I SRCDIR
     -o WORK/gen/KEY FLAGS...` and times it (milliseconds, the compiler process alone),
  3. builds WORK/gen/KEY with CMake (nvcc) into WORK/gen/KEY/build, several programs at once,
     and times the configure and build steps (seconds).
The compiles run one after another (so their times are not disturbed), then the builds in
parallel. It also times `coconetc compile` of every sample (samples/*/*.cnet with the schedule
beside it), the issue's "under 100 ms" figure.

Writes OUT (JSON): per program its flags, the library path
(WORK/gen/KEY/build/libcoconet_NAME.so), the times, and any error with its log file; bench.py
loads the libraries from it. One program that fails does not stop the others.
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import datetime
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def workload_names(selected: str | None) -> list[str]:
    """The workload modules: all of workloads/*.py (not starting with _), or the given list."""
    if selected:
        return [w.strip() for w in selected.split(",") if w.strip()]
    return sorted(p.stem for p in (HERE / "workloads").glob("*.py") if not p.stem.startswith("_"))


def import_workload(name: str):
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(f"workloads.{name}")


def collect_programs(names: list[str], headline: bool = False) -> tuple[dict, dict]:
    """KEY -> spec (with its workload), and workload -> import error for modules that fail; with
    `headline` only the programs of the headline's coconetc rows (HEADLINE_PROGRAMS)."""
    programs, errors = {}, {}
    for name in names:
        try:
            module = import_workload(name)
        except Exception:
            errors[name] = traceback.format_exc(limit=3)
            continue
        keep = getattr(module, "HEADLINE_PROGRAMS", []) if headline else None
        for key, spec in getattr(module, "PROGRAMS", {}).items():
            if keep is not None and key not in keep:
                continue
            if key in programs:
                errors[name] = (f"program key '{key}' is declared by both "
                                f"{programs[key]['workload']} and {name}")
                continue
            programs[key] = dict(spec, workload=name)
    return programs, errors


def select_programs(programs: dict, keys: str) -> tuple[dict, list[str]]:
    """The programs `--programs KEY,KEY` keeps: each KEY and its rows' variants (KEY_x_NAME, made
    by BENCH_SCHED_ROWS, BENCH_COMPILER_ROWS and BENCH_TUNING_ROWS, and norms' KEY_x_long), so that
    asking for a program never leaves out the rows asked for beside it; and the KEYs that name no
    program."""
    wanted = [k for k in keys.split(",") if k]
    unknown = [k for k in wanted if k not in programs]
    kept = {k: v for k, v in programs.items() if any(k == w or k.startswith(w + "_x_") for w in wanted)}
    return kept, unknown


def program_name(text: str) -> str | None:
    """NAME of the first `program NAME(` in a source (the library is libcoconet_NAME.so)."""
    text = re.sub(r"//[^\n]*", "", text)
    m = re.search(r"\bprogram\s+(\w+)\s*\(", text)
    return m.group(1) if m else None


def run_logged(cmd: list[str], log: Path, cwd: Path | None = None, env=None) -> tuple[int, float]:
    """Runs cmd with its output appended to log; returns (exit code, seconds)."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n")
        f.flush()
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, env=env).returncode
        secs = time.perf_counter() - t0
        f.write(f"[exit {rc} after {secs:.3f} s]\n")
    return rc, secs


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def compile_program(key: str, spec: dict, args, logs: Path) -> dict:
    """Step 1 and 2 for one program; returns its record."""
    src_path = REPO / spec["source"]
    rec = {"workload": spec["workload"], "source": spec["source"],
           "schedule": spec.get("schedule"), "schedule_append": spec.get("schedule_append"),
           "replace": spec.get("replace") or {},
           "flags": [str(f) for f in spec.get("flags") or []], "log": str(logs / f"{key}.log")}
    compiler = args.coconetc
    if spec.get("compiler"):  # BENCH_COMPILER_ROWS' A/B of coconetc itself (absolute, links kept)
        compiler = rec["compiler"] = str(Path(spec["compiler"]).absolute())
    log = logs / f"{key}.log"
    log.write_text("")
    try:
        text = src_path.read_text()
        for old, new in (spec.get("replace") or {}).items():
            text = text.replace(old, new)
        rec["program"] = program_name(text)
        src_dir = args.work / "src"
        src_dir.mkdir(parents=True, exist_ok=True)
        src = src_dir / f"{key}.cnet"
        src.write_text(text)
        if spec.get("schedule"):
            sched = src_dir / f"{key}.sched"
            sched.write_text((REPO / spec["schedule"]).read_text() + (spec.get("schedule_append") or ""))
            sched_arg = str(sched)
        else:
            sched_arg = "none"
        gen = args.work / "gen" / key
        shutil.rmtree(gen, ignore_errors=True)
        cmd = [compiler, "compile", str(src), "--schedule", sched_arg,
               "-I", str(REPO / "stdlib"), "-I", str(src_path.parent), "-o", str(gen)]
        if args.arch:
            cmd += ["--arch", args.arch]
        cmd += rec["flags"]
        rc, secs = run_logged(cmd, log)
        rec["compile_ms"] = round(secs * 1000, 2)
        rec["dir"] = str(gen)
        if rc != 0:
            rec["error"] = f"coconetc compile failed (exit {rc}): {tail(log, 8)}"
    except Exception as e:  # a missing source or schedule, say
        rec["error"] = f"{type(e).__name__}: {e}"
    return rec


def build_program(key: str, rec: dict, args, logs: Path) -> dict:
    """Step 3 for one compiled program."""
    gen = Path(rec["dir"])
    log = logs / f"{key}.log"
    cfg = ["cmake", "-S", str(gen), "-B", str(gen / "build"), f"-DNCCL_ROOT={args.nccl_root}"]
    if shutil.which("ninja"):
        cfg += ["-G", "Ninja"]
    rc, secs = run_logged(cfg, log)
    rec["configure_s"] = round(secs, 2)
    if rc != 0:
        rec["error"] = f"cmake configure failed (exit {rc}): {tail(log, 8)}"
        return rec
    rc, secs = run_logged(["cmake", "--build", str(gen / "build"), "-j", str(args.build_jobs)], log)
    rec["build_s"] = round(secs, 2)
    if rc != 0:
        rec["error"] = f"nvcc build failed (exit {rc}): {tail(log, 12)}"
        return rec
    lib = gen / "build" / f"libcoconet_{rec['program']}.so"
    if lib.exists():
        rec["lib"] = str(lib)
    else:
        rec["error"] = (f"the build made no {lib.name} (does this coconetc emit the C interface "
                        f"and its shared library?)")
    return rec


def time_samples(args, repeats: int) -> list[dict]:
    """`coconetc compile` of every sample with its default schedule, `repeats` times each."""
    out = []
    tmp = args.work / "samples"
    for src in sorted(REPO.glob("samples/*/*.cnet")):
        rec = {"sample": str(src.relative_to(REPO)),
               "schedule": str(src.with_suffix(".sched").relative_to(REPO))
               if src.with_suffix(".sched").exists() else None}
        times = []
        for _ in range(repeats):
            shutil.rmtree(tmp, ignore_errors=True)
            t0 = time.perf_counter()
            p = subprocess.run([args.coconetc, "compile", str(src), "-I", str(REPO / "stdlib"),
                                "-o", str(tmp)], capture_output=True, text=True, cwd=REPO)
            times.append((time.perf_counter() - t0) * 1000)
            if p.returncode != 0:
                rec["error"] = (p.stderr or p.stdout).strip()[-500:]
                break
        rec["compile_ms"] = [round(t, 2) for t in times]
        rec["median_ms"] = round(statistics.median(times), 2)
        rec["max_ms"] = round(max(times), 2)
        out.append(rec)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def tool_version(cmd: list[str], containing: str = "") -> str | None:
    """The last line of a tool's output that contains `containing` (its version line)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip() and containing in l]
        return lines[-1].strip() if lines else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def nccl_version(root: str) -> str | None:
    """NCCL's version from NCCL_ROOT/include/nccl.h (the NCCL the programs are built with)."""
    try:
        text = (Path(root) / "include" / "nccl.h").read_text()
        parts = [re.search(rf"#define NCCL_{k}\s+(\d+)", text).group(1)
                 for k in ("MAJOR", "MINOR", "PATCH")]
        return ".".join(parts)
    except (OSError, AttributeError, TypeError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coconetc", required=True, help="the coconetc executable")
    ap.add_argument("--work", type=Path, default=Path("/tmp/coconet-bench"),
                    help="work folder (sources, generated code, builds)")
    ap.add_argument("--out", type=Path, required=True, help="JSON file to write")
    ap.add_argument("--logs", type=Path, help="folder for the per-program logs (default: beside --out)")
    ap.add_argument("--workloads", help="comma list (default: every module in workloads/)")
    ap.add_argument("--nccl-root", default=os.environ.get("NCCL_ROOT", ""))
    ap.add_argument("--arch", help="coconetc --arch (default: coconetc's)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 4),
                    help="programs built at once")
    ap.add_argument("--build-jobs", type=int, default=4, help="cmake --build -j for each")
    ap.add_argument("--sample-repeats", type=int, default=5,
                    help="compiles of each sample for the compile-time figure (0: skip)")
    ap.add_argument("--no-build", action="store_true", help="compile only (no nvcc)")
    ap.add_argument("--headline", action="store_true", help="only the programs the headline's rows run")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 where a program fails or a workload module does not import (CI's check "
                         "that every benchmark program compiles)")
    ap.add_argument("--programs", help="only these program keys and their rows' variants (KEY_x_NAME), "
                                       "comma-separated (developer option: a row whose program is left out "
                                       "fails as not built)")
    ap.add_argument("--command", default=os.environ.get("COCONET_BENCH_COMMAND"),
                    help="the command line to record")
    args = ap.parse_args()
    args.work = args.work.resolve()
    args.coconetc = str(Path(args.coconetc).resolve()) if os.sep in args.coconetc else args.coconetc
    logs = (args.logs or args.out.parent / "logs" / "build").resolve()
    logs.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)

    names = workload_names(args.workloads)
    programs, import_errors = collect_programs(names, args.headline)
    if args.programs:
        programs, unknown = select_programs(programs, args.programs)
        if unknown:
            sys.exit(f"build.py: --programs: no program {', '.join(sorted(unknown))} in {', '.join(names)}")
    result = {
        "schema": "coconet-bench-build/1",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": args.command or " ".join(sys.argv),
        "coconetc": args.coconetc, "coconetc_version": tool_version([args.coconetc, "--version"]),
        "nvcc": tool_version(["nvcc", "--version"], "release"),
        "cmake": tool_version(["cmake", "--version"], "version"),
        "nccl_root": args.nccl_root, "cpu_count": os.cpu_count(),
        "parallel_builds": args.jobs, "build_jobs_each": args.build_jobs,
        "workloads": names, "import_errors": import_errors, "programs": {},
    }
    result["gpu"] = tool_version(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    result["nccl"] = nccl_version(args.nccl_root)
    try:
        sys.path.insert(0, str(REPO / "tools" / "bench"))
        from machine import cpu_description
        result["cpu"] = cpu_description()
    except Exception:
        pass

    # Compile one after another, so that each time is the compiler's alone.
    recs = {key: compile_program(key, spec, args, logs) for key, spec in sorted(programs.items())}
    for key, rec in recs.items():
        print(f"compile {key}: " + (rec.get("error", "").splitlines()[0] if rec.get("error")
                                    else f"{rec['compile_ms']} ms"), flush=True)
    # Then build in parallel.
    if not args.no_build:
        todo = {k: r for k, r in recs.items() if "error" not in r}
        with futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            running = {pool.submit(build_program, k, r, args, logs): k for k, r in todo.items()}
            for fut in futures.as_completed(running):
                key = running[fut]
                try:
                    recs[key] = fut.result()
                except Exception as e:
                    recs[key]["error"] = f"{type(e).__name__}: {e}"
                rec = recs[key]
                print(f"build {key}: " + (rec["error"].splitlines()[0] if rec.get("error")
                                          else f"{rec.get('build_s')} s"), flush=True)
    result["programs"] = recs
    if args.sample_repeats > 0:
        result["samples"] = time_samples(args, args.sample_repeats)
        result["samples_note"] = ("wall time of the `coconetc compile` process (start-up "
                                  "included), median of the repeats, builds not running")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    tmp.replace(args.out)
    failed = [k for k, r in recs.items() if r.get("error")]
    print(f"built {len(recs) - len(failed)}/{len(recs)} programs"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; workloads not imported: {', '.join(import_errors)}" if import_errors else ""))
    if args.strict and (failed or import_errors):
        for name, err in import_errors.items():
            print(f"{name}: {err.strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
