#!/usr/bin/env bash
# Not run yet (written in session 53, when only one GPU was lent): part 1 of issue 5's figures
# measured again on sm_90a builds (every figure before session 52 ran sm_75 code: no programmatic
# dependent launch; bf16 arithmetic through f32), after session 39's consolidated run, the rows
# taking turns. 4 GPUs: the Megatron row layer at every training and decode shape (eager, async TP,
# the sample, fuse(y, out) without overlap), then the all-reduce alone at every size.
# Bundle: bash tools/gpu-bundle.sh (GPU_BUNDLE_ONLY is not needed: run.sh compiles what it benches).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-next-r1.sh (kind
#   nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/r1.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin r1 "${LIMIT:-560}"
job_bench megatron4 4 megatron $(( $(left) * 70 / 100 )) \
  BUILD_ARGS="--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled,megatron_row_fused" \
  BENCH_ARGS="--rows eager,async_tp,coconetc,coconetc_fused --interleave 10"
job_bench allreduce4 4 allreduce $(( $(left) - 10 )) \
  BUILD_ARGS="--programs allreduce" BENCH_ARGS="--rows coconetc,nccl_allreduce --interleave 10"
job_end
