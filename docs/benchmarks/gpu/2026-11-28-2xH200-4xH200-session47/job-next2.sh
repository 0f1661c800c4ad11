#!/usr/bin/env bash
# Prepared in session 47 for the next (not yet run): the claimed pushes (c3ebc4d) on 2 H200: the
# LAMB bench at 2^24, 2^26, 2^28 against 50eb01d's compiler, rows taking turns, every row checked,
# and the GPU tests of LAMB's movers builds at 2 ranks. Bundle as job-next4.sh says.
# Run: LIMIT=400 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session47/job-next2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/next2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin next2 "${LIMIT:-400}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb2 2 lamb 230 BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_tests $(( $(left) - 8 )) GPU_TESTS_RANKS="2" GPU_TESTS_SETS="none" \
  GPU_TESTS_ONLY="lamb lamb@chunks4 lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@occ2"
job_end
