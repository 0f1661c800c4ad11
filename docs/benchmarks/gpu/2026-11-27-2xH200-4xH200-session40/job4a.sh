#!/usr/bin/env bash
# session 40, 4 GPUs (lent later in the session): session 39's job7 (the Megatron sample after
# ecee715, one chunk past two ranks under 32 MiB per peer: f16 H = 4096 at T = 10240, 12288, 16384,
# i.e. 20, 24, 32 MiB per peer, against fuse(y, out) without overlap and eager), then the GPU tests
# of the bundle's builds (group A: megatron_row, megatron_mlp, matmul_*, overlap_cast,
# decode_gemv) at 4 GPUs until LIMIT (the queue did not finish: no test lines; job4b and job4c
# ran its default and variant builds in turn). -> $OUT/s40g
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s40g "${LIMIT:-560}"
job_bench megatron4 4 megatron 190 MEGATRON_DECODE_TOKENS=10240,12288,16384 \
  BUILD_ARGS="--programs megatron_row,megatron_row_fused" \
  BENCH_ARGS="--configs decode_T=10240_H=4096_f16,decode_T=12288_H=4096_f16,decode_T=16384_H=4096_f16 --rows eager,coconetc,coconetc_fused"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$(ls .gpu-bundle/gen | tr '\n' ' ')" GPU_TESTS_RANKS="4"
job_end
