#!/usr/bin/env bash
# session 35 job 4 (LIMIT seconds in all, default 540): after the LL sums load kPeersInFlight
# ranks' lines at once before checking their flags (coconet_rt::llSumLines; job 3 waited for each
# line in turn). GPU tests at 2 and 4 GPUs of megatron_row (default, @ll), decode_gemv@ll and
# allreduces@ll with the @big, @decode and @ll sets; then Megatron at decode shapes T = 1, 8, 32,
# 64 (f16, H = 4096) and the allreduce at 16 KiB .. 1 MiB, both on 4 and 2 GPUs. -> $OUT/s35d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-540}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s35d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 200 env GPU_TESTS_ONLY="megatron_row megatron_row@ll decode_gemv@ll allreduces@ll" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@decode decode_gemv@big allreduces@ll allreduces@big" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 130 )); [ $s -gt 170 ] && s=170
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=1,8,32,64 \
    BUILD_ARGS='--programs megatron_row,megatron_row_one_shot' \
    BENCH_ARGS="--configs decode_T=1_H=4096_f16,decode_T=8_H=4096_f16,decode_T=32_H=4096_f16,decode_T=64_H=4096_f16 --rows eager,coconetc,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=16K,64K,256K,1M \
    BUILD_ARGS='--programs allreduce,allreduce_one_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for w in megatron allreduce; do grep -B2 -A9 "GPU time per step" $R/$w/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$w/results.md; done
cd $OUT && tar czf s35d.tgz s35d && rm -rf s35d
