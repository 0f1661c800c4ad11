#!/usr/bin/env bash
# Call j (session 59), one GPU: layer norm at H = 12288 stays 9% behind torch.compile with the rows
# taking turns (call i: 110.3 vs 101.1 us; H = 8192 level, 73.2 vs 72.6). Its rows take 256
# threads, 6 packs each (R a power of two), 4 blocks an SM. Here rows-b2b-micro as generated and
# with rowThreads' R a multiple of 32 from 128 up (12288: 192 threads of 8 packs, 5 blocks an SM),
# at T = 8192 x H = 8192, 10240, 12288, 20480, 24576.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-j.sh (carry .gpu-bundle) -> $OUT/j.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin j "${LIMIT:-200}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
export LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH
for v in pow2 mult32; do
  g=/tmp/ln-$v; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
  [ $v = mult32 ] && sed -i 's/for (int r = 1; r <= 512; r \*= 2)/for (int r = 1; r <= 512; r = r < 128 ? r * 2 : r + 32)/' $g/coconet_runtime.cuh
  grep -c "r < 128 ? r \* 2 : r + 32" $g/coconet_runtime.cuh >> $R/patched.txt
  nvcc -std=c++17 -O3 -arch=sm_90a -I$g -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-b2b-micro.cu \
    -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b-$v > $R/build-$v.log 2>&1 &
done
wait
step "builds" $?
for h in 8192 10240 12288 20480 24576; do
  for v in pow2 mult32; do
    echo "== $v H=$h" >> $R/rows-b2b.txt
    timeout 40 /tmp/rows-b2b-$v 8192 $h >> $R/rows-b2b.txt 2>&1
    step "micro $v H=$h" $?
  done
done
cat $R/patched.txt
grep -E "^==|blocks of|b2b|^ok|DIFF" $R/rows-b2b.txt
job_end
