#!/usr/bin/env bash
# Not run yet (session 53): part 3 of issue 5's figures on sm_90a builds, rows taking turns:
# the Megatron row layer at 2 GPUs (every shape; eager, async TP, the sample, fuse(y, out)),
# GEMV + all-reduce at 4 and 2 GPUs (unfused, torch.compile, the sample), the all-reduce alone at
# 2 GPUs. Needs 4 GPUs for the GEMV's 4-GPU rows (on 2: GEMV at 2 only).
# Bundle: bash tools/gpu-bundle.sh.
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-next-r3.sh (kind
#   nvidia-h200-x4, or -x2 with GEMV_GPUS=2; carry .gpu-bundle).  -> $OUT/r3.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin r3 "${LIMIT:-560}"
job_bench megatron2 2 megatron $(( $(left) * 45 / 100 )) \
  BUILD_ARGS="--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled,megatron_row_fused" \
  BENCH_ARGS="--rows eager,async_tp,coconetc,coconetc_fused --interleave 10"
job_bench gemv "${GEMV_GPUS:-4,2}" gemv $(( $(left) * 60 / 100 )) \
  BUILD_ARGS="--programs decode_gemv,decode_gemv_unscheduled" \
  BENCH_ARGS="--rows unfused,torch.compile,coconetc --interleave 10"
job_bench allreduce2 2 allreduce $(( $(left) - 10 )) \
  BUILD_ARGS="--programs allreduce" BENCH_ARGS="--rows coconetc,nccl_allreduce --interleave 10"
job_end
