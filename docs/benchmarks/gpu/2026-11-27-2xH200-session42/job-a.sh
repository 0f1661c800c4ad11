#!/usr/bin/env bash
# Session 42, call a (2 GPUs: nvidia-h200-x2 or nvidia-h100-x2). 1. The HBM read ceiling of one GPU
# (tools/bench/gpu/hbm-read-micro.cu) beside the runtime's and cuBLAS's GEMVs at decode_gemv's
# 2-GPU per-rank shapes (gemv-micro): the bound under the GEMV target's miss. 2. Session 41's
# job-next2.sh: Adam at 2 GPUs with rows coconetc (barriers = auto), coconetc_sync and the bare
# all-reduce; Megatron's fused two-shot kernel at T = 8192, H = 4096/8192/12288 f16, whole
# (auto: an epilogue's rounds stay whole) against split, rows taking turns.
# Bundle first: GPU_BUNDLE_ONLY="adam" bash tools/gpu-bundle.sh; git rev-parse --short HEAD >
# .gpu-bundle/commit.txt. -> $OUT/s42a
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s42a "${LIMIT:-560}"
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/hbm-read-micro.cu -o /tmp/hbm > "$R/micro-build.log" 2>&1 &&
  timeout 60 /tmp/hbm > "$R/hbm-read-micro.txt" 2>&1
step hbm-read-micro $?
nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime -I"$NC/include" tools/bench/gpu/gemv-micro.cu -lcublas -o /tmp/gemv >> "$R/micro-build.log" 2>&1 &&
  timeout 60 /tmp/gemv > "$R/gemv-micro.txt" 2>&1
step gemv-micro $?
job_bench adam2 2 adam 190 \
  BUILD_ARGS="--programs adam,adam_barriers_sync" \
  BENCH_ARGS="--rows coconetc,coconetc_sync,nccl_allreduce --interleave 10"
job_bench megatron2 2 megatron $(( $(left) - 10 )) \
  BUILD_ARGS="--programs megatron_row_fused_two_shot,megatron_row_fused_two_shot_barriers" \
  BENCH_ARGS="--configs train_T=8192_H=4096_f16,train_T=8192_H=8192_f16,train_T=8192_H=12288_f16 --rows eager,coconetc_fused_two_shot,coconetc_fused_two_shot_barriers --interleave 10"
tail -n 4 "$R/hbm-read-micro.txt"; grep -E "^(#|16384|8192 +16384)" "$R/gemv-micro.txt" | head -20
job_end
