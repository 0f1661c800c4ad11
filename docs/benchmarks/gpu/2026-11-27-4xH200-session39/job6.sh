#!/usr/bin/env bash
# session 39 job 6 (LIMIT seconds in all, default 300), 4 GPUs: where one chunk stops paying past
# two ranks. Megatron f16 H = 4096 at T = 8192, 10240, 12288, 16384 tokens (16, 20, 24, 32 MiB
# of this rank's block to each peer; the sample then runs 1, 2, 3, 4 chunks) against
# fuse(y, out) without overlap (one chunk) and the sample in at most 2 chunks. -> $OUT/s39f
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39f "${LIMIT:-300}"
job_bench megatron4 4 megatron $(( $(left) - 10 )) MEGATRON_DECODE_TOKENS=8192,10240,12288,16384 \
  BUILD_ARGS="--programs megatron_row,megatron_row_fused,megatron_row_chunks2" \
  BENCH_ARGS="--configs decode_T=8192_H=4096_f16,decode_T=10240_H=4096_f16,decode_T=12288_H=4096_f16,decode_T=16384_H=4096_f16 --rows eager,coconetc,coconetc_fused,coconetc_chunks2"
job_end
