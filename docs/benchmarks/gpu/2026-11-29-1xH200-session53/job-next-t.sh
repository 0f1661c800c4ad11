#!/usr/bin/env bash
# Not run yet (session 53, one GPU lent): the GPU tests of every build (99 with the variants) for
# sm_90a at the world sizes above one that the machine holds (2; 2 and 4), where the device-API
# kernels take their multi-rank forms with programmatic dependent launch real; memcheck at 2 ranks
# (and 4 where there are 4 GPUs) of the programs whose kernels launch dependent. The one-rank
# checks and compute-sanitizer runs were this session's t1-t4 (62 checks passed; memcheck clean
# on all 26 programs with one-rank vectors; racecheck on 10).
# Bundle: bash tools/gpu-bundle.sh (every build).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-next-t.sh (kind
#   nvidia-h200-x4 or -x2, carry .gpu-bundle).  -> $OUT/nt.tgz
# If the limit stops it in the builds or the checks, run it again with GPU_TESTS_ONLY set to the
# builds not reached in the environment (gpu-results.txt lists the finished ones), e.g.
#   GPU_TESTS_ONLY="megatron*" LIMIT=560 bash ...: run.sh reads it from there.
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nt "${LIMIT:-560}"
n=$(nvidia-smi -L | wc -l)
ranks="2"; [ "$n" -ge 4 ] && ranks="2 4"
mem="lamb adam sgd allreduces decode_gemv megatron_row megatron_mlp norm_clip scalar_chain tail_fold"
m4=""; [ "$n" -ge 4 ] && m4="lamb adam megatron_row"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="$ranks" SANITIZE=0 \
  MEMCHECK_P2="$mem" MEMCHECK_P4="$m4"
job_end
