#!/usr/bin/env bash
# Session 61 call c (1x H200): element-wise kernels reading a keepdim reduction's [..., 1] result
# once a row (Access::Row, at i / rl) instead of through coordinates. GPU tests of row_groups and
# keepdim_norms with their schedules and without (@none: every stage its own kernel), every set,
# one rank; the rowfused bench again (its coconetc_unfused rows take that path), rows taking turns.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=400 bash docs/benchmarks/gpu/2026-12-01-1xH200-session61/job-c.sh (carry .gpu-bundle) -> $OUT/c.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c "${LIMIT:-400}"
SETS="row_groups@r1k row_groups@w12k row_groups@long row_groups@odd row_groups@tall keepdim_norms@big"
job_tests 110 GPU_TESTS_ONLY="row_groups row_groups@* keepdim_norms keepdim_norms@*" GPU_TESTS_SETS="$SETS" SANITIZE=0
job_bench rowfused 1 rowfused $(( $(left) - 10 )) BENCH_ARGS="--interleave 10"
job_end
