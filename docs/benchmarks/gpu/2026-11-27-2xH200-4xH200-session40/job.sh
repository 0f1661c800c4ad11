#!/usr/bin/env bash
# session 40 (2x H200; 4-GPU machines were not lent): GPU tests of every build in the bundle, a
# third of the builds per call (tools/gpu-bundle.sh with GPU_BUNDLE_ONLY naming program families,
# so that the bundle and the repository fit a device call's 64 MiB). Driver runs at 1 and 2 GPUs
# with each program's default vectors and every size set, no compute-sanitizer; the C-interface
# checks that come after them run until LIMIT cuts them. -> $OUT/NAME
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin "${NAME:-s40}" "${LIMIT:-560}"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$(ls .gpu-bundle/gen | tr '\n' ' ')" GPU_TESTS_RANKS="1 2"
job_end
