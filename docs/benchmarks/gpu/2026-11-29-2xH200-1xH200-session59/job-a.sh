#!/usr/bin/env bash
# Call a (session 59): the GPU tests after b86b692 (the interpreter's f32 sums, means, norms and dot
# products accumulate in f64 and round once; c69fbe2 did the same for the row sums): every
# program's default build at 1 and 2 ranks against the new reference vectors, with the long-row
# sets of rowwise_types and ops_mix (call v's one failure, rowwise_types@long's softmax at 1.72e-4,
# was the reference's f32 sum); those sets again with one block a row (COCONET_ROWWISE=long); then
# racecheck on the long-row sets (the split kernels' first racecheck on them).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=570 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-a.sh (kind nvidia-h200-x2,
#   carry .gpu-bundle) -> $OUT/a.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a "${LIMIT:-570}"
names=$(ls samples; ls tests/gpu/programs/*.cnet | xargs -n1 basename | sed 's/\.cnet$//')
sets="rowwise_types@long rowwise_types@wide rowwise_types@odd ops_mix@long ops_mix@vocab"
job_tests --as all $(( $(left) - 170 )) GPU_TESTS_ONLY="$(echo $names)" GPU_TESTS_RANKS="1 2" GPU_TESTS_SETS="$sets"
job_tests --as long 60 COCONET_ROWWISE=long GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types ops_mix" GPU_TESTS_SETS="$sets"
job_tests --as race $(( $(left) - 10 )) GPU_TESTS_RANKS="1" GPU_TESTS_DRIVERS=0 GPU_TESTS_ONLY="rowwise_types ops_mix" \
  GPU_TESTS_SETS="$sets" SANITIZE=1 SANITIZE_TOOLS=racecheck GPU_TESTS_SANITIZE_SETS="rowwise_types@long ops_mix@vocab"
job_end
