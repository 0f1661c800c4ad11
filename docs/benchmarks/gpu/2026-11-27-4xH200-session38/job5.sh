#!/usr/bin/env bash
# session 38 job 5 (LIMIT seconds in all, default 270), 4 GPUs: the default build after
# epilogueAutoRounds (at most 2 rounds past two ranks for the group's two-shot kernel and the
# overlap's one-chunk kernel) and twoShotGroupMaxBytes(4) at every size: Megatron f16 H = 4096 at
# T = 2048, 4096, 8192 on 4 GPUs (eager, the sample, fuse(y, out) by size, fuse(y, out) two-shot in
# 2 rounds) and at T = 2048, 4096 on 2 (eager, the sample, fuse(y, out)). -> $OUT/s38e
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-270}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s38e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
s=$(( $(left) * 6 / 10 ))
timeout $s env OUT=$R/megatron4 WORK=/tmp/bw-meg4 BENCH_TIMEOUT=$(( s - 5 )) MEGATRON_DECODE_TOKENS=2048,4096,8192 \
  BUILD_ARGS="--programs megatron_row,megatron_row_fused,megatron_row_fused_two_shot_r2" \
  BENCH_ARGS="--configs decode_T=2048_H=4096_f16,decode_T=4096_H=4096_f16,decode_T=8192_H=4096_f16 --rows eager,coconetc,coconetc_fused,coconetc_fused_two_shot_r2" \
  bash tools/bench/gpu/run.sh --gpus 4 --workloads megatron > $R/megatron4.log 2>&1
step "bench megatron 4" $?
s=$(( $(left) - 8 ))
if [ $s -gt 40 ]; then
  timeout $s env OUT=$R/megatron2 WORK=/tmp/bw-meg2 BENCH_TIMEOUT=$(( s - 5 )) MEGATRON_DECODE_TOKENS=2048,4096 \
    BUILD_ARGS="--programs megatron_row,megatron_row_fused" \
    BENCH_ARGS="--configs decode_T=2048_H=4096_f16,decode_T=4096_H=4096_f16 --rows eager,coconetc,coconetc_fused" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron2.log 2>&1
  step "bench megatron 2" $?
fi
cat $R/header.txt
for d in megatron4 megatron2; do grep -B2 -A10 "GPU time per step" $R/$d/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$d/results.md; done
cd $OUT && tar czf s38e.tgz s38e && rm -rf s38e
