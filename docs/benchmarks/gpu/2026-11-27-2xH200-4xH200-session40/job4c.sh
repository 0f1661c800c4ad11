#!/usr/bin/env bash
# session 40, 4 GPUs: the GPU tests of group A's variant builds of megatron_row and decode_gemv at
# 4 GPUs, every size set. -> $OUT/s40i
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s40i "${LIMIT:-400}"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="$(cd .gpu-bundle/gen && ls -d megatron_row@* decode_gemv@* | grep -v @nccl | tr '\n' ' ')" GPU_TESTS_RANKS="4"
job_end
