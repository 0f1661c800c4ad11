#!/usr/bin/env bash
# session 33 job 3 (LIMIT seconds in all, default 540): a fused [allreduce, epilogue] group as one
# one-shot kernel (decode_gemv's schedule). GPU tests at 2 and 4 GPUs of decode_gemv, @two (the
# allreduce kernel, then the epilogue's), @overlap and @nccl with the @big and @oddk sets, memcheck
# of decode_gemv at 2 GPUs; then GEMV + all-reduce (H = 4096, 8192) on 4 and 2 GPUs, the rows
# taking turns in 10 rounds: unfused, coconetc, coconetc_unscheduled (the one-shot allreduce
# kernel, then the epilogue kernel: the form coconetc had before). -> $OUT/s33c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-540}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s33c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 230 env GPU_TESTS_ONLY="decode_gemv decode_gemv@two decode_gemv@overlap decode_gemv@nccl" \
  GPU_TESTS_SETS="decode_gemv@big decode_gemv@oddk" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="decode_gemv" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 )); [ $s -gt 280 ] && s=280
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/gemv WORK=/tmp/bw-gemv BENCH_TIMEOUT=$(( s - 10 )) \
    BUILD_ARGS='--programs decode_gemv,decode_gemv_unscheduled' \
    BENCH_ARGS="--rows unfused,coconetc,coconetc_unscheduled --interleave 10" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads gemv > $R/gemv.log 2>&1
  step "bench gemv" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A8 "GPU time per step" $R/gemv/results.md 2>/dev/null | head -40
cd $OUT && tar czf s33c.tgz s33c && rm -rf s33c
