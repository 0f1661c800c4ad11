#!/usr/bin/env bash
# session 37 job 1 (LIMIT seconds in all, default 560), 2 GPUs: a fused [allreduce, epilogue]
# group's two-shot kernel (Emitter::twoShotForm: the group as [reduce_scatter, epilogue,
# all_gather], the epilogue on each rank's slice), first run. GPU tests at 2 GPUs of
# megatron_row@ar / @ar2, matmul_allreduce@ar / @ar2, decode_gemv and decode_gemv@two with
# megatron_row's @big, @odd, @vec, @rows and @decode sets and decode_gemv@big; memcheck at 2 GPUs of
# megatron_row@ar2 and decode_gemv@two; then Megatron (f16, H = 4096) at T = 64, 256, 1024, 2048
# tokens (512 KiB .. 16 MiB of partial sums): eager, the unscheduled program (the allreduce kernel,
# then the epilogue's), fuse(y, out) by size (one-shot up to 8 MiB on 2 GPUs), fuse(y, out) two-shot
# at every size, and the sample's schedule. -> $OUT/s37a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s37a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 260 env GPU_TESTS_ONLY="megatron_row@ar megatron_row@ar2 matmul_allreduce@ar matmul_allreduce@ar2 decode_gemv decode_gemv@two" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@odd megatron_row@vec megatron_row@rows megatron_row@decode decode_gemv@big" GPU_TESTS_RANKS="2" \
  SANITIZE=0 MEMCHECK_P2="megatron_row@ar2 decode_gemv@two" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=64,256,1024,2048 \
    BUILD_ARGS='--programs megatron_row,megatron_row_unscheduled,megatron_row_fused,megatron_row_fused_two_shot' \
    BENCH_ARGS="--configs decode_T=64_H=4096_f16,decode_T=256_H=4096_f16,decode_T=1024_H=4096_f16,decode_T=2048_H=4096_f16 --rows eager,coconetc_unscheduled,coconetc_fused,coconetc_fused_two_shot,coconetc" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A12 "GPU time per step" $R/megatron/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/megatron/results.md
cd $OUT && tar czf s37a.tgz s37a && rm -rf s37a
