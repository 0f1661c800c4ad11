#!/usr/bin/env bash
# session 36 job 1 (LIMIT seconds in all, default 580), 2 GPUs: the LL kernels as of 722b6bf
# (dev_allreduce_ll pushing through pushWholeLL; the group kernels' LL form without spills).
# GPU tests at 2 GPUs of allreduces, megatron_row, decode_gemv (default and @ll) with their @ll,
# @big and @decode vector sets, then compute-sanitizer memcheck at 2 GPUs of the @ll builds (never
# run before); then Megatron at decode shapes T = 8, 32 (f16, H = 4096): eager, the default, the
# barrier one-shot and the LL form at every size; then the allreduce at 256 KiB .. 4 MiB: NCCL,
# the default, LL and the barrier one-shot. -> $OUT/s36a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-580}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s36a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 300 env GPU_TESTS_ONLY="allreduces allreduces@ll megatron_row megatron_row@ll decode_gemv decode_gemv@ll" \
  GPU_TESTS_SETS="allreduces@ll allreduces@big megatron_row@big megatron_row@decode decode_gemv@big" GPU_TESTS_RANKS="2" \
  SANITIZE=0 MEMCHECK_P2="allreduces@ll megatron_row@ll decode_gemv@ll" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 110 )); [ $s -gt 150 ] && s=150
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8,32 \
    BUILD_ARGS='--programs megatron_row,megatron_row_one_shot,megatron_row_ll' \
    BENCH_ARGS="--configs decode_T=8_H=4096_f16,decode_T=32_H=4096_f16 --rows eager,coconetc,coconetc_one_shot,coconetc_ll" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=256K,512K,1M,2M,4M \
    BUILD_ARGS='--programs allreduce,allreduce_ll,allreduce_one_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_ll,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for w in megatron allreduce; do grep -B2 -A12 "GPU time per step" $R/$w/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$w/results.md; done
cd $OUT && tar czf s36a.tgz s36a && rm -rf s36a
