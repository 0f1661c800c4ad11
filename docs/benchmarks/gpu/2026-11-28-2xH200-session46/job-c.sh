#!/usr/bin/env bash
# Session 46, call c (4 GPUs): the landed form (main with pushSlicesPrefetchOwn) at 4 ranks.
# (1) GPU tests of the builds with movers (lamb@chunks8, @taper, @split16; adam@split5, @split16)
# and without (lamb, adam, allreduces, megatron_row), with the @many vectors (192 workers: many
# movers' parts per chunk) on the split builds; (2) the bench, rows taking turns, every row
# checked: coconetc (this compiler), coconetc_base (main before it, 675079f), NCCL's all-reduce,
# LAMB at 2^24 .. 2^28: the target configuration.
# Before the call: GPU_BUNDLE_ONLY="lamb adam allreduces megatron_row" bash tools/gpu-bundle.sh,
# then 675079f's stripped coconetc as .gpu-bundle/ab/coconetc-main.  -> $OUT/c
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c "${LIMIT:-400}"
job_tests 150 GPU_TESTS_RANKS="4" GPU_TESTS_SETS="lamb@many adam@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@taper lamb@split16 adam adam@split5 adam@split16 allreduces megatron_row"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
