#!/usr/bin/env bash
# Not run yet (session 57): rows split over blocks (COCONET_ROWWISE=split, not yet the default),
# on one GPU (any kind): the row programs' long-row sets (ops_mix@long: 3 rows of 20000, 5 parts;
# ops_mix@vocab: 2 rows of 40004, 10 parts, f16 rows of single elements) with the split and
# without, at one rank under memcheck and racecheck, then workload norms (its new configs:
# softmax over 131072 at T = 1, 8, 64 with a row coconetc_split). If every check passes and the
# split is faster, make it the default (coconet_rt::rowSplitParts) and keep a knob for the old path.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=500 bash docs/benchmarks/gpu/2026-11-29-1xH200-session57/job-next-s.sh (carry .gpu-bundle) -> $OUT/ns.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin ns "${LIMIT:-500}"
job_tests --as split 150 COCONET_ROWWISE=split GPU_TESTS_RANKS="1" SANITIZE=1 GPU_TESTS_ONLY="ops_mix ops_mix@nccl" GPU_TESTS_SETS="ops_mix@long ops_mix@vocab"
job_tests --as plain 60 GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="ops_mix ops_mix@nccl" GPU_TESTS_SETS="ops_mix@long ops_mix@vocab"
job_bench norms 1 norms $(( $(left) - 10 ))
job_end
