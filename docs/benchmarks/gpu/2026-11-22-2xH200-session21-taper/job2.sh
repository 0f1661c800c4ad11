#!/usr/bin/env bash
# session 21 job 2 (2x H200): the LAMB bench with tapered chunks (the default since this session),
# then Adam drivers: the sample (roles shared) against roles split with chunks alike (taper 0) and tapered
# (the default taper under roles, 2). Folders in .gpu-bundle/proto made on the build machine after
# `bash tools/gpu-bundle.sh`: samples/adam/adam.sched + '' (a-sh), + 'tune(f, roles = split, taper = 0);' (a-s0),
# + 'tune(f, roles = split);' (a-s2), each `build/coconetc compile samples/adam/adam.cnet --schedule ... -o .gpu-bundle/proto/V`.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
nccl=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/s21b; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G commit $(git rev-parse --short HEAD 2>/dev/null)" > $R/header.txt
( cd .gpu-bundle/proto && for d in a-sh a-s0 a-s2; do
  ( cmake -S $d -B $d/b -DNCCL_ROOT=$nccl > $d/build.log 2>&1 && cmake --build $d/b -j 4 >> $d/build.log 2>&1 ) || echo "build $d failed" &
done; wait ) &
BP=$!
lim=300
timeout $lim bash -c "OUT=$R/bench-lamb WORK=/tmp/bw-lamb BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus $G --workloads lamb" > $R/bench-lamb.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
wait $BP
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd .gpu-bundle/proto
run() { local d=$1 N=$2 rep=$3; local exe=$(ls $d/b/*_main | head -1)
  timeout 60 $exe --spawn $G -D N=$N -D t=1 --bench --iters 40 --warmup 30 > $R/run-$d-N$N-r$rep.txt 2>&1
  echo "$d N=$N rep $rep: $(grep -o '"median_us": [0-9.]*' $R/run-$d-N$N-r$rep.txt | head -1)" >> $R/summary.txt; }
for rep in 1 2; do for N in 16777216 67108864 268435456; do for d in a-sh a-s0 a-s2; do
  [ $(( $(date +%s) - T0 )) -lt 560 ] && run $d $N $rep
done; done; done
echo "done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt
cd $OUT && tar czf s21b.tgz s21b && rm -rf s21b
