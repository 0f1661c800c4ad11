#!/usr/bin/env bash
# Call m5 (1 H200): compute-sanitizer on the multi-rank kernels at one rank (COCONET_MULTI_RANK_FORMS=1:
# rounds, barriers, window stores, the chains' exchanges, PDL over a team of one), which no sanitizer
# had run (sessions 41-46 ran memcheck at 2 and 4 ranks on sm_75 code, where PDL was empty). First
# the GPU tests of the nine programs with multi-rank device groups, default grid (ac8a2bd's
# 512-barrier communicator), then memcheck of each one's multi-rank forms, then racecheck as time
# allows (run.sh queues the plain builds' sanitizers too, done in session 53, so this loops itself).
# Bundle: bash tools/gpu-bundle.sh (at 7b46ddb)
# Run: LIMIT=520 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m5.sh (carry .gpu-bundle) -> $OUT/m5.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m5 "${LIMIT:-520}"
progs="adam lamb sgd norm_clip scalar_chain tail_fold fold_local megatron_row decode_gemv"
job_tests 200 GPU_TESTS_RANKS=1 GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS=none GPU_TESTS_ONLY="$progs"
b=.gpu-bundle
for tool in memcheck racecheck; do
  for p in $progs; do
    [ "$(left)" -gt 40 ] || { echo "$tool $p (multi-rank forms): not run (time)" >> "$R/sanitizers.txt"; continue; }
    log="$R/$tool-$p-multi.log"
    COCONET_MULTI_RANK_FORMS=1 timeout $(( $(left) - 10 )) compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
      $b/gen/$p/build/${p}_main --spawn 1 --check $b/dumps/$p/ranks1 > "$log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool $p (multi-rank forms): $([ $rc = 0 ] && echo clean || echo "exit $rc: $(grep -m1 '=========' "$log")") at +$(( $(date +%s) - JOB_T0 )) s" >> "$R/sanitizers.txt"
  done
done
cat "$R/sanitizers.txt"
job_end
