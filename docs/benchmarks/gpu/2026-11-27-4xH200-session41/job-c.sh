#!/usr/bin/env bash
# Session 41, call c (4x H200): GPU tests at 1, 2 and 4 ranks of the builds that the last sessions
# did not run (pipeline, the allreduces, the all_to_alls, sends, embeddings, MoE, reductions, ...),
# as far as the time allows (tests/gpu/run.sh writes what finished when stopped).
# Bundle first: GPU_BUNDLE_ONLY="pipeline allreduces a2a_bcast a2a_ew a2a_ffn all_to_all sends
# dlrm_embedding embedding_bag moe_gemm norm_clip scalar_chain reduce_chains fold_local
# batched_slices ops_mix run_args gemvs" bash tools/gpu-bundle.sh. -> $OUT/s41c
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s41c "${LIMIT:-560}"
job_tests $(( $(left) - 15 ))
job_end
