#!/usr/bin/env bash
# Prepares what the GPU tests need, on a machine with coconetc built: every sample (with its
# schedule) and every tests/gpu/programs/*.cnet compiled to CUDA, and `verify --dump` vectors
# for 1, 2 and 4 ranks, in .gpu-bundle/
# (git-ignored; carried to the GPU machine). tests/gpu/run.sh runs there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/.gpu-bundle"
rm -rf "$b" && mkdir -p "$b/gen" "$b/dumps"
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  n=$(basename "$prog" .cnet)
  "$root/build/coconetc" compile "$prog" -o "$b/gen/$n" >/dev/null
  "$root/build/coconetc" verify "$prog" --ranks 1,2,4 --seed 7 --dump "$b/dumps/$n" > "$b/dumps/$n.verify.txt"
done
du -sh "$b"
