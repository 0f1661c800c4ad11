#!/usr/bin/env bash
# Session 46, call b (GPUS=2 or 4): the landed candidate. Every pushing head leaves the own slice
# in its input; with roles split the movers then ask L2 for its part of each chunk
# (coconet_rt::pushSlicesPrefetchOwn). (1) GPU tests of the builds with movers (lamb@chunks8,
# @taper, @split16, @barriers8; adam@split5, @split16, @barriers16) and without (lamb, adam,
# allreduces, megatron_row), memcheck of lamb@chunks8 and adam@split5 at 2 ranks first; (2) the
# bench, rows taking turns, every row checked: coconetc (this compiler), coconetc_base (main's,
# 675079f), NCCL's all-reduce, LAMB at 2^24 .. 2^28.
# Before the call: GPU_BUNDLE_ONLY="lamb adam allreduces megatron_row" bash tools/gpu-bundle.sh,
# then main's stripped coconetc as .gpu-bundle/ab/coconetc-main.  -> $OUT/b
set -uo pipefail
source tools/bench/gpu/job.sh
GPUS=${GPUS:-4}
ranks="2"; [ "$GPUS" = 4 ] && ranks="2 4"
job_begin b "${LIMIT:-560}"
job_tests 260 GPU_TESTS_RANKS="$ranks" GPU_TESTS_MEMCHECK_FIRST=1 MEMCHECK_P2="lamb@chunks8 adam@split5" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@taper lamb@split16 lamb@barriers8 adam adam@split5 adam@split16 adam@barriers16 allreduces megatron_row"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb$GPUS "$GPUS" lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
