#!/usr/bin/env bash
# Not run yet (session 56): the row-wise kernels' open questions on one GPU (any kind): workload
# norms with every row (eager, torch.compile, coconetc, coconetc_long, coconetc_p4, coconetc_p2)
# at 8192 rows, again after any change to the kernels (bf16 rows took 1.2-1.4x the f16 time in
# session 56; short softmax rows 1.9x torch.compile's).
# Bundle: bash tools/gpu-bundle.sh.
# Run: LIMIT=400 bash docs/benchmarks/gpu/2026-11-29-2xH200-session56/job-next-b4.sh (carry .gpu-bundle) -> $OUT/nb4.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nb4 "${LIMIT:-400}"
job_bench norms 1 norms $(( $(left) - 10 ))
job_end
