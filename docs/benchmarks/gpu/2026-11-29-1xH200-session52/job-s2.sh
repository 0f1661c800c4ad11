#!/usr/bin/env bash
# Session 52, call s2 (1 H200): is `apply` placed early when the host is ahead? (1) pdl-micro with
# the host waiting 0 / 20 / 40 us between the primary's launch and the secondary's (gapUs, new),
# the secondary on no SM the primary holds (by registers, regs=1; by shared memory, secBig=1);
# (2) the drivers' medians (N = 2^22, one rank): the one-rank form and proto_p1's multi-rank kernels,
# each with the generated driver (a wait after every call) and with the host ahead (proto_p1.py
# --ahead: the mean per call); (3) stamps of both with the host ahead (call 200 of 250).
# Bundle: as job-s1.sh, then proto_p1.py --ahead X X-ahead for X in solo, p1, solost, p1st.
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s2.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s2 "${LIMIT:-300}"
A=.gpu-bundle/ab
export PATH=/usr/local/cuda/bin:$PATH
{ echo "== nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o /tmp/pdl-micro"
  nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o /tmp/pdl-micro 2>&1
  for args in "32 10 60 50 0 0 1" "32 10 60 50 1 0 0"; do
    for gap in 0 20 40; do
      echo "== /tmp/pdl-micro $args 0 0 0 $gap"
      timeout 30 /tmp/pdl-micro $args 0 0 0 $gap
    done
  done; } > "$R/pdl-micro.txt" 2>&1
step "pdl-micro" $?
timeout 120 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 300 --warmup 50 --reps 2 \
  -D N=4194304 -D t=10 $A/solo $A/solo-ahead $A/p1 $A/p1-ahead >> "$R/ab.txt" 2>&1
step "drivers" $?
for v in p1st-ahead solost-ahead; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 2 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/pdl-micro.txt" "$R/ab.txt" "$R/stamps.txt"
job_end
