#!/usr/bin/env bash
# session 40, 4 GPUs: the GPU tests of group A's default and NCCL-only builds at 4 GPUs (job4a's
# test queue, all 33 builds, did not finish within its limit), every size set. -> $OUT/s40h
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s40h "${LIMIT:-420}"
job_tests $(( $(left) - 15 )) GPU_TESTS_ONLY="decode_gemv decode_gemv@nccl megatron_row megatron_row@nccl megatron_mlp megatron_mlp@nccl matmul_allreduce matmul_all_to_all overlap_cast overlap_cast@nccl" GPU_TESTS_RANKS="4"
job_end
