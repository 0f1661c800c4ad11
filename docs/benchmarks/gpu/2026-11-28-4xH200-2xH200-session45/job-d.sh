#!/usr/bin/env bash
# Session 45, call d (4 GPUs): (1) the landed own slice (main after dc77acd) at 4 ranks: LAMB's
# builds (roles split: the movers push the own slice as before) and Adam's split-role ones, which
# calls a and b ran in the form that skipped it everywhere; Megatron's row and the all-reduces;
# (2) session 44's proto_prefetch.py (LAMB's `apply` asks L2 for its first chunk's w and u at
# entry) as the bench's row `coconetc_pf` (BENCH_COMPILER_ROWS: cc-prefetch.sh), beside the
# default at 2^24 and 2^26, taking turns; every row checked against eager before it is timed.
# Before the call: GPU_BUNDLE_ONLY="adam lamb allreduces megatron_row" bash tools/gpu-bundle.sh.
# -> $OUT/d
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-380}"
job_tests 170 GPU_TESTS_RANKS="4" GPU_TESTS_SETS="none" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@taper adam adam@split16 adam@split5 megatron_row allreduces"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb $(( $(left) - 10 )) \
  BENCH_COMPILER_ROWS="pf=docs/benchmarks/gpu/2026-11-28-4xH200-2xH200-session45/cc-prefetch.sh" \
  BUILD_ARGS="--programs lamb,lamb_x_pf" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_pf,nccl_allreduce --interleave 10"
job_end
