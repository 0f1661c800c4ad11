#!/usr/bin/env bash
# Session 55: GPU_TESTS_SHARE (several driver checks at once on the same GPUs) on one H200: the
# one-rank checks of Adam's, LAMB's and SGD's builds with all their vector sets, one at a time
# and then four at a time; the result files must match (but the command line) and the wall times
# say what sharing saves. The check logs carry the drivers' phase times (8b21ef1).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=400 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session55/job-share.sh (carry .gpu-bundle) -> $OUT/share.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin share "${LIMIT:-400}"
only="adam adam@* lamb lamb@* sgd sgd@*"
job_tests --as one $(( $(left) * 60 / 100 )) GPU_TESTS_RANKS=1 GPU_TESTS_ONLY="$only"
job_tests --as four $(( $(left) - 10 )) GPU_TESTS_RANKS=1 GPU_TESTS_ONLY="$only" GPU_TESTS_SHARE=4
diff <(grep -v -E '^(date|command):' "$R/gpu-tests-one/gpu-results.txt") \
     <(grep -v -E '^(date|command):' "$R/gpu-tests-four/gpu-results.txt") > "$R/diff.txt" && echo "results: the same" || echo "results: differ (diff.txt)"
job_end
