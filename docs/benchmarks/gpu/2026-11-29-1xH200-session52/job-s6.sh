#!/usr/bin/env bash
# Session 52, call s6 (1 H200): does what NCCL sets up in a process keep a dependent kernel's blocks
# off the SMs until its primary ends? pdl-micro (regs=1: the secondary on no SM the primary holds;
# and the default form, where both fit on an SM) after nccl=0..4 (a communicator of one rank, its
# device communicator, a symmetric window, an allreduce on the micro's stream).
# Run: LIMIT=120 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s6.sh (kind nvidia-h200).
#   -> $OUT/s6
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s6 "${LIMIT:-120}"
export PATH=/usr/local/cuda/bin:$PATH
NC=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
export LD_LIBRARY_PATH="$NC/lib:$LD_LIBRARY_PATH"
{ echo "== nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/pdl-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/pdl-micro"
  nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/pdl-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/pdl-micro 2>&1
  for base in "32 10 60 50 0 0 1" "32 10 60 50 0 0 0"; do
    for k in 0 1 2 3 4; do
      echo "== /tmp/pdl-micro $base 0 0 0 0 0 0 $k"
      timeout 40 /tmp/pdl-micro $base 0 0 0 0 0 0 $k
    done
  done; } > "$R/pdl-micro.txt" 2>&1
step "pdl-micro" $?
cat "$R/pdl-micro.txt"
job_end
