#!/usr/bin/env bash
# Prepared in session 40 for the next session with 4 GPUs (branch split-barriers; not yet run):
# the first GPU run of tune(G, barriers = split). GPU tests of its variants (adam@barriers5,
# @barriers16, lamb@barriers3, @barriers8) beside the defaults with the @big and @many sets at 2
# and 4 ranks and memcheck of lamb@barriers8 at 4; then Adam and LAMB at 2^20 .. 2^28 on 4 GPUs,
# rows coconetc (whole barriers), coconetc_barriers (LAMB: coconetc_barriers_tail too, `apply`
# alone) and the bare all-reduce, taking turns.
# Bundle first: GPU_BUNDLE_ONLY="adam lamb" bash tools/gpu-bundle.sh. -> $OUT/sb
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin sb "${LIMIT:-560}"
job_tests 240 GPU_TESTS_ONLY="adam adam@barriers5 adam@barriers16 lamb lamb@barriers3 lamb@barriers8" \
  GPU_TESTS_SETS="adam@big lamb@big adam@many lamb@many" GPU_TESTS_RANKS="2 4" MEMCHECK_P4="lamb@barriers8"
job_bench optim4 4 adam,lamb $(( $(left) - 10 )) \
  BUILD_ARGS="--programs adam,adam_barriers,lamb,lamb_barriers,lamb_barriers_tail" \
  BENCH_ARGS="--rows coconetc,coconetc_barriers,coconetc_barriers_tail,nccl_allreduce --interleave 10"
job_end
