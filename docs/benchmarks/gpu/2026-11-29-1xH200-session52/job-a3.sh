#!/usr/bin/env bash
# Session 52, call a3 (1 H200): is it PDL or the sm_90a code that makes the one-rank LAMB driver no
# faster? The same generated LAMB (this compiler, .gpu-bundle/ab/solo) built for sm_90a and for
# sm_75 (solo75: its CMakeLists.txt's default edited to 75), drivers at one rank, N = 2^22, with
# and without COCONET_PDL=0, three repetitions interleaved (200 warm-up calls, 300 timed).
# Run: LIMIT=120 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-a3.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/a3
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a3 "${LIMIT:-120}"
A=.gpu-bundle/ab
timeout 110 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 300 --warmup 200 --reps 3 --env ";COCONET_PDL=0" \
  -D N=4194304 -D t=10 $A/solo75 $A/solo >> "$R/ab.txt" 2>&1
step "drivers" $?
cat "$R/ab.txt"
job_end
