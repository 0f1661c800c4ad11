#!/usr/bin/env bash
# Session 45, call b (4 GPUs): branch own-slice (a reduce-scatter's push leaves this rank's own
# slice in its input; the sums read it there). Call a (job-next-own.sh of session 44) passed its
# 118 checks but stopped before memcheck and the 4-rank shapes. Here: (1) memcheck at 2 ranks of
# the defaults first, then the 4-rank checks of the defaults with every shape set; (2) LAMB and
# Adam benched with the branch's rows beside main's (BENCH_COMPILER_ROWS: base = main's
# coconetc, .gpu-bundle/ab/coconetc-main, built from 8c1180f) at 2^24 and 2^26, taking turns.
# Before the call: the bundle on the branch (tools/gpu-bundle.sh), main's stripped coconetc in
# .gpu-bundle/ab/. -> $OUT/b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin b "${LIMIT:-560}"
job_tests 250 GPU_TESTS_RANKS="4" GPU_TESTS_MEMCHECK_FIRST=1 MEMCHECK_P2="adam lamb allreduces megatron_row" \
  GPU_TESTS_ONLY="adam lamb lamb@chunks8 megatron_row megatron_row@two sgd pipeline norm_clip allreduces"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench optim4 4 lamb,adam $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base,adam,adam_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
