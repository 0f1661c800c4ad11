#!/usr/bin/env bash
# Session 42, call c (2 GPUs): call b's builds reached only 8 C-interface checks (~13 s each) after
# their 2-rank driver checks. Here, with no driver checks (GPU_TESTS_DRIVERS=0), the C interface of
# the remaining builds but their @nccl twins, the run-time error paths and the fake-host runs.
# Bundle first: GPU_BUNDLE_PACK=1 GPU_BUNDLE_ONLY="$L" (below) bash tools/gpu-bundle.sh. -> $OUT/s42c
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s42c "${LIMIT:-560}"
L="allreduces@ce_rounds allreduces@ll allreduces@ll128 all_to_all batched_slices embedding_bag dlrm_embedding moe_gemm moe_gemm@capacity moe_gemm@none norm_clip ops_mix fold_local pipeline pipeline@overlap sends gemvs run_args scalar_chain reduce_chains"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$L" GPU_TESTS_RANKS="2" GPU_TESTS_DRIVERS=0
job_end
