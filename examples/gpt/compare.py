"""Compares the variants examples/gpt/train.py appended to a runs file: loss curves and speed.

  python3 examples/gpt/compare.py runs.jsonl [--markdown table.md]

Loss: a coconetc variant matches when its largest step-by-step relative difference from the
PyTorch variant of the same kind (eager or compiled) is within the contract: 2%, or twice the
difference PyTorch itself shows between eager and torch.compile, whichever is larger (fp16 models
drift apart by rounding alone). Speed: tokens per second against the fastest PyTorch variant (the
strongest peer). Exits 1 when a curve does not match or a variant is missing.
"""
import argparse
import json
import sys


def deviation(a, b):
    return max(abs(x - y) / max(abs(y), 1e-6) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    rows = {}
    for line in open(a.runs):
        r = json.loads(line)
        rows[r["variant"]] = r  # the last run of each variant
    need = ["torch", "torch-compile", "coconet", "coconet-compile"] + (["coconet-blocks"] if "coconet-blocks" in rows else [])
    missing = [v for v in need if v not in rows]
    if missing:
        print("missing variants: " + ", ".join(missing))
        return 1
    noise = deviation(rows["torch-compile"]["losses"], rows["torch"]["losses"])
    limit = max(0.02, 2 * noise)
    peer = max(("torch", "torch-compile"), key=lambda v: rows[v]["tokens_per_s"])
    r0 = rows["torch"]
    lines = ["GPU: %s, %d rank(s), torch %s; %d layers, hidden %d, %d heads, seq %d, batch %d per rank, vocab %d; "
             "%.0fM parameters; %d steps (tokens/s over the steps after the warm-up)" %
             (r0["gpu"], r0["ranks"], r0["torch"], r0["shape"]["layers"], r0["shape"]["hidden"], r0["shape"]["heads"],
              r0["shape"]["seq"], r0["shape"]["batch"], r0["shape"]["vocab"], r0["params"] / 1e6, r0["steps"]),
             "",
             "| variant | tokens/s | vs %s | peak allocated (GiB) | device in use (GiB) | first loss | last loss | "
             "largest step difference from PyTorch |" % peer,
             "|---|---|---|---|---|---|---|---|"]
    ok = True
    for v in need:
        r = rows[v]
        ref = rows["torch-compile" if v.endswith("compile") else "torch"]
        dev = deviation(r["losses"], ref["losses"])
        if v.startswith("coconet"):
            ok &= dev <= limit
        lines.append("| %s | %.0f | %.3f | %.2f | %.2f | %.4f | %.4f | %s |" %
                     (v, r["tokens_per_s"], r["tokens_per_s"] / rows[peer]["tokens_per_s"], r["peak_allocated_gib"],
                      r["device_used_gib"], r["losses"][0], r["losses"][-1],
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
