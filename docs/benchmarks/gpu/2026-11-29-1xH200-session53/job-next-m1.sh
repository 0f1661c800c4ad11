#!/usr/bin/env bash
# Not run yet (session 53): for a machine of ONE GPU. The device groups' multi-rank kernels at one
# rank (COCONET_MULTI_RANK_FORMS=1, 4b983f9: rounds, movers and workers, barriers and the chains'
# exchanges over a team of one, programmatic dependent launch; not the peers' transfers), checked
# against the one-rank vectors: tests/gpu/run.sh with GPU_TESTS_MULTI_AT_ONE=1 over the builds
# with device groups, the optimizers' variants (chunks, roles, taper, occupancy, barriers) among them.
# Bundle: bash tools/gpu-bundle.sh (every build).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-next-m1.sh (carry .gpu-bundle) -> $OUT/m1.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m1 "${LIMIT:-560}"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS=1 GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS=none \
  GPU_TESTS_ONLY="adam adam@* lamb lamb@* sgd norm_clip scalar_chain tail_fold fold_local megatron_row megatron_mlp decode_gemv overlap_cast ops_mix embedding_bag"
job_end
