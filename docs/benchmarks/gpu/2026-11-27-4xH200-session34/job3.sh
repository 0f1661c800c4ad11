#!/usr/bin/env bash
# session 34 job 3 (LIMIT seconds in all, default 560): after 14b45fb (one-shot up to 8 MiB on two
# ranks, coconet_rt::oneShotMaxBytes). GPU tests at 2 and 4 GPUs of the builds it changes
# (allreduces and its copy-engine builds with @big, now one-shot at 2 ranks, and @two, past 8 MiB;
# megatron_row and its variants with @big and @decode; decode_gemv and its variants with @big),
# memcheck at 2 GPUs of allreduces and megatron_row; then the default rows against the two-shot
# rows at 2 GPUs: the allreduce at 1-16 MiB, Megatron at T = 128 .. 1024 (GPU time). -> $OUT/s34c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s34c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 240 env GPU_TESTS_ONLY="allreduces allreduces@ce allreduces@ce_rounds megatron_row megatron_row@two megatron_row@one megatron_row@group decode_gemv decode_gemv@two" \
  GPU_TESTS_SETS="allreduces@big allreduces@two megatron_row@big megatron_row@decode decode_gemv@big" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="allreduces megatron_row" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 150 )); [ $s -gt 150 ] && s=150
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=1M,2M,4M,8M,16M \
    BUILD_ARGS='--programs allreduce,allreduce_two_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=128,256,512,1024 \
    BUILD_ARGS='--programs megatron_row,megatron_row_two_shot' \
    BENCH_ARGS="--configs decode_T=128_H=4096_f16,decode_T=256_H=4096_f16,decode_T=512_H=4096_f16,decode_T=1024_H=4096_f16 --rows eager,coconetc,coconetc_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for w in allreduce megatron; do grep -A9 "GPU time per step" $R/$w/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$w/results.md; done
cd $OUT && tar czf s34c.tgz s34c && rm -rf s34c
