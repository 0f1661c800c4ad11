#!/usr/bin/env bash
# Not run yet (session 56): the row-wise kernels and keepdim reductions where session 56 could not
# take them: rowwise_types (new in 46f02f8, after the GPU calls: every element type of the row
# kernels, packs of 1 and 32 bytes) at every rank count, and ops_mix, seq_parallel, keepdim_norms at
# 4 ranks (session 56 ran them at 1 and 2), two checks at a time, then the memcheck at 2 ranks
# that call nt2 did not reach (GPU_TESTS_DRIVERS=0: no checks again) and at 4 ranks where there
# are 4 GPUs.
# Bundle: bash tools/gpu-bundle.sh (every build).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-2xH200-session56/job-next-t4.sh (kind
#   nvidia-h200-x4, or -x2: then ranks 1 and 2; carry .gpu-bundle).  -> $OUT/nt4.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nt4 "${LIMIT:-560}"
n=$(nvidia-smi -L | wc -l)
ranks="1"; [ "$n" -ge 2 ] && ranks="1 2"; [ "$n" -ge 4 ] && ranks="1 2 4"
m4=""; [ "$n" -ge 4 ] && m4="keepdim_norms seq_parallel rowwise_types lamb adam megatron_row"
job_tests $(( $(left) * 45 / 100 )) GPU_TESTS_RANKS="$ranks" GPU_TESTS_MULTI_AT_ONE=1 GPU_TESTS_SHARE=2 SANITIZE=1 \
  GPU_TESTS_ONLY="rowwise_types rowwise_types@* ops_mix ops_mix@* seq_parallel seq_parallel@* keepdim_norms keepdim_norms@*" \
  MEMCHECK_P4="$m4"
job_tests --as mem2 $(( $(left) - 10 )) GPU_TESTS_RANKS="2" GPU_TESTS_DRIVERS=0 SANITIZE=0 \
  GPU_TESTS_ONLY="lamb adam megatron_row tail_fold sgd" MEMCHECK_P2="lamb adam megatron_row tail_fold sgd"
job_end
