#!/usr/bin/env bash
# session 39 job 2 (LIMIT seconds in all, default 520), 4 GPUs: the consolidated run's second part.
# Megatron at 2 GPUs (every training and decode shape; rows as job 1), GEMV + all-reduce at 2 and 4
# GPUs (unfused, torch.compile, coconetc), the all-reduce alone at 4 GPUs (every size, coconetc
# against NCCL). -> $OUT/s39b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39b "${LIMIT:-520}"
job_bench megatron2 2 megatron $(( $(left) * 45 / 100 )) \
  BUILD_ARGS="--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled,megatron_row_chunks2,megatron_row_bf16_chunks2,megatron_row_fused" \
  BENCH_ARGS="--rows eager,async_tp,coconetc,coconetc_chunks2,coconetc_fused"
job_bench gemv 4,2 gemv $(( $(left) * 45 / 100 )) \
  BUILD_ARGS="--programs decode_gemv,decode_gemv_unscheduled" \
  BENCH_ARGS="--rows unfused,torch.compile,coconetc"
job_bench allreduce4 4 allreduce $(( $(left) - 10 )) \
  BUILD_ARGS="--programs allreduce" BENCH_ARGS="--rows coconetc,nccl_allreduce"
job_end
