#!/usr/bin/env bash
# Session 56: the row-wise kernels with the row in registers (23a385a) and keepdim reductions
# (4d46a5d) on the GPU: ops_mix (softmax, layernorm, rmsnorm in f32 and f16) with every vector set,
# among them the new ones for each path of the kernels (@rows2k: two rows a block; @odd: single
# elements; @w12k: 512 threads a row; @long: beyond the registers), seq_parallel (the layer norm on
# slices), keepdim_norms (new: RMSNorm and softmax written with keepdim reductions, fused with the
# reduce-scatter), their NCCL builds, at one rank (1 GPU: multi-rank forms over a team of one) and
# at 2 where there are 2 GPUs, four checks at a time (SHARE=K to change); then memcheck and
# racecheck at one rank (the new kernels combine through shared memory), memcheck at 2 ranks.
# Bundle: bash tools/gpu-bundle.sh
# Run: [NAME=t] LIMIT=400 bash docs/benchmarks/gpu/2026-11-29-2xH200-session56/job-t.sh (carry .gpu-bundle) -> $OUT/t.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin "${NAME:-t}" "${LIMIT:-400}"
n=$(nvidia-smi -L | wc -l)
ranks="1"; [ "$n" -ge 2 ] && ranks="1 2"
m2=""; [ "$n" -ge 2 ] && m2="keepdim_norms seq_parallel"
only="ops_mix ops_mix@* seq_parallel seq_parallel@* keepdim_norms keepdim_norms@*"
job_tests $(( $(left) * 60 / 100 )) GPU_TESTS_RANKS="$ranks" GPU_TESTS_MULTI_AT_ONE=1 GPU_TESTS_SHARE="${SHARE:-4}" \
  GPU_TESTS_ONLY="$only" MEMCHECK_P2="$m2"
job_tests --as san $(( $(left) - 10 )) GPU_TESTS_RANKS=1 SANITIZE=1 GPU_TESTS_ONLY="ops_mix seq_parallel keepdim_norms"
job_end
