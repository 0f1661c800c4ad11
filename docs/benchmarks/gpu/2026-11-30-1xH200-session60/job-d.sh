#!/usr/bin/env bash
# Session 60 call d (1x H200): rows-prefetch-micro.cu's register-form variants (which of the
# loads' and stores' cache hints made call c's regefcs 1-6% faster than the generated kernel),
# at T = 8192, H = 1024 / 4096 / 8192 / 12288, 4 rounds.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-d.sh (carry .gpu-bundle) -> $OUT/d.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-150}"
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
.gpu-bundle/bin/coconetc compile tools/bench/programs/rmsnorm.cnet -o /tmp/rms > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/rms -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-prefetch-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-prefetch > "$R/prefetch.txt" 2>&1
step build $?
for H in 1024 4096 8192 12288; do timeout 60 /tmp/rows-prefetch 8192 $H 4 gen,reg,tp256cs >> "$R/prefetch.txt" 2>&1; done
step prefetch $?
grep -v "^ptxas\|^$\|max |diff|" "$R/prefetch.txt" | grep -v "^pf\|^  pf"
job_end
