#!/usr/bin/env bash
# Call t1: the GPU tests of every program's default build, sm_90a (PDL real since bc8da1f), at one
# rank (the machine lent has one GPU), with compute-sanitizer memcheck and racecheck.
# Bundle: bash tools/gpu-bundle.sh (all builds; GPU_TESTS_ONLY keeps the defaults).
# Run: LIMIT=540 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-t1.sh (carry .gpu-bundle) -> $OUT/t1.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t1 "${LIMIT:-540}"
names=$(ls samples; ls tests/gpu/programs/*.cnet | xargs -n1 basename | sed 's/\.cnet$//')
job_tests $(( $(left) - 10 )) GPU_TESTS_ONLY="$(echo $names)" GPU_TESTS_RANKS=1 SANITIZE=1
job_end
