#!/usr/bin/env bash
# session 37 job 6 (LIMIT seconds in all, default 300), 2 GPUs: the groups' LL forms again after
# the one-chunk overlap's single GEMM (session 36 found them no faster than the barrier form from
# 256 KiB): Megatron (f16, H = 4096) at T = 8, 32, 64: eager, the sample (LL up to 64 KiB, then
# the barrier one-shot), tune(f, algorithm = one_shot | ll | ll128). -> $OUT/s37f
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-300}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37f; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
s=$(( $(left) - 15 ))
timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8,32,64 \
  BUILD_ARGS='--programs megatron_row,megatron_row_one_shot,megatron_row_ll,megatron_row_ll128' \
  BENCH_ARGS="--configs decode_T=8_H=4096_f16,decode_T=32_H=4096_f16,decode_T=64_H=4096_f16 --rows eager,coconetc,coconetc_one_shot,coconetc_ll,coconetc_ll128" \
  bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
step "bench megatron" $?
cat $R/header.txt; grep -B2 -A8 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s37f.tgz s37f && rm -rf s37f
