#!/usr/bin/env bash
# Call e (session 59), one GPU: call d found the layer norm kernel 82.5 us back to back with a
# shared memory carveout preference of 50 or 100% and 72.9 with none or 0% (H = 12288: 127.0 vs
# 109.3), whatever kernel ran before it; the bench and the generated driver time it at ~80-82.
# Here: rows-b2b-micro plain and with NCCL and the generated program set up first (`program`: its
# `run` too), and the generated driver's own bench, at T = H = 8192.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-e.sh (carry .gpu-bundle) -> $OUT/e.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin e "${LIMIT:-200}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
export LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH
g=/tmp/ln; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I$g -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-b2b-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b > $R/build.log 2>&1
step "build micro" $?
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $R/build-driver.log 2>&1 && cmake --build $g/build -j 8 >> $R/build-driver.log 2>&1 )
step "build driver" $?
for mode in plain program; do
  echo "== $mode" >> $R/rows-b2b.txt
  timeout 60 /tmp/rows-b2b 8192 8192 $mode >> $R/rows-b2b.txt 2>&1
  step "micro $mode" $?
done
timeout 60 $g/build/layernorm_main -D T=8192 -D H=8192 --bench --iters 200 --warmup 50 > $R/driver.txt 2>&1
step "driver" $?
cat $R/rows-b2b.txt $R/driver.txt
job_end
