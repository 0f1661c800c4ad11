#!/usr/bin/env bash
# Session 58, call w (after c69fbe2: the interpreter's row sums in f64): rowwise_types at one rank
# with its long rows (rowwise_types@long: 2 rows of 40000, split over blocks) and its other sets,
# then the same with COCONET_ROWWISE=long (one block a row). No sanitizers (call v's memcheck of
# these kernels: clean but for the reference's own error).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=85 bash docs/benchmarks/gpu/2026-11-29-4xH200-session58/job-w.sh (carry .gpu-bundle) -> $OUT/w.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin w "${LIMIT:-85}"
sets="rowwise_types@long rowwise_types@wide rowwise_types@odd"
job_tests --as packs $(( $(left) * 70 / 100 )) GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types" GPU_TESTS_SETS="$sets"
job_tests --as long $(( $(left) - 3 )) COCONET_ROWWISE=long GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types" GPU_TESTS_SETS="$sets"
job_end
