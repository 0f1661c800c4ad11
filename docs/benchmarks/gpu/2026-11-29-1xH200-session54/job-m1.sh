#!/usr/bin/env bash
# Call m1 (1 H200): (1) the boundary again with stamps.py's corrected spreads (49c852a: every block's
# time as its PDL wait returns, taken before any memory access): LAMB N = 2^22, one rank, the default
# build stamped (solost) run as the one-rank form and as the multi-rank kernels over a team of one
# (COCONET_MULTI_RANK_FORMS=1, 4b983f9, replacing session 52's hand-edited proto_p1.py), two runs each.
# (2) first GPU run of COCONET_MULTI_RANK_FORMS: tests/gpu/run.sh with GPU_TESTS_MULTI_AT_ONE=1 over the
# builds with device groups (the optimizers' variants among them), against the one-rank vectors.
# Bundle: bash tools/gpu-bundle.sh; then build/coconetc compile samples/lamb/lamb.cnet -o .gpu-bundle/ab/solo;
#   python3 tools/bench/gpu/stamps.py .gpu-bundle/ab/solo .gpu-bundle/ab/solost
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m1.sh (carry .gpu-bundle) -> $OUT/m1.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m1 "${LIMIT:-560}"
A=.gpu-bundle/ab
job_stamps --ranks 1 --reps 2 multist 80 $A/solost 4194304 COCONET_MULTI_RANK_FORMS=1
job_stamps --ranks 1 --reps 2 solost 70 $A/solost 4194304
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS=1 GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS=none \
  GPU_TESTS_ONLY="adam adam@* lamb lamb@* sgd norm_clip scalar_chain tail_fold fold_local megatron_row megatron_mlp decode_gemv overlap_cast ops_mix embedding_bag"
cat "$R/ab.txt"
job_end
