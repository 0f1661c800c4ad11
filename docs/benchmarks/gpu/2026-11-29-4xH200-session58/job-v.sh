#!/usr/bin/env bash
# Session 58, call v (after the row split became the default and the longer-row kernels read packs):
# the row programs' long-row sets at one rank under memcheck and racecheck (the sets themselves:
# GPU_TESTS_SANITIZE_SETS) with the default (rows split over blocks where few) and again with
# COCONET_ROWWISE=long (one block a row), then workload norms' vocabulary configs (softmax over
# 131072 at T = 1, 8, 64 and 1024) with rows coconetc, coconetc_long, coconetc_split4 / 8.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=380 bash docs/benchmarks/gpu/2026-11-29-4xH200-session58/job-v.sh (carry .gpu-bundle) -> $OUT/v.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin v "${LIMIT:-380}"
only="ops_mix ops_mix@nccl rowwise_types"
sets="ops_mix@long ops_mix@vocab rowwise_types@long rowwise_types@wide rowwise_types@odd"
job_tests --as packs 130 GPU_TESTS_RANKS="1" SANITIZE=1 GPU_TESTS_ONLY="$only" GPU_TESTS_SETS="$sets" \
  GPU_TESTS_SANITIZE_SETS="ops_mix@long ops_mix@vocab rowwise_types@long"
job_tests --as long 60 COCONET_ROWWISE=long GPU_TESTS_RANKS="1" SANITIZE=1 SANITIZE_TOOLS=memcheck GPU_TESTS_ONLY="$only" \
  GPU_TESTS_SETS="$sets" GPU_TESTS_SANITIZE_SETS="ops_mix@vocab rowwise_types@long"
job_bench norms 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs softmax_f16" \
  BENCH_ARGS="--configs softmax_T=1_H=131072_f16,softmax_T=8_H=131072_f16,softmax_T=64_H=131072_f16,softmax_T=1024_H=131072_f16"
job_end
