#!/usr/bin/env bash
# The GPT example end to end: builds and installs the PyTorch packages of adam, megatron_mlp and
# megatron_mlp's backward program, trains every variant with torchrun on NPROC GPUs, and compares
# them (examples/gpt/compare.py; exit 1 when a loss curve does not match).
#   bash examples/gpt/run.sh OUTDIR [train.py options...]     (NPROC=1 by default)
# REPEATS=N trains every variant N times, in rounds (each round every variant once, so that a
# drift of the machine falls on all of them), and the table gives the median tokens/s of the runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: run.sh OUTDIR [train.py options]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the packages: adam (the optimizer), megatron_mlp and its backward program (the coconet-blocks
# variant's MLP halves); COCONET_PKGS names a folder that holds them built (NAME/setup.py)
PYTHONPATH=$(bash "$root/examples/packages.sh" "$out" adam megatron_mlp megatron_mlp_backward)
export PYTHONPATH
rm -f "$out/runs.jsonl"
variants=(torch torch-compile coconet coconet-compile)
[ "${NPROC:-1}" != 1 ] || variants+=(coconet-blocks)
for round in $(seq "${REPEATS:-1}"); do
  for v in "${variants[@]}"; do
    torchrun --standalone --nproc-per-node "${NPROC:-1}" "$root/examples/gpt/train.py" --variant "$v" --out "$out/runs.jsonl" "$@" \
      2>&1 | tee "$out/train-$v-$round.log" | grep -v '^W[0-9]' || true
  done
done
python3 "$root/examples/gpt/compare.py" "$out/runs.jsonl" --markdown "$out/table.md"
