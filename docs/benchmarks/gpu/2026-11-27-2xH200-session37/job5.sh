#!/usr/bin/env bash
# session 37 job 5 (LIMIT seconds in all, default 560), 2 GPUs: an overlap merged to one chunk
# computes its product with one GEMM of M rows instead of P batched GEMMs of M / P rows. GPU tests
# at 1 and 2 GPUs of megatron_row, megatron_mlp and overlap_cast (default builds) with megatron_row's
# @big, @decode, @vec, @odd, @rows sets; then Megatron (f16, H = 4096) at T = 8, 64, 2048 (one chunk
# each) twice on the same machine: the sample compiled by the previous commit's coconetc
# (.gpu-bundle/old/bin/coconetc, built from e898fea: P GEMMs) and by this one's (one GEMM).
# -> $OUT/s37e
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 200 env GPU_TESTS_ONLY="megatron_row megatron_mlp overlap_cast" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@decode megatron_row@vec megatron_row@odd megatron_row@rows" GPU_TESTS_RANKS="1 2" \
  SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
bench() {  # bench NAME [COCONETC]
  local s=$(( ($(left) - 15) / ${3:-1} ))
  [ $s -gt 60 ] || return 0
  timeout $s env ${2:+COCONETC=$2} LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib OUT=$R/$1 WORK=/tmp/bw-$1 BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8,64,2048 \
    BUILD_ARGS='--programs megatron_row' \
    BENCH_ARGS="--configs decode_T=8_H=4096_f16,decode_T=64_H=4096_f16,decode_T=2048_H=4096_f16 --rows eager,coconetc" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/$1.log 2>&1
  step "bench $1" $?
}
bench before-batched "$PWD/.gpu-bundle/old/bin/coconetc" 2
bench after-one-gemm
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for b in before-batched after-one-gemm; do echo "== $b"; grep -B2 -A8 "GPU time per step" $R/$b/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$b/results.md; done
cd $OUT && tar czf s37e.tgz s37e && rm -rf s37e
