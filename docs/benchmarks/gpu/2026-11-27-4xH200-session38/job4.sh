#!/usr/bin/env bash
# session 38 job 4 (LIMIT seconds in all, default 540), 4 GPUs: what job 3 left (its tests ran out
# of time): megatron_row@two (the overlap's one-chunk pushing kernel at every one-chunk size) with
# megatron_row@vec at 2 and 4 ranks, compute-sanitizer memcheck of it at 2 and 4 ranks. Then the
# fused [allreduce, epilogue] group's two-shot kernel in 1, 2 and 4 rounds against its rounds by
# size (devAutoRounds: 2 at 16 MiB, 4 at 32 and 64 MiB), Megatron f16 H = 4096 at T = 2048, 4096,
# 8192, on 4 GPUs and on 2, with the sample. -> $OUT/s38d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-540}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s38d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 200 env GPU_TESTS_ONLY="megatron_row@two" GPU_TESTS_SETS="megatron_row@vec" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="megatron_row@two" MEMCHECK_P4="megatron_row@two" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
ROWS=eager,coconetc,coconetc_fused_two_shot,coconetc_fused_two_shot_r1,coconetc_fused_two_shot_r2,coconetc_fused_two_shot_r4
PROGS=megatron_row,megatron_row_fused_two_shot,megatron_row_fused_two_shot_r1,megatron_row_fused_two_shot_r2,megatron_row_fused_two_shot_r4
CONF=decode_T=2048_H=4096_f16,decode_T=4096_H=4096_f16,decode_T=8192_H=4096_f16
for g in 4 2; do
  s=$(( $(left) - 10 )); [ $g = 4 ] && s=$(( s / 2 + 10 ))
  [ $s -gt 50 ] || continue
  timeout $s env OUT=$R/megatron$g WORK=/tmp/bw-meg$g BENCH_TIMEOUT=$(( s - 5 )) MEGATRON_DECODE_TOKENS=2048,4096,8192 \
    BUILD_ARGS="--programs $PROGS" BENCH_ARGS="--configs $CONF --rows $ROWS" \
    bash tools/bench/gpu/run.sh --gpus $g --workloads megatron > $R/megatron$g.log 2>&1
  step "bench megatron $g" $?
done
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for d in megatron4 megatron2; do grep -B2 -A10 "GPU time per step" $R/$d/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$d/results.md; done
cd $OUT && tar czf s38d.tgz s38d && rm -rf s38d
