"""Compares the variants examples/gpt/train.py appended to a runs file: loss curves and speed.

  python3 examples/gpt/compare.py runs.jsonl [--markdown table.md]

Loss: a coconetc variant matches when its largest step-by-step relative difference from the
PyTorch variant of the same kind (eager or compiled) is within the contract: 2%, or twice the
difference PyTorch itself shows between eager and torch.compile, whichever is larger (fp16 models
drift apart by rounding alone); every run of a variant is checked. Speed: the median tokens per
second of each variant's runs (their minimum and maximum beside it) against the fastest PyTorch
variant's median (the strongest peer). Exits 1 when a curve does not match or a variant is missing.
"""
import argparse
import json
import sys


def deviation(a, b):
    return max(abs(x - y) / max(abs(y), 1e-6) for x, y in zip(a, b))


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    runs = {}
    for line in open(a.runs):
        r = json.loads(line)
        runs.setdefault(r["variant"], []).append(r)
    rows = {v: rs[0] for v, rs in runs.items()}  # the first run: the curve and shape shown
    speed = {v: median([r["tokens_per_s"] for r in rs]) for v, rs in runs.items()}
    need = ["torch", "torch-compile", "coconet", "coconet-compile"] + (["coconet-blocks"] if "coconet-blocks" in rows else [])
    missing = [v for v in need if v not in rows]
    if missing:
        print("missing variants: " + ", ".join(missing))
        return 1
    noise = deviation(rows["torch-compile"]["losses"], rows["torch"]["losses"])
    limit = max(0.02, 2 * noise)
    peer = max(("torch", "torch-compile"), key=lambda v: speed[v])
    r0 = rows["torch"]
    lines = ["GPU: %s, %d rank(s), torch %s; %d layers, hidden %d, %d heads, seq %d, batch %d per rank, vocab %d; "
             "%.0fM parameters; %d steps (tokens/s over the steps after the warm-up; the median of %d runs of each "
             "variant, in rounds, with the slowest and fastest)" %
             (r0["gpu"], r0["ranks"], r0["torch"], r0["shape"]["layers"], r0["shape"]["hidden"], r0["shape"]["heads"],
              r0["shape"]["seq"], r0["shape"]["batch"], r0["shape"]["vocab"], r0["params"] / 1e6, r0["steps"],
              min(len(runs[v]) for v in need)),
             "",
             "| variant | tokens/s | vs %s | peak allocated (GiB) | device in use (GiB) | first loss | last loss | "
             "largest step difference from PyTorch |" % peer,
             "|---|---|---|---|---|---|---|---|"]
    ok = True
    for v in need:
        r = rows[v]
        ref = rows["torch-compile" if v.endswith("compile") else "torch"]
        dev = max(deviation(x["losses"], ref["losses"]) for x in runs[v])
        if v.startswith("coconet"):
            ok &= dev <= limit
        tps = [x["tokens_per_s"] for x in runs[v]]
        lines.append("| %s | %.0f (%.0f-%.0f) | %.3f | %.2f | %.2f | %.4f | %.4f | %s |" %
                     (v, speed[v], min(tps), max(tps), speed[v] / speed[peer], max(x["peak_allocated_gib"] for x in runs[v]),
                      max(x["device_used_gib"] for x in runs[v]), r["losses"][0], r["losses"][-1],
                      "-" if ref is r else "%.4f (vs %s)" % (dev, ref["variant"])))
    lines += ["", "PyTorch eager vs compiled: largest step difference %.4f; the contract for coconetc's curves: %.4f. %s" %
              (noise, limit, "Every curve matches." if ok else "A curve does NOT match.")]
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        open(a.markdown, "w").write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
