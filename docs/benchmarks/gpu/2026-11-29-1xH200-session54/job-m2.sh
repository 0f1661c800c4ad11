#!/usr/bin/env bash
# Call m2 (1 H200): a device group's multi-rank kernel without roles runs at most kDevMaxBlocks = 128
# blocks of 512 threads (one LSA barrier each), half of what fits at 64 registers (264 on H200); m1's
# stamps showed LAMB's `apply` at one rank in that form computing its 2^22 elements in ~35 us against
# the one-rank form's 16.6 (resident grid). Working tree: barrierBlocks (at most what fits, and
# COCONET_DEV_BLOCKS=K for A/B runs, up to the communicator's 512 barriers).
# (1) drivers at one rank: Adam and LAMB at N = 2^22 and 2^24, the multi-rank forms with 128 blocks
#     (default) and with every block that fits (COCONET_DEV_BLOCKS=512), and the one-rank form, three
#     reps interleaved, 200 timed calls after 50;
# (2) the GPU tests of m1 (GPU_TESTS_MULTI_AT_ONE=1) with COCONET_DEV_BLOCKS=512.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m2.sh (carry .gpu-bundle) -> $OUT/m2.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m2 "${LIMIT:-560}"
G=.gpu-bundle/gen
for n in 4194304 16777216; do
  timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 3 --raw "$R/raw-ab-$n" \
    --env ";COCONET_MULTI_RANK_FORMS=1;COCONET_MULTI_RANK_FORMS=1 COCONET_DEV_BLOCKS=512" -D N=$n -D t=10 $G/adam $G/lamb >> "$R/ab.txt" 2>&1
  step "drivers N=$n" $?
done
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS=1 GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS=none COCONET_DEV_BLOCKS=512 \
  GPU_TESTS_ONLY="adam adam@* lamb lamb@* sgd norm_clip scalar_chain tail_fold fold_local megatron_row megatron_mlp decode_gemv overlap_cast ops_mix embedding_bag"
cat "$R/ab.txt"
job_end
