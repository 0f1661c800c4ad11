#!/usr/bin/env bash
# session 22 job 1 (4x H200): the LAMB bench at 4 and 2 GPUs with the coconetc_occ2 row (moments at
# __launch_bounds__(512, 2)); then GPU tests of lamb@occ2, lamb@taper, lamb@many on every GPU.
# (As run. The GPU tests wrote nothing: tests/gpu/run.sh needs its OUT folder to exist, and this
# script did not make $R/gputests; job2.sh does.)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
R=$OUT/s22a; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
lim=380
timeout $lim bash -c "OUT=$R/bench-lamb WORK=/tmp/bw-lamb BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus 4,2 --workloads lamb" > $R/bench-lamb.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
left=$(( 570 - ($(date +%s) - T0) ))
GPU_TESTS_ONLY="lamb@occ2 lamb@taper lamb@many" SANITIZE=0 OUT=$R/gputests timeout $left bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
tail -8 $R/gputests.log >> $R/summary.txt
cat $R/summary.txt
cd $OUT && tar czf s22a.tgz s22a && rm -rf s22a
