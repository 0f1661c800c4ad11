#!/usr/bin/env bash
# Call d (session 59), one GPU: call c again with the carveP variants added (call c: back to back
# 72.9 us, but 82.5 us held to the same 8 blocks an SM by dynamic shared memory: L1's size?).
# Call c's text: call b found our layer norm kernel and torch.compile's level alone
# (Nsight Compute: 70.5-71.2 vs 70.5-72.2 us with the caches as the previous launch left them,
# the same DRAM bytes: 134 MB read, ~133 MB written) but 80.4 vs 71.5 us a step back to back.
# tools/bench/gpu/rows-b2b-micro.cu times the generated kernel back to back, each launch alone,
# after sleeps of 2/10/40 us, over two buffer pairs in turn, held to fewer blocks an SM, and as two
# half launches, at T = 8192 x H = 8192 and 12288, with nvidia-smi dmon's clocks and power beside.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-d.sh (carry .gpu-bundle) -> $OUT/d.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-200}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
g=/tmp/ln; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I$g -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-b2b-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b > $R/build.log 2>&1
step "build" $?
nvidia-smi dmon -s pc -d 1 > $R/dmon.txt 2>&1 &
dm=$!
for h in 8192 12288; do
  LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH timeout 60 /tmp/rows-b2b 8192 $h >> $R/rows-b2b.txt 2>&1
  step "micro H=$h" $?
done
kill $dm
cat $R/rows-b2b.txt
job_end
