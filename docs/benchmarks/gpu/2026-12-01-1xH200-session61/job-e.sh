#!/usr/bin/env bash
# Session 61 call e (1x H200): fuse takes softmax, layernorm and rmsnorm, which a row kernel
# computes from their rows' statistics (its register kernel's arithmetic). GPU tests of
# row_groups (three new groups: the built-in normalizations fused with what feeds them, a sum of
# the normalized rows after the layer norm) with and without the schedule, every set, and
# keepdim_norms, one rank; memcheck of row_groups' default vectors.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=120 bash docs/benchmarks/gpu/2026-12-01-1xH200-session61/job-e.sh (carry .gpu-bundle) -> $OUT/e.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin e "${LIMIT:-120}"
SETS="row_groups@r1k row_groups@w12k row_groups@long row_groups@odd row_groups@tall keepdim_norms@big"
job_tests $(( $(left) - 5 )) GPU_TESTS_ONLY="row_groups row_groups@* keepdim_norms" GPU_TESTS_SETS="$SETS" \
  SANITIZE=1 SANITIZE_TOOLS="memcheck"
job_end
