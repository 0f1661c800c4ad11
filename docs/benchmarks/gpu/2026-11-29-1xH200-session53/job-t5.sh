#!/usr/bin/env bash
# Call t5 (1 H200): does pdl-micro's secondary also pass its wait over 2-3 us of blocks, as t4
# found of LAMB's `apply` (first +2.1-2.2 us after `moments`' last block, last +4.2-5.2)? pdl-micro
# (its secondary's last block past the wait now printed too, 99e18dc) in its regs form, without
# stores and with the late blocks storing 6 units a thread as they leave (local=6, as `moments`'
# workers end on their last chunk's stores), twice each.
# Run: LIMIT=90 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-t5.sh (no bundle needed) -> $OUT/t5.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t5 "${LIMIT:-90}"
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
{ echo "== nvcc -O3 -std=c++17 -arch=sm_90a -I\$NC/include tools/bench/gpu/pdl-micro.cu -L\$NC/lib -l:libnccl.so.2 -o /tmp/pdl-micro"
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a -I"$NC/include" tools/bench/gpu/pdl-micro.cu -L"$NC/lib" -l:libnccl.so.2 -o /tmp/pdl-micro 2>&1
  for rep in 1 2; do
    for args in "32 10 60 50 0 0 1" "32 10 60 50 0 0 1 0 0 6"; do
      echo "== /tmp/pdl-micro $args"; LD_LIBRARY_PATH="$NC/lib:${LD_LIBRARY_PATH:-}" timeout 30 /tmp/pdl-micro $args
    done
  done; } > "$R/pdl-micro.txt" 2>&1
step "pdl-micro" $?
cat "$R/pdl-micro.txt"
job_end
