#!/usr/bin/env bash
# Session 61 call a (1x H200): the row groups' first GPU run. GPU tests of row_groups (every set:
# rows of 1024, 12288, 40000, 1002 and 6) and keepdim_norms (its fused RMSNorm now a row kernel) at
# one rank, with memcheck and racecheck on every set; the rowfused bench (written-out add + layer
# norm, scaled softmax and RMSNorm: eager, PyTorch's fused kernel, torch.compile, the row kernel,
# the unfused build), rows taking turns.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=540 bash docs/benchmarks/gpu/2026-12-01-1xH200-session61/job-a.sh (carry .gpu-bundle) -> $OUT/a.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a "${LIMIT:-540}"
job_tests 200 GPU_TESTS_ONLY="row_groups keepdim_norms" \
  GPU_TESTS_SETS="row_groups@r1k row_groups@w12k row_groups@long row_groups@odd row_groups@tall keepdim_norms@big" \
  SANITIZE=1 GPU_TESTS_SANITIZE_SETS="row_groups@r1k row_groups@w12k row_groups@long row_groups@odd row_groups@tall keepdim_norms@big"
job_bench rowfused 1 rowfused $(( $(left) - 10 )) BENCH_ARGS="--interleave 10"
job_end
