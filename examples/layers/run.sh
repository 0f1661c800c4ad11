#!/usr/bin/env bash
# The layer benchmark end to end: builds and installs the PyTorch packages of megatron_mlp,
# megatron_row and dlrm_embedding with their backward programs (examples/packages.sh;
# COCONET_PKGS names a folder that holds them built), then runs examples/layers/bench.py, its
# JSON lines in OUTDIR/layers.jsonl (exit 1 when a layer's values or gradients do not match).
#   bash examples/layers/run.sh OUTDIR [bench.py options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: run.sh OUTDIR [bench.py options]}
shift
mkdir -p "$out"
PYTHONPATH=$(bash "$root/examples/packages.sh" "$out" megatron_mlp megatron_mlp_backward megatron_row megatron_row_backward \
  dlrm_embedding dlrm_embedding_backward)
export PYTHONPATH
python3 "$root/examples/layers/bench.py" --out "$out/layers.jsonl" "$@"
