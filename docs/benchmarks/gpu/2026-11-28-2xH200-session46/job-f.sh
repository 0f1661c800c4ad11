#!/usr/bin/env bash
# Session 46, call f (2 GPUs): the default builds of the other programs whose kernels push a
# reduce-scatter (`pushSlices` lost its skip argument: every head skips the own slice), at 2 ranks
# with their default vectors: decode_gemv, fold_local, megatron_mlp, norm_clip, overlap_cast,
# scalar_chain, sgd (adam, lamb, megatron_row, allreduces ran in calls b and d).
# Before the call: GPU_BUNDLE_ONLY="decode_gemv fold_local megatron_mlp norm_clip overlap_cast
# scalar_chain sgd" bash tools/gpu-bundle.sh.  -> $OUT/f
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin f "${LIMIT:-200}"
job_tests $(( $(left) - 5 )) GPU_TESTS_RANKS="2" GPU_TESTS_SETS="none" \
  GPU_TESTS_ONLY="decode_gemv fold_local megatron_mlp norm_clip overlap_cast scalar_chain sgd"
job_end
