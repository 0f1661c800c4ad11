#!/usr/bin/env bash
# session 32 job 6 (LIMIT seconds in all, default 330): all_to_all pipelines run the program
# unscheduled where their per-block GEMMs would be read-bound (7f9e07d). GPU tests of moe_gemm's
# builds at 2 and 4 GPUs (the @decode set now takes the fallback in the pipeline's builds); the
# MoE bench at the decode shape (C = 16) and at F = 8192, C = 1024 (the pipeline) on 4 and 2
# GPUs. -> $OUT/s32f
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-330}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s32f; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 130 env GPU_TESTS_ONLY="moe_gemm moe_gemm@nccl moe_gemm@none" GPU_TESTS_RANKS="2 4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
timeout $s env OUT=$R/moe WORK=/tmp/bw-moe BENCH_TIMEOUT=$(( s - 10 )) \
  BUILD_ARGS='--programs moe_gemm,moe_gemm_unscheduled' \
  BENCH_ARGS="--configs X=2_C=16_H=4096_F=8192_f16,X=2_C=1024_H=4096_F=8192_f16 --iters 50 --rows unfused,coconetc,coconetc_unscheduled" \
  bash tools/bench/gpu/run.sh --gpus 4,2 --workloads moe > $R/moe.log 2>&1
step "bench moe" $?
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -8; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
awk '/^### /{print} /Median time per step|GPU time per step/{f=1} f&&/^\| X=/{print} /^Speed-up|^Checks/{f=0}' $R/moe/results.md
cd $OUT && tar czf s32f.tgz s32f && rm -rf s32f
