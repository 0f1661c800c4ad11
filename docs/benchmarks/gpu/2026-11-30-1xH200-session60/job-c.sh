#!/usr/bin/env bash
# Session 60 call c (1x H200): rows-prefetch-micro.cu with torch.compile's form of RMSNorm (the row
# read twice, the second time from L2: tpN) and L2 eviction hints on the generated form (regef*),
# against the generated kernel, at T = 8192, H = 4096 / 8192 / 12288 and T = 1024, H = 65536.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-c.sh (carry .gpu-bundle) -> $OUT/c.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c "${LIMIT:-200}"
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
.gpu-bundle/bin/coconetc compile tools/bench/programs/rmsnorm.cnet -o /tmp/rms > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/rms -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-prefetch-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-prefetch > "$R/prefetch.txt" 2>&1
step build $?
for TH in "8192 4096" "8192 8192" "8192 12288" "1024 65536"; do timeout 60 /tmp/rows-prefetch $TH 3 >> "$R/prefetch.txt" 2>&1; done
step prefetch $?
grep -v "^ptxas\|^$\|max |diff|" "$R/prefetch.txt" | grep -v "^pf\|^  pf"
job_end
