#!/usr/bin/env bash
# Not run yet (written at the end of session 52, device time spent): the GPU tests of the sm_90a
# builds, whose kernels now launch early for real (programmatic dependent launch), at every world
# size the machine holds (1; 1 2; 1 2 4), with memcheck at 2 ranks where there are 2 GPUs.
# Bundle (a subset per call keeps the builds inside one call): e.g.
#   GPU_BUNDLE_ONLY="adam lamb sgd allreduces decode_gemv megatron_row" bash tools/gpu-bundle.sh
# then norm_clip fold_local reduce_chains batched_slices scalar_chain tail_fold sends pipeline
# moe_gemm megatron_mlp dlrm_embedding ... in later calls.
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-next-t.sh (any kind,
# carry .gpu-bundle).  -> $OUT/t
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t "${LIMIT:-560}"
n=$(nvidia-smi -L | wc -l)
ranks="1"; [ "$n" -ge 2 ] && ranks="1 2"; [ "$n" -ge 4 ] && ranks="1 2 4"
mem=""; [ "$n" -ge 2 ] && mem="lamb adam allreduces decode_gemv megatron_row"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="$ranks" SANITIZE=1 MEMCHECK_P2="$mem"
job_end
