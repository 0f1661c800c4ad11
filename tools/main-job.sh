#!/usr/bin/env bash
# The main job: takes the flagship sample (Megatron row-parallel linear + bias + dropout +
# residual) through the compiler: check, the IR after its schedule, and CPU verification of the
# schedule for several rank counts. The CUDA backend (compile to .cu, build with nvcc, run on
# GPUs where present) is issue 4.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=samples/megatron_row/megatron_row.cnet
echo "== coconetc check $prog"
build/coconetc check "$prog"
echo "ok"
echo "== coconetc emit --stage ir $prog -D H=4096"
build/coconetc emit --stage ir "$prog" -D H=4096
echo "== coconetc verify $prog --ranks 1,2,3,4,8"
build/coconetc verify "$prog" --ranks 1,2,3,4,8
