#!/usr/bin/env bash
# session 19 job 3: element-invariant values hoisted (old vs new), LAMB moments movers 64 / 32; GPU tests
set -uo pipefail
export NCCL_NVLS_ENABLE=0
nccl=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/hoist; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l)" > $R/header.txt
cd .gpu-bundle/proto
D="lamb-old lamb-hoist lamb-hoist-m32 lamb-hoist-stamps adam-old adam-hoist"
for d in $D; do
  ( cmake -S $d -B $d/b -DNCCL_ROOT=$nccl > $d/build.log 2>&1 && cmake --build $d/b -j 2 >> $d/build.log 2>&1 ) || echo "build $d failed" &
done
wait
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { local d=$1 N=$2 rep=$3; shift 3; local exe=$(ls $d/b/*_main | head -1)
  timeout 100 $exe --spawn 4 -D N=$N -D t=1 --bench --iters 40 --warmup 20 > $R/run-$d-N$N-r$rep.txt 2>&1
  echo "$d N=$N rep $rep: $(grep -o '"median_us": [0-9.]*' $R/run-$d-N$N-r$rep.txt | head -1)" >> $R/summary.txt; }
for N in 16777216 67108864 268435456; do
  for rep in 1 2; do for d in lamb-old lamb-hoist lamb-hoist-m32; do run $d $N $rep; done; done
  run lamb-hoist-stamps $N 1
  for d in adam-old adam-hoist; do run $d $N 1; done
done
cat $R/summary.txt
cd ../..
mkdir -p $R/gputests
GPU_TESTS_ONLY="lamb lamb@split3 adam megatron_row ops_mix norm_clip sgd" SANITIZE=0 OUT=$R/gputests timeout 280 bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$?" >> $R/gputests.log
tail -5 $R/gputests.log
cd $OUT && tar czf hoist.tgz hoist && rm -rf hoist
