#!/usr/bin/env bash
# Session 52, call s7 (1 H200): pdl-micro's pair inside the generated driver's process, on its
# stream (proto_pdlin.py: before the program, after the --bench warm-up, after the timed calls), in
# the stamped p1st and p1st-pm-ae drivers (call 200 of 250, one rank, N = 2^22).
# Bundle: as job-s5.sh, then proto_pdlin.py X X-probe for X in p1st, p1st-pm-ae.
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s7.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s7
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s7 "${LIMIT:-150}"
A=.gpu-bundle/ab
for v in p1st-probe p1st-pm-ae-probe; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 1 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST\|^PDLPROBE" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt" "$R/stamps.txt"
job_end
