#!/usr/bin/env bash
# Not run yet (session 60's device time was spent): rows too long for the registers. torch.compile
# reads such a row twice too, but asks L2 to keep it on the first read (evict_last) and lets it go
# on the second (session 60 call b, b/tc_code.txt); its RMSNorm / layer norm at T = 1024 rows of
# 65536 took 102.5 / 121.4 us against our 106.2 / 128.2 (call n2). rows-prefetch-micro.cu's tpN
# variants are that form (tp256cs: .cs stores too); genlong is the generated `_long` kernel, gen /
# genS the register kernel plain / streaming where the row fits. If tp* beat genlong, give the
# `_long` and `_split_*` kernels' first read evict_last and their second evict_first with .cs stores
# (coconet_rt::loadPackEvictFirst, storeRounded<T, true>; an evict_last policy beside them).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-next-g.sh (carry .gpu-bundle) -> $OUT/g.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin g "${LIMIT:-150}"
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
.gpu-bundle/bin/coconetc compile tools/bench/programs/rmsnorm.cnet -o /tmp/rms > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/rms -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-prefetch-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-prefetch > "$R/prefetch.txt" 2>&1
step build $?
for TH in "1024 65536" "8192 16384" "4096 32768" "8192 8192"; do
  timeout 60 /tmp/rows-prefetch $TH 4 'gen$,genS,genlong,tp' >> "$R/prefetch.txt" 2>&1
done
step prefetch $?
grep -v "^ptxas\|^$\|max |diff|" "$R/prefetch.txt"
job_end
