#!/usr/bin/env bash
# Session 48, call f4 (4 H200): LAMB's `apply` movers pulling by flags (each rank counts its
# computed chunks in every rank's flags; no barrier per round) rather than after a barrier per
# round. (1) GPU tests of LAMB's movers builds at 4 ranks with the lamb@many set and at 2 ranks;
# (2) the bench at 2^24 .. 2^28, rows taking turns, every row checked: coconetc (flags) against
# aa0233e's compiler (coconetc_base: barriers, the claimed pushes as now) and NCCL's all-reduce.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh (with the flags), then
# .gpu-bundle/ab/coconetc-aa = aa0233e's stripped coconetc.
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/job-f4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/f4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin f4 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 220 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-aa" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
