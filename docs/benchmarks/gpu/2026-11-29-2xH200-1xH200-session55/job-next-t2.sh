#!/usr/bin/env bash
# Not run yet (session 55): the rest of session 53's job-next-t.sh at 2 ranks. Call nt of this
# session (2 H200, sm_90a builds) checked 174 of them (0 failed) before its limit; these are the
# other vector sets of the 50 builds it did not reach (LAMB's @big and @odd, Megatron's five, MoE's
# three, norm_clip, reduce_chains, scalar_chain, sends, SGD, tail_fold), then compute-sanitizer
# memcheck at 2 ranks of the programs whose kernels launch dependent, after the checks (adam's plain
# build comes again for it: run.sh memchecks only what it built). The kept builds' default vectors
# run again too (~50 checks: run.sh always runs them), so the memcheck may not be reached in one
# call: then GPU_TESTS_DRIVERS=0 with the same list. On 4 GPUs, also at 4 ranks (MEMCHECK_P4 lamb
# adam megatron_row), as job-next-t.sh.
# Bundle: bash tools/gpu-bundle.sh (every build).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session55/job-next-t2.sh (kind
#   nvidia-h200-x2 or -x4, carry .gpu-bundle).  -> $OUT/nt2.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nt2 "${LIMIT:-560}"
n=$(nvidia-smi -L | wc -l)
ranks="2"; [ "$n" -ge 4 ] && ranks="2 4"
mem="lamb adam megatron_row tail_fold sgd"
m4=""; [ "$n" -ge 4 ] && m4="lamb adam megatron_row"
only="lamb lamb@* megatron_mlp megatron_mlp@* megatron_row megatron_row@* moe_gemm moe_gemm@*"
only="$only norm_clip norm_clip@nccl reduce_chains scalar_chain scalar_chain@nccl sends sends@nccl"
only="$only sgd sgd@nccl tail_fold tail_fold@nccl adam"
# Two checks at once on the same GPUs (GPU_TESTS_SHARE, call share: 3.6x the checks a second at one
# rank; first time at 2 and 4 ranks here): if a check fails or times out, run it again alone
# (GPU_TESTS_ONLY=its build, no GPU_TESTS_SHARE) before reading anything into it.
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="$ranks" SANITIZE=0 GPU_TESTS_ONLY="$only" \
  MEMCHECK_P2="$mem" MEMCHECK_P4="$m4" GPU_TESTS_SHARE="${SHARE:-2}"
job_end
