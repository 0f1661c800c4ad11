#!/usr/bin/env bash
# session 37 job 4 (LIMIT seconds in all, default 560), 2 GPUs: after the automatic per-chunk rule
# needs more than one chunk and the fused [allreduce, epilogue] group's two-shot kernel runs at every
# size on two ranks. GPU tests at 2 GPUs of megatron_row@ar with @big; then Megatron
# (f16, H = 4096) at T = 2048, 3072, 4096, 8192 tokens (16 .. 64 MiB of partial sums): eager, the
# sample (one chunk up to 32 MiB on 2 GPUs: now the GEMM, then the group's kernel), the sample with
# tune(f, gather = pipelined) (the per-chunk form, as the automatic rule took it at one chunk
# before), fuse(y, out) by size (now two-shot past 8 MiB) and fuse(y, out) two-shot. -> $OUT/s37d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 150 env GPU_TESTS_ONLY="megatron_row@ar" GPU_TESTS_SETS="megatron_row@big" GPU_TESTS_RANKS="2" \
  SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=2048,3072,4096,8192 \
    BUILD_ARGS='--programs megatron_row,megatron_row_pipelined,megatron_row_fused,megatron_row_fused_two_shot' \
    BENCH_ARGS="--configs decode_T=2048_H=4096_f16,decode_T=3072_H=4096_f16,decode_T=4096_H=4096_f16,decode_T=8192_H=4096_f16 --rows eager,coconetc,coconetc_gather_pipelined,coconetc_fused,coconetc_fused_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A12 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s37d.tgz s37d && rm -rf s37d
