#!/usr/bin/env bash
# Session 52, call s4 (1 H200): the generated `moments` with pdl-micro's primary behaviour (blocks
# 0-31 leave 10 us after entry, the rest after 60 us; no work): p1st-pe keeps the kernel's code
# behind a run-time condition (102 registers, 8 KiB of shared memory: one block per SM, `apply`
# fits on no SM it holds), p1st-pm drops it (32 registers: `apply` fits beside it). Stamps (call
# 200 of 250, one rank, N = 2^22) of each; results are not checked (the update does not run).
# Bundle: as job-s1.sh, then p1st-pe and p1st-pm made from p1st by hand (README).
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s4.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s4 "${LIMIT:-150}"
A=.gpu-bundle/ab
for v in p1st-pe p1st-pm; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 2 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt" "$R/stamps.txt"
job_end
