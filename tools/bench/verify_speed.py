#!/usr/bin/env python3
"""Benchmark (not a test): time `coconetc verify` of every sample with its schedule.

Usage: tools/bench/verify_speed.py [--coconetc build/coconetc] [--repeat 3] [--out FILE]
For each sample: --ranks 8 alone, and the full --ranks 1,2,3,4,8. Issue 3's target: every
sample verifies at P = 8 in seconds. Prints a markdown table (medians) and writes it to --out.
"""
import argparse, datetime, glob, os, statistics, subprocess, sys, time

from machine import cpu_description, write_report

def timed(cmd, repeat):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        ts.append(time.perf_counter() - t)
        if r.returncode != 0 or "verified" not in r.stdout.splitlines()[-1]:
            sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return statistics.median(ts)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--coconetc", default="build/coconetc")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = []
    for prog in sorted(glob.glob("samples/*/*.cnet")):
        name = os.path.basename(prog)[:-5]
        p8 = timed([a.coconetc, "verify", prog, "--ranks", "8"], a.repeat)
        full = timed([a.coconetc, "verify", prog, "--ranks", "1,2,3,4,8"], a.repeat)
        rows.append((name, p8, full))
    out = ["# `coconetc verify` speed", "",
           f"- date: {datetime.date.today().isoformat()}",
           f"- machine: {cpu_description()} (CPU only: the reference interpreter)",
           f"- command: `python3 tools/bench/verify_speed.py --repeat {a.repeat}`",
           "- target (issue 3): every sample verifies at P = 8 in seconds",
           "- sizes are the verifier's random choice with its default seed (1): small, meeting each program's requirements",
           "", "| sample (with its schedule) | --ranks 8 (s) | --ranks 1,2,3,4,8 (s) |", "|---|---:|---:|"]
    for name, p8, full in rows:
        out.append(f"| {name} | {p8:.3f} | {full:.3f} |")
    write_report(out, a.out)

if __name__ == "__main__":
    main()
