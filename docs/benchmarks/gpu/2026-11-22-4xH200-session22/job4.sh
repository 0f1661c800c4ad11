#!/usr/bin/env bash
# session 22 job 4 (2x H200): the LAMB bench at 2 GPUs with the committed form: occupancy = auto on
# `moments` only, its <1> instantiation asking no minimum (as without the knob); then GPU tests of
# lamb, lamb@split3, lamb@chunks8, lamb@split16 (1 and 2 ranks).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
R=$OUT/s22d; mkdir -p $R $R/gputests
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
lim=300
timeout $lim bash -c "OUT=$R/bench-lamb WORK=/tmp/bw-lamb BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus 2 --workloads lamb" > $R/bench-lamb.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
left=$(( 480 - ($(date +%s) - T0) ))
GPU_TESTS_ONLY="lamb lamb@split3 lamb@chunks8 lamb@split16" SANITIZE=0 OUT=$R/gputests timeout $left bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
tail -3 $R/gputests.log >> $R/summary.txt
cat $R/summary.txt
cd $OUT && tar czf s22d.tgz s22d && rm -rf s22d
