#!/usr/bin/env bash
# session 34 job 1 (LIMIT seconds in all, default 560): where a fused group's one-shot form stops
# paying. Megatron at decode shapes past the targets' (T = 64 .. 1024 tokens, H = 4096, f16: 512
# KiB .. 8 MiB of partial sums, one chunk at every one of them) on 4 and 2 H200: eager, coconetc
# (one-shot up to 512 KiB, two-shot past it), coconetc_one_shot (tune(f, algorithm = one_shot):
# one-shot at every size) and coconetc_unscheduled; judged by GPU time per step. -> $OUT/s34a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s34a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
TOKENS="64,128,256,512,1024"
cfg=""
for t in ${TOKENS//,/ }; do cfg+="${cfg:+,}decode_T=${t}_H=4096_f16"; done
s=$(( $(left) - 20 ))
timeout $s env OUT=$R/megatron WORK=/tmp/bw-meg BENCH_TIMEOUT=$(( s - 10 )) MEGATRON_DECODE_TOKENS=$TOKENS \
  BUILD_ARGS='--programs megatron_row,megatron_row_one_shot,megatron_row_unscheduled' \
  BENCH_ARGS="--configs $cfg --rows eager,coconetc,coconetc_one_shot,coconetc_unscheduled" \
  bash tools/bench/gpu/run.sh --gpus 4,2 --workloads megatron > $R/megatron.log 2>&1
step "bench megatron" $?
cat $R/header.txt
grep -B2 -A30 "GPU time per step" $R/megatron/results.md 2>/dev/null | head -80
cd $OUT && tar czf s34a.tgz s34a && rm -rf s34a
