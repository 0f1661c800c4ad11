#!/usr/bin/env bash
# session 39 job 3 (LIMIT seconds in all, default 520), 4 GPUs: the consolidated run's third part.
# Adam and LAMB (2^20 .. 2^28: eager, zero, coconetc, the bare all-reduce), the
# pipeline boundary (eager, coconetc), embedding + all-to-all and MoE (unfused,
# coconetc) at 4 GPUs, one row after another; then MoE with the rows taking turns. -> $OUT/s39c
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39c "${LIMIT:-520}"
job_bench optim4 4 adam,lamb,pipeline,embedding,moe $(( $(left) * 70 / 100 )) \
  BUILD_ARGS="--programs adam,lamb,pipeline,dlrm_embedding,moe_gemm" \
  BENCH_ARGS="--rows eager,zero,coconetc,nccl_allreduce,unfused"
job_bench moe4-interleaved 4 moe $(( $(left) - 10 )) BUILD_ARGS="--programs moe_gemm" BENCH_ARGS="--rows unfused,coconetc --interleave 10"
job_end
