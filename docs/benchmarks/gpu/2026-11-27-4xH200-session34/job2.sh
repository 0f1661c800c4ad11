#!/usr/bin/env bash
# session 34 job 2 (LIMIT seconds in all, default 500): job 1 found the group's one-shot form
# faster than its two-shot form at 2 GPUs up to 8 MiB (T = 1024) and slower from 1 MiB at 4.
# Here, by GPU time: the allreduce alone (tools/bench/programs/allreduce.cnet, a fused [reduce_scatter,
# all_gather] pair: the device allreduce) at 256 KiB .. 16 MiB per rank on 4 and 2 H200 with the
# default rule, one_shot and two_shot at every size; and Megatron at 2 GPUs, T = 1024 and 2048
# (8 and 16 MiB of partial sums, one chunk). -> $OUT/s34b
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s34b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
SIZES="256K,512K,1M,2M,4M,8M,16M"
s=$(( $(left) - 150 )); [ $s -gt 300 ] && s=300
timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=$SIZES \
  BUILD_ARGS='--programs allreduce,allreduce_one_shot,allreduce_two_shot' \
  BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_one_shot,coconetc_two_shot" \
  bash tools/bench/gpu/run.sh --gpus 4,2 --workloads allreduce > $R/allreduce.log 2>&1
step "bench allreduce" $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=1024,2048 \
    BUILD_ARGS='--programs megatron_row,megatron_row_one_shot' \
    BENCH_ARGS="--configs decode_T=1024_H=4096_f16,decode_T=2048_H=4096_f16 --rows eager,coconetc,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt
for w in allreduce megatron; do grep -A14 "GPU time per step" $R/$w/results.md 2>/dev/null | grep "^|" ; grep -c "FAIL\|fail (" $R/$w/results.md; done
cd $OUT && tar czf s34b.tgz s34b && rm -rf s34b
