#!/usr/bin/env bash
# Call k (session 59), one GPU: the GPU tests of the row programs after the threads-a-row change
# (R a multiple of 32 past 128): rowwise_types (new set @r192: 352 threads, 7 or 8 packs each),
# ops_mix (@w12k: 192 and 384 threads), keepdim_norms, seq_parallel, with every set, at one rank;
# then memcheck on rowwise_types@r192 and ops_mix@w12k.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=180 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-k.sh (carry .gpu-bundle) -> $OUT/k.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin k "${LIMIT:-180}"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types ops_mix keepdim_norms seq_parallel" \
  SANITIZE=1 SANITIZE_TOOLS=memcheck GPU_TESTS_SANITIZE_SETS="rowwise_types@r192 ops_mix@w12k"
job_end
