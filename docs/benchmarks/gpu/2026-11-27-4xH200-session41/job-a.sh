#!/usr/bin/env bash
# Session 41, call a (4x H200): barriers = auto (the default now: split in the shared full form
# while a round's chunk is under 16 MiB) against forced split and forced sync. GPU tests of Adam
# (default, @chunks5: auto splits; @barriers5: forced split), SGD and LAMB@barriers8 at 2 and 4
# ranks, memcheck at 4; then Adam at 2^20 .. 2^28 on 4 GPUs, rows coconetc (auto),
# coconetc_sync, coconetc_barriers (split) and the bare all-reduce, taking turns.
# Bundle first: GPU_BUNDLE_ONLY="adam lamb sgd" bash tools/gpu-bundle.sh. -> $OUT/s41a
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s41a "${LIMIT:-560}"
job_tests 170 GPU_TESTS_ONLY="adam adam@chunks5 adam@barriers5 sgd lamb@barriers8" \
  GPU_TESTS_RANKS="2 4" MEMCHECK_P4="adam@chunks5 lamb@barriers8"
job_bench adam4 4 adam $(( $(left) - 10 )) \
  BUILD_ARGS="--programs adam,adam_barriers,adam_barriers_sync" \
  BENCH_ARGS="--rows coconetc,coconetc_sync,coconetc_barriers,nccl_allreduce --interleave 10"
job_end
