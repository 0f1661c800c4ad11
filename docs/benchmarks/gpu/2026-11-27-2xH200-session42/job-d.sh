#!/usr/bin/env bash
# Session 42, call d (2 GPUs): the C interface of the @nccl twins that calls b and c left,
# with no driver checks (GPU_TESTS_DRIVERS=0) (the fake-host runs take the default builds: none here).
# Bundle first: GPU_BUNDLE_PACK=1 GPU_BUNDLE_ONLY="$L" (below) bash tools/gpu-bundle.sh. -> $OUT/s42d
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s42d "${LIMIT:-560}"
L="allreduces@nccl all_to_all@nccl embedding_bag@nccl moe_gemm@nccl norm_clip@nccl ops_mix@nccl fold_local@nccl sends@nccl pipeline@nccl scalar_chain@nccl"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$L" GPU_TESTS_RANKS="2" GPU_TESTS_DRIVERS=0
job_end
