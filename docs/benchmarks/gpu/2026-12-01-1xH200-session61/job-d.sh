#!/usr/bin/env bash
# Session 61 call d (1x H200): the bench's PyTorch peers after workloads.function_row took the
# norms and rowfused workloads' eager and torch.compile rows (a refactor: the same functions):
# both workloads --quick, rows eager, torch.compile and coconetc, taking turns.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=240 bash docs/benchmarks/gpu/2026-12-01-1xH200-session61/job-d.sh (carry .gpu-bundle) -> $OUT/d.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-240}"
job_bench quick 1 norms,rowfused $(( $(left) - 10 )) BENCH_ARGS="--quick --rows eager,torch.compile,coconetc --interleave 10"
job_end
