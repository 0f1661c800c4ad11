#!/usr/bin/env bash
# Session 52, call s5 (1 H200): `apply` left at once (its code dropped: 13 registers), after
# p1st-pm's `moments` (32 registers, pdl-micro's primary behaviour: both kernels fit on one SM) in
# p1st-pm-ae, after the real `moments` in p1st-ae, and in p1st-pm-ae-nodc also without its
# ncclDevComm parameter (an int in its place). Stamps (call 200 of 250, one rank, N = 2^22); results
# not checked.
# Bundle: as job-s1.sh, then p1st-pe and p1st-pm made from p1st by hand (README).
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s5.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s5
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s5 "${LIMIT:-200}"
A=.gpu-bundle/ab
for v in p1st-pm-ae p1st-ae p1st-pm-ae-nodc; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 2 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt" "$R/stamps.txt"
job_end
