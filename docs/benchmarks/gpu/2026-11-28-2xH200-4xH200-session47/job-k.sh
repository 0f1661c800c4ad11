#!/usr/bin/env bash
# Session 47, call k (2 or 4 GPUs): does a push whose blocks claim tiles (tools/bench/gpu/sm-transfer-micro.cu
# `dyn`: push_dyn_k) end sooner than the runtime's static parts, and how unevenly do the static
# parts' blocks end? (LAMB's `moments` at 2^26 on 4 H200, call i: its slowest mover ends each
# round 14-42 us after mover block 0.)  -> $OUT/k
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin k "${LIMIT:-120}"
NC=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt > "$R/build.txt" 2>&1
step build $?
LD_LIBRARY_PATH=$NC/lib timeout $(( $(left) - 5 )) /tmp/smt dyn 16 32 128 > "$R/dyn.txt" 2>&1
step dyn $?
cat "$R/dyn.txt"
job_end
