#!/usr/bin/env bash
# Session 51, call v2 (2 H200, where 4 are not lent): the first GPU run of main's flags-pulling tail as two
# instantiations (f707e6a, kTiles). (1) GPU tests of LAMB's movers builds and
# tests/gpu/programs/tail_fold at 2 ranks, as built (fixed parts: the kTiles = false
# instantiation) and with COCONET_CLAIMED_PULL=1 (tiles forced: kTiles = true); (2) the bench 2^24 .. 2^28,
# rows taking turns: coconetc (main), coconetc_c832 (832f65d's compiler: before the claimed pulls;
# on 2 ranks the same kernels as main's fixed-parts instantiation, which 2 ranks run), NCCL's
# all-reduce.
# Bundle: GPU_BUNDLE_ONLY="lamb tail_fold" bash tools/gpu-bundle.sh; mkdir .gpu-bundle/ab; a
# stripped coconetc built at 832f65d in .gpu-bundle/ab/coconetc-832f65d.
# Run: LIMIT=540 bash docs/benchmarks/gpu/2026-11-28-2xH200-session51/job-v2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/v2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin v2 "${LIMIT:-540}"
only="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2 tail_fold"
job_tests 170 GPU_TESTS_RANKS="2" GPU_TESTS_ONLY="$only"
job_tests --as tiles 170 COCONET_CLAIMED_PULL=1 GPU_TESTS_RANKS="2" GPU_TESTS_ONLY="$only"
job_bench lamb2 2 lamb $(( $(left) - 5 )) \
  BENCH_COMPILER_ROWS="c832=.gpu-bundle/ab/coconetc-832f65d" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_c832,nccl_allreduce --interleave 10"
job_end
