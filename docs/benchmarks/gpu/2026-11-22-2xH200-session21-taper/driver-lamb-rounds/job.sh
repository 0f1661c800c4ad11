#!/usr/bin/env bash
# session 21 job 5 (2x H200): LAMB rounds x taper with tapered chunks (drivers). Folders in .gpu-bundle/proto made
# on the build machine: def = .gpu-bundle/gen/lamb (the sample: rounds by size, roles auto, taper 2 in roles);
# rK[sT|tT] = samples/lamb/lamb.sched + tune(moments, chunks = K[, roles = split], taper = T); the same for apply
# (r8t2 and r12t2 without the taper knob: 2 by default in roles), each
# `build/coconetc compile samples/lamb/lamb.cnet --schedule .gpu-bundle/proto/V.sched -o .gpu-bundle/proto/V`.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
nccl=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/s21e; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
cd .gpu-bundle/proto
D="def r4s2 r6s2 r6s1 r8t2 r8t3 r12t2 r16t3 r24t3"
for d in $D; do
  ( cmake -S $d -B $d/b -DNCCL_ROOT=$nccl > $d/build.log 2>&1 && cmake --build $d/b -j 2 >> $d/build.log 2>&1 ) || echo "build $d failed" &
done
wait
echo "built at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { local d=$1 N=$2 rep=$3; local exe=$(ls $d/b/*_main | head -1)
  [ $(( $(date +%s) - T0 )) -lt 330 ] || return 0
  timeout 40 $exe --spawn $G -D N=$N -D t=1 --bench --iters 40 --warmup 30 > $R/run-$d-N$N-r$rep.txt 2>&1
  echo "$d N=$N rep $rep: $(grep -o '"median_us": [0-9.]*' $R/run-$d-N$N-r$rep.txt | head -1)" >> $R/summary.txt; }
for rep in 1 2; do
  for d in def r4s2 r6s2 r6s1 r8t2; do run $d 16777216 $rep; done
  for d in def r6s2 r8t3 r12t2 r16t3; do run $d 67108864 $rep; done
  for d in def r8t2 r12t2 r16t3 r24t3; do run $d 268435456 $rep; done
done
echo "done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt
cd $OUT && tar czf s21e.tgz s21e && rm -rf s21e
