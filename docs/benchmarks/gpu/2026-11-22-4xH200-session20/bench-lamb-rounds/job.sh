#!/usr/bin/env bash
# session 20 job 3: LAMB bench with rounds 4, 8, 16 rows; Adam bench
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
for w in lamb adam; do
  if [ $w = lamb ]; then lim=290; else lim=$(( 545 - ($(date +%s) - T0) )); fi
  D=/tmp/bres-$w-$(date +%s%N)
  timeout $lim bash -c "BENCH_ROUNDS=4,8,16 OUT=$D WORK=/tmp/bw-$(date +%s%N) BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus 4 --workloads $w" > $OUT/run-$w.log 2>&1
  echo "$w rc=$? at +$(( $(date +%s) - T0 )) s (limit $lim)" >> $OUT/times.txt
  tar czf $OUT/bench-$w.tgz -C $D .
done
cat $OUT/times.txt
