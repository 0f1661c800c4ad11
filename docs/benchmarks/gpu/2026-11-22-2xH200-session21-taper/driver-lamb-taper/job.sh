#!/usr/bin/env bash
# session 21 job 1 (2x H200): LAMB drivers with tapered chunks (chunkLo taper, tune(f, taper = K)) A/B;
# GPU tests of the tapered builds. The folders in .gpu-bundle/proto were made on the build machine after
# `bash tools/gpu-bundle.sh`:
#   tK:  samples/lamb/lamb.sched + tune(moments, taper = K); tune(apply, taper = K)   (t0: uniform chunks, as before)
#   stK: samples/lamb/lamb.sched + tune(moments, roles = split, taper = K); tune(apply, roles = split, taper = K)
#   build/coconetc compile samples/lamb/lamb.cnet --schedule .gpu-bundle/proto/lamb-V.sched -o .gpu-bundle/proto/V
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
nccl=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/taper; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
cd .gpu-bundle/proto
D="t0 t1 t2 t3 st0 st2 st3"
for d in $D; do
  ( cmake -S $d -B $d/b -DNCCL_ROOT=$nccl > $d/build.log 2>&1 && cmake --build $d/b -j 2 >> $d/build.log 2>&1 ) || echo "build $d failed" &
done
wait
echo "built at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { local d=$1 N=$2 rep=$3; local exe=$(ls $d/b/*_main | head -1)
  timeout 100 $exe --spawn $G -D N=$N -D t=1 --bench --iters 40 --warmup 30 > $R/run-$d-N$N-r$rep.txt 2>&1
  echo "$d N=$N rep $rep: $(grep -o '"median_us": [0-9.]*' $R/run-$d-N$N-r$rep.txt | head -1)" >> $R/summary.txt; }
for N in 67108864 268435456; do
  for rep in 1 2; do for d in t0 t1 t2 t3 st0 st2; do run $d $N $rep; done; done
done
for rep in 1 2; do for d in t0 t2 st0 st2 st3; do run $d 16777216 $rep; done; done
echo "A/B done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt
cd ../..
mkdir -p $R/gputests
left=$(( 570 - ($(date +%s) - T0) ))
GPU_TESTS_ONLY="lamb lamb@split3 lamb@split16 lamb@chunks8 lamb@taper" SANITIZE=0 OUT=$R/gputests timeout $left bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? (limit $left s)" >> $R/gputests.log
tail -5 $R/gputests.log
cd $OUT && tar czf taper.tgz taper && rm -rf taper
