#!/usr/bin/env bash
# Not run yet (session 53): part 2 of issue 5's figures on sm_90a builds, 4 GPUs, rows taking
# turns: Adam and LAMB 2^20 .. 2^28 (eager, ZeRO-style, the sample, NCCL's all-reduce of the
# gradients), the pipeline boundary (eager, the sample), embedding + all-to-all and MoE (unfused,
# the sample). (Session 52's job-next-b.sh is the sm_90a-against-sm_75 A/B of Adam and LAMB.)
# Bundle: bash tools/gpu-bundle.sh.
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-next-r2.sh (kind
#   nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/r2.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin r2 "${LIMIT:-560}"
job_bench optim4 4 adam,lamb $(( $(left) * 55 / 100 )) \
  BUILD_ARGS="--programs adam,lamb" \
  BENCH_ARGS="--configs N=2^20,N=2^22,N=2^24,N=2^26,N=2^28 --rows eager,zero,coconetc,nccl_allreduce --interleave 10"
job_bench others4 4 pipeline,embedding,moe $(( $(left) - 10 )) \
  BUILD_ARGS="--programs pipeline,dlrm_embedding,moe_gemm" \
  BENCH_ARGS="--rows eager,coconetc,unfused --interleave 10"
job_end
