#!/usr/bin/env bash
# Session 42, call b (2 GPUs): what session 41's call c (cut by the device budget) did not reach for
# its 39 builds: the driver checks again at 2 ranks, then every C-interface check (capi_check.py,
# PyTorch's tensors and stream), the run-time error paths and the fake-host runs at 2 GPUs.
# Bundle first: GPU_BUNDLE_ONLY="pipeline allreduces a2a_bcast a2a_ew a2a_ffn all_to_all sends
# dlrm_embedding embedding_bag moe_gemm norm_clip scalar_chain reduce_chains fold_local
# batched_slices ops_mix run_args gemvs" bash tools/gpu-bundle.sh. -> $OUT/s42b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s42b "${LIMIT:-560}"
job_tests $(( $(left) - 15 )) GPU_TESTS_RANKS="2"
job_end
