#!/usr/bin/env bash
# Session 55: the first GPU run of tests/gpu/programs/seq_parallel (reorder's layer norm on
# slices, 77fe2f0; the matmul overlapped with the fused reduce-scatter and epilogue) and of
# rmsnorm (90bd3cb, in ops_mix; ops_mix's new @wide and @tall sets: rows of 1000, and 66000 rows),
# their NCCL builds, at every world size the machine holds (1 GPU: also seq_parallel's
# multi-rank device group over a team of one), then compute-sanitizer at one rank and memcheck
# at 2 ranks where there are 2 GPUs. The check logs carry the drivers' phase times (8b21ef1).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session55/job-s.sh (carry .gpu-bundle) -> $OUT/s.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s "${LIMIT:-300}"
n=$(nvidia-smi -L | wc -l)
ranks="1"; [ "$n" -ge 2 ] && ranks="1 2"; [ "$n" -ge 4 ] && ranks="1 2 4"
m2=""; [ "$n" -ge 2 ] && m2="seq_parallel ops_mix"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="$ranks" GPU_TESTS_MULTI_AT_ONE=1 \
  GPU_TESTS_ONLY="seq_parallel seq_parallel@* ops_mix ops_mix@*" MEMCHECK_P2="$m2"
job_end
