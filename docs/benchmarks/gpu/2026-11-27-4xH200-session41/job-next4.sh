#!/usr/bin/env bash
# Prepared in session 41 for the next session (not yet run), on 4 GPUs: the GPU tests at 4 ranks
# of the 39 builds that call c ran at 1 and 2 only (every size set). (Their C interface and fake
# hosts at 2 ranks ran in session 42, calls b-d.)
# Bundle first: GPU_BUNDLE_PACK=1 with the GPU_BUNDLE_ONLY of job-c.sh (the bundle, 12 MB, packs
# to 3.6 MB). -> $OUT/n4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n4 "${LIMIT:-560}"
job_tests $(( $(left) - 15 )) GPU_TESTS_RANKS="4"
job_end
