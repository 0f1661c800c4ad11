#!/usr/bin/env bash
# Prepared in session 42 for the next session (not yet run), on 2 GPUs: compute-sanitizer memcheck
# at 2 ranks of the copy-engine allreduces after the driver's tensors became whole 16-byte units
# (coconet_rt::roundUp16; session 11 and session 42 call e found NCCL's RING_LL reading the
# 7-element f16 buffer in 16-byte units, then a failed window registration), with their checks at
# 1 and 2 ranks and the C interface, whose checks run for the first time on GPUs in one batch
# (capi_check.py --batch, session 42; compare capi-batch.log's span with ~13 s a check alone).
# Expect every memcheck line clean and every capi check ok in the batch (none rerun alone).
# Bundle first: GPU_BUNDLE_PACK=1 GPU_BUNDLE_ONLY="allreduces" bash tools/gpu-bundle.sh (keeps
# allreduces and every allreduces@VARIANT). -> $OUT/n2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n2 "${LIMIT:-560}"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="allreduces allreduces@ce allreduces@ce_rounds allreduces@nccl" GPU_TESTS_RANKS="1 2" MEMCHECK_P2="allreduces@ce allreduces@ce_rounds allreduces@nccl" GPU_TESTS_MEMCHECK_FIRST=1
job_end
