#!/usr/bin/env bash
# session 20 job 1: moments' occupancy (launch_bounds min blocks 2) x movers 16/32/64, stamped drivers; GPU tests of 810ec9f + movers 32
# The folders in .gpu-bundle/proto were made on the build machine after `bash tools/gpu-bundle.sh`:
#   sed "s/tune(moments, movers = 32);/tune(moments, movers = M);/" samples/lamb/lamb.sched > .gpu-bundle/lamb-mM.sched  (M = 16, 64)
#   build/coconetc compile samples/lamb/lamb.cnet --schedule .gpu-bundle/lamb-mM.sched -o .gpu-bundle/proto/gen-mM
#   python3 tools/bench/gpu/proto_lamb_rounds.py .gpu-bundle/gen/lamb       .gpu-bundle/proto/s32    stamps
#   python3 tools/bench/gpu/proto_lamb_rounds.py .gpu-bundle/gen/lamb       .gpu-bundle/proto/s32-o2 stamps-o2
#   python3 tools/bench/gpu/proto_lamb_rounds.py .gpu-bundle/proto/gen-m64  .gpu-bundle/proto/s64-o2 stamps-o2
#   python3 tools/bench/gpu/proto_lamb_rounds.py .gpu-bundle/proto/gen-m16  .gpu-bundle/proto/s16-o2 stamps-o2
#   python3 tools/bench/gpu/proto_lamb_rounds.py .gpu-bundle/proto/gen-m64  .gpu-bundle/proto/s64    stamps
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
nccl=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/occ; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l) commit $(git rev-parse --short HEAD 2>/dev/null)" > $R/header.txt
cd .gpu-bundle/proto
D="s32 s32-o2 s64 s64-o2 s16-o2"
for d in $D; do
  ( cmake -S $d -B $d/b -DNCCL_ROOT=$nccl "-DCMAKE_CUDA_FLAGS=-Xptxas -v" > $d/build.log 2>&1 && cmake --build $d/b -j 3 >> $d/build.log 2>&1 ) || echo "build $d failed" &
done
wait
for d in $D; do grep -h -A4 "Compiling entry function.*moments_device" $d/build.log | head -6 | sed "s|^|$d: |" >> $R/ptxas.txt; done
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { local d=$1 N=$2 rep=$3; shift 3; local exe=$(ls $d/b/*_main | head -1)
  timeout 100 $exe --spawn 4 -D N=$N -D t=1 --bench --iters 40 --warmup 30 > $R/run-$d-N$N-r$rep.txt 2>&1
  echo "$d N=$N rep $rep: $(grep -o '"median_us": [0-9.]*' $R/run-$d-N$N-r$rep.txt | head -1)" >> $R/summary.txt; }
for N in 67108864 268435456; do
  for rep in 1 2; do for d in $D; do run $d $N $rep; done; done
done
for d in s32 s32-o2; do run $d 16777216 1; done
cat $R/summary.txt
echo "A/B done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cd ../..
mkdir -p $R/gputests
left=$(( 575 - ($(date +%s) - T0) ))
GPU_TESTS_ONLY="lamb lamb@split3 lamb@split16 scalar_chain norm_clip" SANITIZE=0 OUT=$R/gputests timeout $left bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? (limit $left s)" >> $R/gputests.log
tail -5 $R/gputests.log
cd $OUT && tar czf occ.tgz occ && rm -rf occ
