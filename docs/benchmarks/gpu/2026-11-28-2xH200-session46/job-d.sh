#!/usr/bin/env bash
# Session 46, call d (2 GPUs): the vector sets call b's tests did not reach (its 260-s limit), on
# the builds whose kernels run with movers, now prefetching the own slice (7503240): odd sizes
# (no whole vector units, unaligned chunk edges) and big ones, at 2 ranks.
# Before the call: GPU_BUNDLE_ONLY="lamb adam allreduces megatron_row" bash tools/gpu-bundle.sh.  -> $OUT/d
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-240}"
job_tests $(( $(left) - 5 )) GPU_TESTS_RANKS="2" GPU_TESTS_SETS="lamb@odd lamb@big adam@odd adam@big" \
  GPU_TESTS_ONLY="lamb@chunks8 lamb@taper lamb@split16 lamb@barriers8 adam@split5 adam@split16"
job_end
