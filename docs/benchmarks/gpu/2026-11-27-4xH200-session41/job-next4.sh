#!/usr/bin/env bash
# Prepared in session 41 for the next session (not yet run), on 4 GPUs: the GPU tests at 4 ranks
# of the 39 builds that call c ran at 1 and 2 only (every size set). The C-interface and
# fake-host runs it did not reach need 2 in GPU_TESTS_RANKS: a later call with "2".
# Bundle first: the GPU_BUNDLE_ONLY of job-c.sh. -> $OUT/n4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n4 "${LIMIT:-560}"
job_tests $(( $(left) - 15 )) GPU_TESTS_RANKS="4"
job_end
