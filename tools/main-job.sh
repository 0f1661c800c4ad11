#!/usr/bin/env bash
# The main job: takes the flagship sample (Megatron row-parallel linear + bias + dropout +
# residual, with its schedule) through the whole compiler: check, the scheduled IR, CPU
# verification of the schedule for 1, 2, 3, 4 and 8 ranks, CUDA code, an nvcc build, and
# where GPUs are present, a run on up to 2 of them checked against the verifier's vectors.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=samples/megatron_row/megatron_row.cnet
out=build/main-job
echo "== coconetc check $prog"
build/coconetc check "$prog" && echo ok
echo "== coconetc emit --stage ir $prog -D H=4096"
build/coconetc emit --stage ir "$prog" -D H=4096
echo "== coconetc verify $prog --ranks 1,2,3,4,8 --dump $out/vectors"
rm -rf "$out" && mkdir -p "$out"
build/coconetc verify "$prog" --ranks 1,2,3,4,8 --seed 7 --dump "$out/vectors"
echo "== coconetc compile $prog -o $out/cuda"
build/coconetc compile "$prog" -o "$out/cuda"
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ ! -x "$nvcc" ] && command -v nvcc >/dev/null; then nvcc=$(command -v nvcc); fi
if [ ! -x "$nvcc" ]; then
  echo "== no nvcc: the CUDA build is skipped"
  exit 0
fi
echo "== nvcc build of $out/cuda"
cmake -S "$out/cuda" -B "$out/cuda/build" -DCMAKE_CUDA_COMPILER="$nvcc" > "$out/cmake.log"
cmake --build "$out/cuda/build" -j "$(nproc)" > "$out/build.log"
echo "built $out/cuda/build/megatron_row_main"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
if [ "${gpus:-0}" -ge 1 ]; then
  P=$(( gpus >= 2 ? 2 : 1 ))
  echo "== run on $P GPU(s), checked against the verifier's vectors"
  NCCL_NVLS_ENABLE=0 "$out/cuda/build/megatron_row_main" --spawn "$P" --check "$out/vectors/ranks$P"
else
  echo "== no GPU here: the run is skipped (tests/gpu/run.sh runs every program on 1, 2 and 4 GPUs)"
fi
