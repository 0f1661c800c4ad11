#!/usr/bin/env bash
# Call m6 (1 H200): the multi-rank forms at one rank with rounds that carry data: the optimizers'
# variants with fixed rounds (chunks, split roles, taper) checked with the @big vectors (N = 262144 at
# one rank) in both forms (2df5ffc: GPU_TESTS_MULTI_AT_ONE=1 takes the size variants too); m1-m5's
# default vectors (4 elements) made every round but one empty.
# Bundle: bash tools/gpu-bundle.sh (at 7b46ddb: the generated code of HEAD)
# Run: LIMIT=220 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m6.sh (carry .gpu-bundle) -> $OUT/m6.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m6 "${LIMIT:-220}"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS=1 GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS="adam@big lamb@big" \
  GPU_TESTS_ONLY="adam@chunks5 adam@split5 adam@split16 lamb@chunks3 lamb@split3 lamb@chunks4 lamb@taper"
grep -h "big" "$R/gpu-tests/gpu-results.txt"
job_end
