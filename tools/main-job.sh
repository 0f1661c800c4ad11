#!/usr/bin/env bash
# The main job: takes the flagship sample (Megatron row-parallel linear + bias + dropout +
# residual) through the compiler. Today that is parse + type-check and the typed AST; the
# CUDA backend (compile to .cu, build with nvcc, run on GPUs where present) is issue 4.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=samples/megatron_row/megatron_row.cnet
echo "== coconetc check $prog"
build/coconetc check "$prog"
echo "ok"
echo "== coconetc emit --stage ast $prog -D B=8 -D S=1024 -D H=4096"
build/coconetc emit --stage ast "$prog" -D B=8 -D S=1024 -D H=4096
