#!/usr/bin/env bash
# CPU checks of examples/ (CTest examples): every script parses, and examples/gpt/compare.py
# takes the median of repeated runs and fails a loss curve outside the contract.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$root"/examples/*.sh "$root"/examples/*/*.sh; do bash -n "$f"; done
for f in "$root"/examples/*/*.py; do python3 -m py_compile "$f"; done
# runs of 4 variants in 3 rounds: tokens/s 100, 110, 120 (coconet 5 more); curves equal but for
# the last step, 0.1% apart (within the contract), or 5% apart (outside it)
runs() {
  python3 - "$1" "$2" <<'PY'
import json, sys
out, last = sys.argv[1], float(sys.argv[2])
with open(out, "w") as f:
    for rnd in range(3):
        for v in ["torch", "torch-compile", "coconet", "coconet-compile"]:
            co = v.startswith("coconet")
            f.write(json.dumps(dict(variant=v, gpu="G", ranks=1, torch="t", params=1e6, steps=3,
                                    shape=dict(layers=1, hidden=2, heads=1, seq=4, batch=1, vocab=8),
                                    losses=[3.0, 2.5, 2.0 * (last if co else 1.0)], tokens_per_s=100 + 10 * rnd + 5 * co,
                                    peak_allocated_gib=1, device_used_gib=2)) + "\n")
PY
}
runs "$tmp/ok.jsonl" 1.001
python3 "$root/examples/gpt/compare.py" "$tmp/ok.jsonl" > "$tmp/ok.txt"
grep -q '| coconet | 115 (105-125) | 1.045 |' "$tmp/ok.txt" || { cat "$tmp/ok.txt"; echo "FAIL: medians"; exit 1; }
grep -q 'Every curve matches' "$tmp/ok.txt"
runs "$tmp/bad.jsonl" 1.05
if python3 "$root/examples/gpt/compare.py" "$tmp/bad.jsonl" > "$tmp/bad.txt"; then echo "FAIL: a curve 5% off passed"; exit 1; fi
grep -q 'A curve does NOT match' "$tmp/bad.txt"
echo "examples: ok"
