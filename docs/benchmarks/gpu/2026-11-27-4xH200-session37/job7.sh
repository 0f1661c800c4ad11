#!/usr/bin/env bash
# session 37 job 7 (LIMIT seconds in all, default 200), 4 GPUs (lent at the end of the session,
# with 268 s of device time left): the allreduce's LL128 form first timed at 4 ranks, against
# NCCL and the default (LL up to 256 KiB, then the barrier one-shot to 512 KiB and two-shot) at
# 256 KiB .. 2 MiB. No GPU test of LL128 at 4 ranks fitted: its default stays 2 ranks only.
# -> $OUT/s37g
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-200}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37g; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
s=$(( $(left) - 10 ))
timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 5 )) ALLREDUCE_SIZES=256K,512K,1M,2M \
  BUILD_ARGS='--programs allreduce,allreduce_ll128' BENCH_ARGS='--rows nccl_allreduce,coconetc,coconetc_ll128' \
  bash tools/bench/gpu/run.sh --gpus 4 --workloads allreduce > $R/allreduce.log 2>&1
step "bench allreduce" $?
cat $R/header.txt; grep -B2 -A8 "GPU time" $R/allreduce/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/allreduce/results.md
cd $OUT && tar czf s37g.tgz s37g && rm -rf s37g
