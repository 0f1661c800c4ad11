#!/usr/bin/env bash
# Session 42, call e (2 GPUs): compute-sanitizer memcheck at 2 ranks of device-API builds (LL and
# LL128 all-reduces, copy-engine rounds, the all_to_all pipelines and kernels, the pipelined
# matmul), no driver checks. Bundle first: GPU_BUNDLE_PACK=1 GPU_BUNDLE_ONLY="$L" (below)
# bash tools/gpu-bundle.sh. -> $OUT/s42e
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s42e "${LIMIT:-560}"
L="allreduces@ll allreduces@ll128 allreduces@ce_rounds moe_gemm a2a_ffn all_to_all pipeline@overlap embedding_bag"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$L" GPU_TESTS_RANKS="2" GPU_TESTS_DRIVERS=0 MEMCHECK_P2="$L" GPU_TESTS_MEMCHECK_FIRST=1
job_end
