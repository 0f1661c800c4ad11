#!/usr/bin/env bash
# Prepared in session 44 for the next session (not yet run; any one GPU): pdl-micro, whether PDL
# places a dependent kernel's blocks on SMs the running kernel's early blocks have left (LAMB's
# `apply` entered only ~2 us after `moments`' last block, ~20 us after its movers left).
# -> $OUT/pdl
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin pdl "${LIMIT:-120}"
nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o "$R/pdl-micro" > "$R/build.log" 2>&1
step "build" $?
for a in "32 10 60" "32 20 100" "100 10 60" "1 10 60"; do
  # shellcheck disable=SC2086
  "$R/pdl-micro" $a 50 2>&1 | tee -a "$R/pdl-micro.txt"
done
step "runs" $?
job_end
