#!/usr/bin/env bash
# The PyTorch target on the GPU machine: each .gpu-bundle/torch/NAME package installed with pip
# (--no-build-isolation: nothing to fetch there) into a scratch site folder, then
# tests/gpu/torch_ops.py against NAME's vectors (made here by tests/gpu/make-vectors.sh). Results
# in $OUT/torch-results.txt.
# Usage: OUT=DIR bash tests/gpu/torch-run.sh [NAME ...]   (default: every package in the bundle)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
b="$root/.gpu-bundle"
out="${OUT:-$root/torch-out}"
mkdir -p "$out"
names=("$@")
[ ${#names[@]} -gt 0 ] || for d in "$b"/torch/*/; do names+=("$(basename "$d")"); done
site=$(mktemp -d)
res="$out/torch-results.txt"
{
  echo "date: $(date -u +%F)"
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "torch: $(python3 -c 'import torch; print(torch.__version__)')"
  echo "command: bash tests/gpu/torch-run.sh ${names[*]}"
} > "$res"
COCONETC="$b/bin/coconetc" LD_LIBRARY_PATH="$b/lib" GPU_TESTS_ONLY="${names[*]}" \
  bash "$root/tests/gpu/make-vectors.sh" "$out/dumps" > "$out/vectors.log" 2>&1 || echo "make-vectors failed (see vectors.log)" >> "$res"
rc=0
for n in "${names[@]}"; do
  if python3 -m pip install --no-build-isolation --no-deps --target "$site" "$b/torch/$n" > "$out/pip-$n.log" 2>&1; then
    echo "ok: $n: pip install --no-build-isolation built and installed coconet_$n" >> "$res"
  else
    echo "FAIL: $n: pip install (see pip-$n.log): $(grep -m1 -i 'error' "$out/pip-$n.log")" >> "$res"
    rc=1
  fi
done
PYTHONPATH="$site" python3 "$root/tests/gpu/torch_ops.py" "$out/dumps" "${names[@]}" >> "$res" 2>"$out/torch_ops.stderr" || rc=1
cat "$res"
exit $rc
