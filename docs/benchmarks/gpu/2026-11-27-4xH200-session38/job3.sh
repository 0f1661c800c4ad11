#!/usr/bin/env bash
# session 38 job 3 (LIMIT seconds in all, default 575), 4 GPUs: the overlap's one-chunk form now
# runs the group's pushing kernel (Emitter::onePassForm: rounds and blocks by size) after the one
# GEMM. GPU tests at 2 and 4 ranks of the overlapped programs (megatron_row, megatron_mlp,
# overlap_cast, with tune(f, algorithm = two_shot): the pushing kernel at every one-chunk size;
# megatron_row@pipe / @tail: other overlap forms) with megatron_row's @big (one chunk past the
# one-shot limit at 4 ranks), @odd, @vec, @rows and @decode sets and megatron_mlp@decode;
# compute-sanitizer memcheck of megatron_row@two at 2 and 4 ranks. Then Megatron (f16, H = 4096)
# on 2 GPUs at T = 1024, 2048, 3072 (8 .. 24 MiB: one chunk there) and on 4 at T = 2048, 4096:
# eager, the sample, fuse(y, out) by size and two-shot. -> $OUT/s38c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-575}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s38c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 290 env GPU_TESTS_ONLY="megatron_row megatron_row@two megatron_mlp megatron_mlp@two overlap_cast megatron_row@pipe megatron_row@tail" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@odd megatron_row@vec megatron_row@rows megatron_row@decode megatron_mlp@decode" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="megatron_row@two" MEMCHECK_P4="megatron_row@two" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 110 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/megatron2 WORK=/tmp/bw-meg2 BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=1024,2048,3072 \
    BUILD_ARGS='--programs megatron_row,megatron_row_fused,megatron_row_fused_two_shot' \
    BENCH_ARGS="--configs decode_T=1024_H=4096_f16,decode_T=2048_H=4096_f16,decode_T=3072_H=4096_f16 --rows eager,coconetc,coconetc_fused,coconetc_fused_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads megatron > $R/megatron2.log 2>&1
  step "bench megatron 2" $?
fi
s=$(( $(left) - 10 ))
if [ $s -gt 50 ]; then
  timeout $s env OUT=$R/megatron4 WORK=/tmp/bw-meg4 BENCH_TIMEOUT=$(( s - 5 )) MEGATRON_DECODE_TOKENS=2048,4096 \
    BUILD_ARGS='--programs megatron_row,megatron_row_fused_two_shot' \
    BENCH_ARGS="--configs decode_T=2048_H=4096_f16,decode_T=4096_H=4096_f16 --rows eager,coconetc,coconetc_fused_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 4 --workloads megatron > $R/megatron4.log 2>&1
  step "bench megatron 4" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
for d in megatron2 megatron4; do grep -B2 -A10 "GPU time per step" $R/$d/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/$d/results.md; done
cd $OUT && tar czf s38c.tgz s38c && rm -rf s38c
