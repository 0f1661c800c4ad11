#!/usr/bin/env python3
"""Per row of a benchmark's raw JSON (bench.py keeps every iteration's time in `iters_us`):
the median of the first timed iterations against the median of the last ones, and each
against the reference row's. A row whose time drifts up while the GPUs run it (clocks lowered
under sustained power) shows a gap between the two.

  python3 tools/bench/gpu/drift.py RAW.json [--first 20] [--last 100]   (markdown on stdout)
"""
import argparse
import json
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", help="a raw/WORKLOAD-pP.json of tools/bench/gpu/run.sh")
    ap.add_argument("--first", type=int, default=20, help="the first N timed iterations")
    ap.add_argument("--last", type=int, default=100, help="the last N timed iterations")
    a = ap.parse_args()
    d = json.load(open(a.raw))
    print(f"`python3 tools/bench/gpu/drift.py {a.raw} --first {a.first} --last {a.last}` "
          f"({d.get('meta', {}).get('date', '?')}, {d.get('workload')} P={d.get('world')})\n")
    print(f"| config | row | median of the first {a.first} (us) | median of the last {a.last} (us) | "
          f"reference / row, first | reference / row, last |")
    print("|---|---|---|---|---|---|")
    for c in d.get("configs", []):
        ref = None
        for r in c.get("rows", []):
            t = (r.get("time") or {}).get("iters_us")
            if not t:
                continue
            f, l = statistics.median(t[:a.first]), statistics.median(t[-a.last:])
            if ref is None:
                ref = (f, l)
            print(f"| {c['name']} | {r['name']} | {f:.0f} | {l:.0f} | {ref[0] / f:.3f}x | {ref[1] / l:.3f}x |")


if __name__ == "__main__":
    main()
