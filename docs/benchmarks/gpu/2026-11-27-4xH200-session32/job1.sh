#!/usr/bin/env bash
# session 32 job 1 (LIMIT seconds in all, default 480): schedules' own size requirements run the
# program unscheduled (4d7d69e). GPU tests of the samples with such schedules (megatron_row,
# megatron_row@nccl, megatron_mlp, pipeline, dlrm_embedding; their @decode / @fallback vector
# sets run the fallback at 2 and 4 ranks; one C-interface handle runs the default sizes, the
# fallback's and the default again); then Megatron at decode shapes (T = 1, 8, 64; f16 and bf16)
# on 4 and 2 GPUs with the rows eager, coconetc (now running T = 1), coconetc_unscheduled,
# torch.compile and async_tp. -> $OUT/s32a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-480}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s32a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 200 env GPU_TESTS_ONLY="megatron_row megatron_row@nccl megatron_mlp pipeline dlrm_embedding" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
cfg=""
for d in f16 bf16; do for t in 1 8 64; do cfg+="${cfg:+,}decode_T=${t}_H=4096_$d"; done; done
s=$(( $(left) - 15 )); [ $s -gt 260 ] && s=260
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) \
    BUILD_ARGS='--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled' \
    BENCH_ARGS="--configs $cfg --rows eager,coconetc,coconetc_unscheduled,torch.compile,async_tp" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
  step "bench megatron decode" $?
fi
cat $R/header.txt; tail -40 $R/gpu-tests/gpu-results.txt
grep -B2 -A14 "Median time" $R/megatron/results.md 2>/dev/null | head -60
cd $OUT && tar czf s32a.tgz s32a && rm -rf s32a
