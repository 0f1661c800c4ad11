#!/usr/bin/env bash
# session 32 job 4 (LIMIT seconds in all, default 300): MoE at a decode shape (X = 2, C = 16,
# H = 4096, F = 8192: 16 tokens per expert from each rank, the expert GEMMs bound by reading the
# weights) on 4 and 2 GPUs: unfused, the sample's all_to_all pipeline (coconetc), and the
# unscheduled builds (device all_to_all kernels; NCCL pairs). -> $OUT/s32d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-300}
R=$OUT/s32d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
s=$(( LIMIT - 15 ))
timeout $s env OUT=$R/moe WORK=/tmp/bw-moe BENCH_TIMEOUT=$(( s - 10 )) \
  BUILD_ARGS='--programs moe_gemm,moe_gemm_unscheduled,moe_gemm_unscheduled_nccl' \
  BENCH_ARGS="--configs X=2_C=16_H=4096_F=8192_f16 --rows unfused,coconetc,coconetc_unscheduled,coconetc_unscheduled_nccl" \
  bash tools/bench/gpu/run.sh --gpus 4,2 --workloads moe > $R/moe.log 2>&1
echo "bench moe decode rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt
awk '/^### /{print} /Median time per step|GPU time per step/{f=1} f&&/^\| X=/{print} /^Speed-up|^Checks/{f=0}' $R/moe/results.md
cd $OUT && tar czf s32d.tgz s32d && rm -rf s32d
