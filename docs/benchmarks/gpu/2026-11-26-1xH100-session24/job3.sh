#!/usr/bin/env bash
# session 24 job 3 (1x H100): the Adam and LAMB benches on one GPU (no communication: the fused
# update against eager and torch.compile), as far as the time limit goes; packed either way.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader; } > $R/header.txt
lim=${LIM:-480}
timeout $lim env OUT=$R/bench-optim-p1 WORK=/tmp/bw BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
# the report, where the run was cut off before writing it
[ -f $R/bench-optim-p1/results.md ] || timeout 30 python3 tools/bench/gpu/report.py --results $R/bench-optim-p1 >> $R/summary.txt 2>&1
cat $R/summary.txt; grep -h "median" $R/bench-optim-p1/logs/bench-p1-*.log | head -60
cd $OUT && tar czf s24c.tgz s24c && rm -rf s24c
