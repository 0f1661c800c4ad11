#!/usr/bin/env bash
# session 33 job 1 (LIMIT seconds in all, default 540): a full fused group's one-shot form
# (every rank computes every slice), taken by the Megatron sample's one-chunk overlap up to 512
# KiB of partial sums. GPU tests at 2 and 4 GPUs of the builds it changes (megatron_row and
# megatron_mlp, their @two builds without the one-shot form, megatron_row@group: the fused
# group without the overlap) with the @big (past the limit), @decode and @vec sets, memcheck of
# megatron_row at 2 GPUs; then Megatron at decode shapes on 4 and 2 GPUs: eager, coconetc,
# coconetc_two_shot (session 32's form), coconetc_unscheduled. -> $OUT/s33a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-540}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s33a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 250 env GPU_TESTS_ONLY="megatron_row megatron_row@two megatron_row@group megatron_mlp megatron_mlp@two" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@decode megatron_row@vec megatron_mlp@decode" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="megatron_row" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
cfg=""
for d in f16 bf16; do for t in 1 8 64; do cfg+="${cfg:+,}decode_T=${t}_H=4096_$d"; done; done
s=$(( $(left) - 15 )); [ $s -gt 260 ] && s=260
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) \
    BUILD_ARGS='--programs megatron_row,megatron_row_two_shot,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_two_shot,megatron_row_bf16_unscheduled' \
    BENCH_ARGS="--configs $cfg --rows eager,coconetc,coconetc_two_shot,coconetc_unscheduled" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -A16 "GPU time per step" $R/megatron/results.md 2>/dev/null | head -40
cd $OUT && tar czf s33a.tgz s33a && rm -rf s33a
