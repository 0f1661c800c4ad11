#!/usr/bin/env bash
# Session 50, call q2 (2 H200; 4 GPUs were not lent then): GPU tests of
# tests/gpu/programs/tail_fold (a reduction folded into an all-gather tail whose movers pull by
# flags: the emitted form in which the workers alone compute chunk 0, which no sample has).
# (1) At 2 ranks as built (fixed parts at 2 ranks: claimedPulls), with memcheck at 2 ranks;
# (2) at 2 ranks with the tiles forced (COCONET_CLAIMED_PULL=1), with memcheck again.
# Bundle: GPU_BUNDLE_ONLY="tail_fold" bash tools/gpu-bundle.sh.
# Run: LIMIT=240 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-q2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/q2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin q2 "${LIMIT:-240}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 130 GPU_TESTS_RANKS="2" GPU_TESTS_ONLY="tail_fold" MEMCHECK_P2="tail_fold"
timeout $(( $(left) - 10 )) env SANITIZE=0 COCONET_CLAIMED_PULL=1 GPU_TESTS_RANKS="2" GPU_TESTS_ONLY="tail_fold" \
  MEMCHECK_P2="tail_fold" OUT="$R/gpu-tests-tiles" bash tests/gpu/run.sh > "$R/tests-tiles.log" 2>&1
step "tests tiles forced" $?
cat "$R/gpu-tests-tiles/gpu-results.txt"
job_end
