#!/usr/bin/env bash
# session 32 job 3 (LIMIT seconds in all, default 480): an overlap merged to one chunk (decode
# sizes) runs the GEMM and the group's kernel on one stream, the kernel pushing the partial sums
# itself (11a2647). GPU tests at 2 and 4 GPUs of the builds whose kernels changed (megatron_row
# and its @pipe / @ceg forms, megatron_mlp, adam@ce and lamb@ce, whose per-round kernels now take
# a null push source); then Megatron at decode shapes and one training shape (T = 8192, H =
# 4096, f16) on 4 and 2 GPUs: eager, coconetc, coconetc_unscheduled. -> $OUT/s32c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-480}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s32c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 270 env GPU_TESTS_ONLY="megatron_row megatron_row@pipe megatron_row@ceg megatron_mlp adam@ce lamb@ce" GPU_TESTS_RANKS="2 4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
cfg="train_T=8192_H=4096_f16"
for d in f16 bf16; do for t in 1 8 64; do cfg+=",decode_T=${t}_H=4096_$d"; done; done
s=$(( $(left) - 15 )); [ $s -gt 220 ] && s=220
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) \
    BUILD_ARGS='--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled' \
    BENCH_ARGS="--configs $cfg --rows eager,coconetc,coconetc_unscheduled" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -A12 "GPU time per step" $R/megatron/results.md 2>/dev/null | head -30
cd $OUT && tar czf s32c.tgz s32c && rm -rf s32c
