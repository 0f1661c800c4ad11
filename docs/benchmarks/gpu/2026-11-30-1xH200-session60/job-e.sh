#!/usr/bin/env bash
# Session 60 call e (1x H200), after a646257 (row kernels in registers stream where x and y pass
# L2: x loaded evict_first, y stored .cs): the GPU tests of the row programs at one rank with
# every set as they run by default (small: plain accesses) and with COCONET_ROW_STREAM=1 (every
# row kernel streaming; memcheck on rowwise_half's sets); then the norms bench with rows taking
# turns: torch.compile, coconetc (default), coconetc_nostream (COCONET_ROW_STREAM=0: as before).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=480 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-e.sh (carry .gpu-bundle) -> $OUT/e.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin e "${LIMIT:-480}"
job_tests 90 GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_half rowwise_types ops_mix keepdim_norms"
job_tests --as stream 150 GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_half rowwise_types ops_mix keepdim_norms" \
  COCONET_ROW_STREAM=1 SANITIZE=1 SANITIZE_TOOLS=memcheck GPU_TESTS_SANITIZE_SETS="rowwise_half@r1k rowwise_half@r192 rowwise_types@r192"
job_bench norms 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16,layernorm_bf16,rmsnorm_bf16,softmax_bf16" \
  BENCH_ARGS="--rows torch.compile,coconetc,coconetc_nostream --interleave 10 --configs layernorm_T=8192_H=1024_f16,layernorm_T=8192_H=4096_f16,layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=1024_f16,rmsnorm_T=8192_H=4096_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16,softmax_T=8192_H=1024_f16,softmax_T=8192_H=4096_f16,softmax_T=8192_H=8192_f16,softmax_T=8192_H=12288_f16,layernorm_T=8192_H=4096_bf16,rmsnorm_T=8192_H=4096_bf16,softmax_T=8192_H=4096_bf16"
job_end
