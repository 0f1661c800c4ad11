#!/usr/bin/env bash
# Session 52, call s3 (1 H200): what keeps `apply`'s blocks off the SMs `moments`' blocks leave?
# (1) pdl-micro (regs=1: the secondary on no SM the primary holds) with a stack frame in the
# secondary (lmem, new) and a printf in the primary (printf, new), each alone and both;
# (2) stamps (call 200 of 250, one rank, N = 2^22) of proto_p1's kernels with `apply` at one block
# per SM by __launch_bounds__(512, 1) (p1st-b1: 89 registers, no stack frame; p1st's `apply` 64
# registers, 72 bytes of stack) and with stamps.py's printf moved from `moments` to `apply`
# (p1st-pa: `moments` then has no stack frame).
# Bundle: as job-s1.sh, then p1st-b1 and p1st-pa made from p1st by hand (README).
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s3.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s3
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s3 "${LIMIT:-300}"
A=.gpu-bundle/ab
export PATH=/usr/local/cuda/bin:$PATH
{ echo "== nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o /tmp/pdl-micro"
  nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o /tmp/pdl-micro 2>&1
  for extra in "0 0" "1 0" "0 1" "1 1"; do
    echo "== /tmp/pdl-micro 32 10 60 50 0 0 1 0 0 0 0 $extra"
    timeout 30 /tmp/pdl-micro 32 10 60 50 0 0 1 0 0 0 0 $extra
  done; } > "$R/pdl-micro.txt" 2>&1
step "pdl-micro" $?
for v in p1st-b1 p1st-pa; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 2 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/pdl-micro.txt" "$R/ab.txt" "$R/stamps.txt"
job_end
