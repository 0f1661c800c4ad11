#!/usr/bin/env bash
# session 35 job 5 (LIMIT seconds in all, default 250): the fused groups' LL one-shot kernels on
# a line per thread (coconet_rt::llBlocks, twice job 4's blocks for f16). GPU tests at 2 and 4 GPUs
# of megatron_row@ll (@decode, @big); then Megatron at T = 8 and 32 (f16, H = 4096) on 4 and 2
# GPUs: the default (LL up to 256 KiB) and the barrier one-shot. -> $OUT/s35e
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-250}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s35e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 100 env GPU_TESTS_ONLY="megatron_row@ll" GPU_TESTS_SETS="megatron_row@big megatron_row@decode" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 10 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8,32 \
    BUILD_ARGS='--programs megatron_row,megatron_row_one_shot' \
    BENCH_ARGS="--configs decode_T=8_H=4096_f16,decode_T=32_H=4096_f16 --rows coconetc,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -8; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A6 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s35e.tgz s35e && rm -rf s35e
