#!/usr/bin/env bash
# session 38 job 2 (LIMIT seconds in all, default 570), 4 GPUs: the Megatron row-parallel layer
# (f16, H = 4096) on four ranks, to set twoShotGroupMaxBytes(4) (16 MiB, unmeasured, since session
# 37) and check the single-GEMM decode path there. T = 64, 256, 1024, 2048, 4096, 8192 tokens
# (512 KiB .. 64 MiB of partial sums): eager, the unscheduled program (the allreduce kernel, then the
# epilogue's), fuse(y, out) by size, fuse(y, out) two-shot at every size, and the sample's schedule;
# then decode T = 1, 8, 64: eager and the sample. -> $OUT/s38b
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s38b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
s=$(( $(left) - 130 ))
timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=64,256,1024,2048,4096,8192 \
  BUILD_ARGS='--programs megatron_row,megatron_row_unscheduled,megatron_row_fused,megatron_row_fused_two_shot' \
  BENCH_ARGS="--configs decode_T=64_H=4096_f16,decode_T=256_H=4096_f16,decode_T=1024_H=4096_f16,decode_T=2048_H=4096_f16,decode_T=4096_H=4096_f16,decode_T=8192_H=4096_f16 --rows eager,coconetc_unscheduled,coconetc_fused,coconetc_fused_two_shot,coconetc" \
  bash tools/bench/gpu/run.sh --gpus 4 --workloads megatron > $R/megatron.log 2>&1
step "bench megatron" $?
s=$(( $(left) - 10 ))
if [ $s -gt 40 ]; then
  timeout $s env OUT=$R/decode WORK=/tmp/bw-dec BENCH_TIMEOUT=$(( s - 5 )) MEGATRON_DECODE_TOKENS=1,8,64 \
    BUILD_ARGS='--programs megatron_row' \
    BENCH_ARGS="--configs decode_T=1_H=4096_f16,decode_T=8_H=4096_f16,decode_T=64_H=4096_f16 --rows eager,coconetc" \
    bash tools/bench/gpu/run.sh --gpus 4 --workloads megatron > $R/decode.log 2>&1
  step "bench decode" $?
fi
cat $R/header.txt
for d in megatron decode; do grep -B2 -A12 "GPU time per step" $R/$d/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$d/results.md; done
cd $OUT && tar czf s38b.tgz s38b && rm -rf s38b
