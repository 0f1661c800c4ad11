#!/usr/bin/env bash
# session 36 job 3 (LIMIT seconds in all, default 560), 2 GPUs: the fused groups' one-shot kernels
# in LL128 form (template kProto: kProtoLL128 pushes 128-byte lines, the sums wait on each word's
# line flag), first run. GPU tests at 2 GPUs of megatron_row (default, @ll, @ll128) and
# decode_gemv@ll128 with @big and @decode, memcheck at 2 GPUs of megatron_row@ll128 and
# decode_gemv@ll128; then Megatron at decode shapes T = 8, 32, 64 (f16, H = 4096): eager, the
# default, the barrier one-shot, LL and LL128 at every size. -> $OUT/s36c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s36c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 280 env GPU_TESTS_ONLY="megatron_row megatron_row@ll megatron_row@ll128 decode_gemv@ll128" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@decode decode_gemv@big" GPU_TESTS_RANKS="2" \
  SANITIZE=0 MEMCHECK_P2="megatron_row@ll128 decode_gemv@ll128" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=8,32,64 \
    BUILD_ARGS='--programs megatron_row,megatron_row_one_shot,megatron_row_ll,megatron_row_ll128' \
    BENCH_ARGS="--configs decode_T=8_H=4096_f16,decode_T=32_H=4096_f16,decode_T=64_H=4096_f16 --rows eager,coconetc,coconetc_one_shot,coconetc_ll,coconetc_ll128" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A12 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s36c.tgz s36c && rm -rf s36c
