#!/usr/bin/env bash
# Session 41, call b (4x H200): after call a, barriers = auto splits while a round's chunk is under
# 32 MiB (was 16). compute-sanitizer memcheck at 4 ranks of split barriers in three forms
# (adam@chunks5: auto, shared full; adam@barriers16: roles full; lamb@barriers8: roles head and
# tail) after their plain checks at 4; then Adam 2^24 and 2^26 (auto now splits both) on 4 GPUs,
# rows coconetc (auto), coconetc_sync and the bare all-reduce, taking turns.
# Bundle first: GPU_BUNDLE_ONLY="adam lamb sgd" bash tools/gpu-bundle.sh. -> $OUT/s41b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s41b "${LIMIT:-470}"
job_tests 260 GPU_TESTS_ONLY="adam@chunks5 adam@barriers16 lamb@barriers8" GPU_TESTS_SETS="none@none" \
  GPU_TESTS_RANKS="4" MEMCHECK_P4="adam@chunks5 adam@barriers16 lamb@barriers8"
job_bench adam4 4 adam $(( $(left) - 10 )) \
  BUILD_ARGS="--programs adam,adam_barriers_sync" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_sync,nccl_allreduce --interleave 10"
job_end
