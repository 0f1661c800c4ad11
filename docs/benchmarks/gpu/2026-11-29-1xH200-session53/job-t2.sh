#!/usr/bin/env bash
# Call t2: compute-sanitizer (memcheck, then racecheck as time allows) on the default builds whose
# memcheck call t1 did not reach (its driver checks passed: 62 of 62), at one rank; no driver checks.
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-t2.sh (carry .gpu-bundle) -> $OUT/t2.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t2 "${LIMIT:-420}"
names="matmul_allreduce matmul_all_to_all megatron_mlp megatron_row moe_gemm norm_clip ops_mix overlap_cast pipeline reduce_chains run_args scalar_chain sgd tail_fold"
job_tests $(( $(left) - 10 )) GPU_TESTS_ONLY="$names" GPU_TESTS_RANKS=1 GPU_TESTS_DRIVERS=0 SANITIZE=1
job_end
