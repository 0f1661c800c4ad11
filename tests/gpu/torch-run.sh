#!/usr/bin/env bash
# The PyTorch target on the GPU machine: each .gpu-bundle/torch/NAME package installed with pip
# (--no-build-isolation: nothing to fetch there) into a scratch site folder, then
# tests/gpu/torch_ops.py against NAME's vectors (made here by tests/gpu/make-vectors.sh). Results
# in $OUT/torch-results.txt, the logs in $OUT/torch-logs.tgz.
# Usage: [TORCH_SITE=DIR] OUT=DIR bash tests/gpu/torch-run.sh [NAME ...]   (default: every package in the bundle)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
b="$root/.gpu-bundle"
out="${OUT:-$root/torch-out}"
mkdir -p "$out"
names=("$@")
[ ${#names[@]} -gt 0 ] || for d in "$b"/torch/*/; do names+=("$(basename "$d")"); done
site=${TORCH_SITE:-$(mktemp -d)}  # (TORCH_SITE: keep the installed packages there)
dumps=$(mktemp -d)  # (the vectors stay out of OUT: many files)
res="$out/torch-results.txt"
{
  echo "date: $(date -u +%F)"
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "torch: $(python3 -c 'import torch; print(torch.__version__)')"
  echo "command: bash tests/gpu/torch-run.sh ${names[*]}"
} > "$res"
COCONETC="$b/bin/coconetc" LD_LIBRARY_PATH="$b/lib" GPU_TESTS_ONLY="${names[*]%.saving}" \
  bash "$root/tests/gpu/make-vectors.sh" "$dumps" > "$out/vectors.log" 2>&1 || echo "make-vectors failed (vectors.log)" >> "$res"
rc=0
# (the packages build at once, each into its own site folder: pip's --target replaces a shared one's
# folders; the logs go to one archive in OUT, torch-logs.tgz: the GPU machine returns few files)
logs=$(mktemp -d)
for n in "${names[@]}"; do
  (python3 -m pip install --no-build-isolation --no-deps --target "$site/$n" "$b/torch/$n" > "$logs/pip-$n.log" 2>&1
   echo $? > "$logs/pip-$n.rc") &
done
wait
for n in "${names[@]}"; do
  if [ "$(cat "$logs/pip-$n.rc")" = 0 ]; then
    echo "ok: $n: pip install --no-build-isolation built and installed coconet_$n" >> "$res"
  else
    echo "FAIL: $n: pip install (pip-$n.log): $(grep -m1 -E 'error:|Error' "$logs/pip-$n.log")" >> "$res"
    rc=1
  fi
done
# one process a package: a crash fails that package alone, and says so. NAME.saving (the forward
# that saves what NAME_backward reads; its operator is coconet_NAME too) runs with NAME_backward's
# package, the autograd through it; NAME alone, as for inference.
for n in "${names[@]}"; do
  prog=${n%.saving}
  path="$site/$n"
  [[ "$n" == "$prog" || ! -d "$site/${prog}_backward" ]] || path="$path:$site/${prog}_backward"
  PYTHONPATH="$path" python3 "$root/tests/gpu/torch_ops.py" "$dumps" "$prog" >> "$res" 2>>"$logs/torch_ops.stderr"
  st=$?
  [ $st = 0 ] || rc=1
  [ $st -lt 128 ] || echo "FAIL: $n: torch_ops.py died of signal $((st - 128)) (torch_ops.stderr)" >> "$res"
done
cp "$out/vectors.log" "$logs/" 2>/dev/null && rm -f "$out/vectors.log"
tar -czf "$out/torch-logs.tgz" -C "$logs" .
cat "$res"
exit $rc
