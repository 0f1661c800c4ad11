#!/usr/bin/env bash
# Session 50, call q4 (4 H200): GPU tests of tests/gpu/programs/tail_fold (a reduction folded
# into an all-gather tail whose movers pull by flags: the emitted form in which the workers alone
# compute chunk 0, which no sample has). (1) At 4 ranks as built (tiles: claimedPulls), with
# memcheck at 4 ranks (2 ranks: call q2); (2) at 4 ranks in fixed parts
# (COCONET_CLAIMED_PULL=0).
# Bundle: GPU_BUNDLE_ONLY="tail_fold" bash tools/gpu-bundle.sh (run at the commit adding this line).
# Run: LIMIT=260 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-q4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/q4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin q4 "${LIMIT:-260}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 150 GPU_TESTS_RANKS="4" GPU_TESTS_ONLY="tail_fold" MEMCHECK_P4="tail_fold"
timeout $(( $(left) - 10 )) env SANITIZE=0 COCONET_CLAIMED_PULL=0 GPU_TESTS_RANKS="4" GPU_TESTS_ONLY="tail_fold" \
  OUT="$R/gpu-tests-fixed" bash tests/gpu/run.sh > "$R/tests-fixed.log" 2>&1
step "tests fixed parts" $?
cat "$R/gpu-tests-fixed/gpu-results.txt"
job_end
