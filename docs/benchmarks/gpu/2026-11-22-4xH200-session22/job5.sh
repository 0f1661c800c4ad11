#!/usr/bin/env bash
# session 22 job 5 (1x H100, the session's last device seconds): the Adam and LAMB benches on one
# GPU (no communication: the fused update against eager, torch.compile), as far as the time goes.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s22e; mkdir -p $R
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" > $R/header.txt
lim=${LIM:-170}
timeout $lim bash -c "OUT=$R/bench-optim-p1 WORK=/tmp/bw BENCH_TIMEOUT=$((lim-10)) bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb" > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; tail -5 $R/bench.log
cd $OUT && tar czf s22e.tgz s22e && rm -rf s22e
