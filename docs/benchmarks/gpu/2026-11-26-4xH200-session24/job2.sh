#!/usr/bin/env bash
# session 24 job 2: A/B of programmatic dependent launch by the bench's queued GPU time (steps
# queued behind a sleeping kernel, host ahead): LAMB and Adam, coconetc and the bare all-reduce,
# 2^20, 2^22, 2^24, on every GPU the machine has; COCONET_PDL=1, 0, 1 in turn.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24b; mkdir -p $R
G=$(nvidia-smi -L | wc -l)
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; } > $R/header.txt
i=0
for pdl in 1 0 1; do
  i=$((i+1))
  left=$(( ${LIM:-570} - ($(date +%s) - T0) ))
  [ $left -gt 60 ] || break
  timeout $((left - 10)) env COCONET_PDL=$pdl OUT=$R/bench-pdl$pdl-$i WORK=/tmp/bw BENCH_TIMEOUT=$((left - 20)) BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24 --rows coconetc,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus $G --workloads lamb,adam > $R/bench-$i.log 2>&1
  echo "bench PDL=$pdl rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
  grep -h "coconetc:\|nccl_allreduce:\|^== \|config" $R/bench-pdl$pdl-$i/logs/bench-p*.log 2>/dev/null | grep -v "^$" >> $R/summary.txt
done
cat $R/summary.txt
cd $OUT && tar czf s24b.tgz s24b && rm -rf s24b
