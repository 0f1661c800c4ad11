#!/usr/bin/env bash
# Session 61 call b (1x H200): the row kernels with the operands several passes read kept in
# registers (the cached instance, C). GPU tests of row_groups (every set) and keepdim_norms at one
# rank as built (the cached instance where the row fits) and with COCONET_ROWWISE=long (the
# re-reading instance, a block a row), memcheck of every set; the rowfused bench, rows taking turns.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-12-01-1xH200-session61/job-b.sh (carry .gpu-bundle) -> $OUT/b.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin b "${LIMIT:-560}"
SETS="row_groups@r1k row_groups@w12k row_groups@long row_groups@odd row_groups@tall keepdim_norms@big"
job_tests 120 GPU_TESTS_ONLY="row_groups keepdim_norms" GPU_TESTS_SETS="$SETS" \
  SANITIZE=1 SANITIZE_TOOLS="memcheck" GPU_TESTS_SANITIZE_SETS="$SETS"
job_tests --as long 60 COCONET_ROWWISE=long GPU_TESTS_ONLY="row_groups keepdim_norms" GPU_TESTS_SETS="$SETS"
job_bench rowfused 1 rowfused $(( $(left) - 10 )) BENCH_ARGS="--interleave 10"
job_end
