#!/usr/bin/env bash
# session 39 job 7 (LIMIT seconds in all, default 200), 4 GPUs, after one chunk past two ranks
# under 32 MiB per peer: Megatron f16 H = 4096 at T = 10240, 12288, 16384 (the sample now 1, 1,
# 4 chunks) against fuse(y, out) without overlap. -> $OUT/s39g
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39g "${LIMIT:-200}"
job_bench megatron4 4 megatron $(( $(left) - 10 )) MEGATRON_DECODE_TOKENS=10240,12288,16384 \
  BUILD_ARGS="--programs megatron_row,megatron_row_fused" \
  BENCH_ARGS="--configs decode_T=10240_H=4096_f16,decode_T=12288_H=4096_f16,decode_T=16384_H=4096_f16 --rows eager,coconetc,coconetc_fused"
job_end
