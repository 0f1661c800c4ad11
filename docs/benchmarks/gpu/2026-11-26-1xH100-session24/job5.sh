#!/usr/bin/env bash
# session 24 job 5 (1x H100): Adam and LAMB on one GPU after the fused groups' kernels took the
# device path there: coconetc (device path), coconetc_nccl (the NCCL calls, as every P = 1 run
# before), torch.compile, eager, in one run.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader; } > $R/header.txt
lim=${LIM:-480}
timeout $lim env OUT=$R/bench-optim-p1 WORK=/tmp/bw BENCH_TIMEOUT=$((lim-15)) BENCH_ARGS='--rows eager,torch.compile,coconetc,coconetc_nccl' bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
[ -f $R/bench-optim-p1/results.md ] || timeout 30 python3 tools/bench/gpu/report.py --results $R/bench-optim-p1 >> $R/summary.txt 2>&1
cat $R/summary.txt; grep -h "median" $R/bench-optim-p1/logs/bench-p1-*.log | head -60
cd $OUT && tar czf s24e.tgz s24e && rm -rf s24e
