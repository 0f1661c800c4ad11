#!/usr/bin/env bash
# Session 51, call v4 (4 H200): the first GPU run of main's flags-pulling tail as two
# instantiations (f707e6a, kTiles). (1) GPU tests of LAMB's movers builds and
# tests/gpu/programs/tail_fold at 4 ranks (lamb@many) and 2, as built; (2) the bench 2^24 .. 2^28,
# rows taking turns: coconetc (main), coconetc_c832 (832f65d's compiler: before the claimed pulls;
# at 2^26 / 2^28 the same kernels as main's fixed-parts instantiation), coconetc_push1
# (COCONET_CLAIMED_PUSH=1: `moments`' pushes in tiles of 1 unit), NCCL's all-reduce.
# Bundle: GPU_BUNDLE_ONLY="lamb tail_fold" bash tools/gpu-bundle.sh; mkdir .gpu-bundle/ab; a
# stripped coconetc built at 832f65d in .gpu-bundle/ab/coconetc-832f65d.
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-2xH200-session51/job-v4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/v4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin v4 "${LIMIT:-420}"
job_tests 200 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2 tail_fold"
job_bench lamb4 4 lamb $(( $(left) - 5 )) \
  BENCH_ENV_ROWS="push1=COCONET_CLAIMED_PUSH=1" \
  BENCH_COMPILER_ROWS="c832=.gpu-bundle/ab/coconetc-832f65d" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_c832,coconetc_push1,nccl_allreduce --interleave 10"
job_end
