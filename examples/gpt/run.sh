#!/usr/bin/env bash
# The GPT example end to end: builds and installs the adam program's PyTorch package (unless
# COCONET_ADAM_PKG names one that is built), trains every variant with torchrun on NPROC GPUs, and
# compares them (examples/gpt/compare.py; exit 1 when a loss curve does not match).
#   bash examples/gpt/run.sh OUTDIR [train.py options...]     (NPROC=1 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: run.sh OUTDIR [train.py options]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
pkg=${COCONET_ADAM_PKG:-$out/adam_torch}
if [ ! -f "$pkg/setup.py" ]; then
  "${COCONETC:-$root/build/coconetc}" compile "$root/samples/adam/adam.cnet" --target torch -o "$pkg"
fi
if ! python3 -c 'import coconet_adam' 2>/dev/null; then
  python3 -m pip install --no-build-isolation --no-deps --target "$out/site" "$pkg" > "$out/pip.log" 2>&1 ||
    { tail -20 "$out/pip.log"; exit 1; }
  export PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}"
fi
rm -f "$out/runs.jsonl"
for v in torch torch-compile coconet coconet-compile; do
  torchrun --standalone --nproc-per-node "${NPROC:-1}" "$root/examples/gpt/train.py" --variant "$v" --out "$out/runs.jsonl" "$@" \
    2>&1 | tee "$out/train-$v.log" | grep -v '^W[0-9]' || true
done
python3 "$root/examples/gpt/compare.py" "$out/runs.jsonl" --markdown "$out/table.md"
