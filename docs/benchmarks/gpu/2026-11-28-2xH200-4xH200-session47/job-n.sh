#!/usr/bin/env bash
# Session 47, call n (4 GPUs): the claimed pushes as compiled (c3ebc4d). (1) GPU tests at 4 ranks
# (and 2 where time allows) of LAMB's builds (the movers' forms: lamb, @chunks4, @chunks8, @split3,
# @split16, @taper, @taperends, @occ2; @barriers8 keeps fixed parts) with the lamb@many set;
# (2) the bench, rows taking turns, every row checked: coconetc (c3ebc4d) against coconetc_base
# (main before it, 50eb01d: .gpu-bundle/ab/coconetc-main) and NCCL's all-reduce, LAMB at 2^24
# and 2^26. Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh at c3ebc4d.  -> $OUT/n
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n "${LIMIT:-230}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb 110 BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_tests $(( $(left) - 8 )) GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks4 lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2 lamb@barriers8"
job_end
