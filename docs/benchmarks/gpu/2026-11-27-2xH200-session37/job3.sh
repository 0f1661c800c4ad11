#!/usr/bin/env bash
# session 37 job 3 (LIMIT seconds in all, default 560), 2 GPUs: Megatron (f16, H = 4096) at T = 8192
# and 16384 tokens (64 and 128 MiB of partial sums): the fused group's two-shot kernel against the
# program unscheduled (its allreduce by copy engines from 64 MiB on 2 GPUs, then the epilogue's
# kernel), fuse(y, out) as committed (past kTwoShotMaxBytes the same) and the two-shot allreduce
# kernel followed by the epilogue's. -> $OUT/s37c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8192,16384 \
    BUILD_ARGS='--programs megatron_row_unscheduled,megatron_row_unscheduled_two_shot,megatron_row_fused,megatron_row_fused_two_shot' \
    BENCH_ARGS="--configs decode_T=8192_H=4096_f16,decode_T=16384_H=4096_f16 --rows eager,coconetc_unscheduled,coconetc_unscheduled_two_shot,coconetc_fused,coconetc_fused_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -B2 -A12 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s37c.tgz s37c && rm -rf s37c
