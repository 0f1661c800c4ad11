#!/usr/bin/env bash
# Session 50, call p4 (4 H200): the committed rule (claimed pulls from 3 ranks in at most 4
# rounds, tiles of 1 unit). (1) GPU tests of LAMB's movers builds at 4 ranks with lamb@many and at
# 2 ranks, no knob set (the rule's choice); (2) the bench 2^24 .. 2^28 at 4 GPUs, rows taking
# turns: coconetc (the rule) against the same build in fixed parts (coconetc_fixed:
# COCONET_CLAIMED_PULL=0) and NCCL's all-reduce.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh.
# Run: LIMIT=330 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-p4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/p4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin p4 "${LIMIT:-330}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 170 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 10 )) \
  BENCH_ENV_ROWS="fixed=COCONET_CLAIMED_PULL=0" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_fixed,nccl_allreduce --interleave 10"
job_end
