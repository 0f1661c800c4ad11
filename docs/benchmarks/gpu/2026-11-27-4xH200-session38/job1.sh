#!/usr/bin/env bash
# session 38 job 1 (LIMIT seconds in all, default 570), 4 GPUs: session 37's 4-rank rules first
# tested and timed. GPU tests at 4 ranks of allreduces (the default build: LL to 32 KiB, LL128 to
# 512 KiB on 4 ranks), allreduces@ll128 (LL128 at every size), megatron_row@ar / @ar2 (a fused
# [allreduce, epilogue] group's two-shot kernel), matmul_allreduce@ar2 and decode_gemv@two, with
# allreduces' @big and @ll sets and megatron_row's @big and @decode; compute-sanitizer memcheck at 4
# ranks of allreduces@ll128 and megatron_row@ar2. Then the allreduce alone at 16 KiB .. 1 MiB per
# rank: NCCL, the default, LL and LL128 at every size, each row checked against NCCL's. -> $OUT/s38a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s38a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 320 env GPU_TESTS_ONLY="allreduces allreduces@ll128 megatron_row@ar megatron_row@ar2 matmul_allreduce@ar2 decode_gemv@two" \
  GPU_TESTS_SETS="allreduces@big allreduces@ll megatron_row@big megatron_row@decode" GPU_TESTS_RANKS="4" \
  SANITIZE=0 MEMCHECK_P4="allreduces@ll128 megatron_row@ar2" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 5 )) ALLREDUCE_SIZES=16K,32K,64K,128K,256K,512K,1M \
    BUILD_ARGS='--programs allreduce,allreduce_ll,allreduce_ll128' BENCH_ARGS='--rows nccl_allreduce,coconetc,coconetc_ll,coconetc_ll128' \
    bash tools/bench/gpu/run.sh --gpus 4 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A10 "GPU time" $R/allreduce/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/allreduce/results.md
cd $OUT && tar czf s38a.tgz s38a && rm -rf s38a
