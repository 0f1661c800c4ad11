#!/usr/bin/env bash
# Prepared in session 41 for the next session (not yet run), on 2 GPUs (nvidia-h200-x2 or
# nvidia-h100-x2): does `barriers = auto`'s rule hold at 2 GPUs, and would split barriers pay in a
# light epilogue's rounds (where auto keeps them whole)? Adam at 2^20 .. 2^28 with rows coconetc
# (auto), coconetc_sync and the bare all-reduce; the Megatron layer's fused [allreduce, epilogue]
# group in its two-shot kernel at the training shapes (f16; 4 rounds of 16 MiB at H = 4096, 8 of
# 16 MiB at 8192, 8 of 24 MiB at 12288 on 2 GPUs), whole against split, rows taking turns.
# Bundle first: GPU_BUNDLE_ONLY="adam" bash tools/gpu-bundle.sh (only for commit.txt). -> $OUT/n2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n2 "${LIMIT:-560}"
job_bench adam2 2 adam 200 \
  BUILD_ARGS="--programs adam,adam_barriers_sync" \
  BENCH_ARGS="--rows coconetc,coconetc_sync,nccl_allreduce --interleave 10"
job_bench megatron2 2 megatron $(( $(left) - 10 )) \
  BUILD_ARGS="--programs megatron_row_fused_two_shot,megatron_row_fused_two_shot_barriers" \
  BENCH_ARGS="--configs train_T=8192_H=4096_f16,train_T=8192_H=8192_f16,train_T=8192_H=12288_f16 --rows eager,coconetc_fused_two_shot,coconetc_fused_two_shot_barriers --interleave 10"
job_end
