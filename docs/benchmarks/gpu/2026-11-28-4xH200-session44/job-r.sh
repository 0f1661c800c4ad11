#!/usr/bin/env bash
# Session 44, call r (4 GPUs): GPU tests at 4 ranks of builds that had not run at 4 ranks since
# session 42's device allocations in 16-byte units (a9018be): Adam, SGD, Megatron's row and MLP
# layers, the decode GEMV, with variants. Bundle: GPU_BUNDLE_ONLY="adam sgd megatron_row
# megatron_mlp decode_gemv" bash tools/gpu-bundle.sh. -> $OUT/r
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin r "${LIMIT:-400}"
job_tests $(( $(left) - 10 )) GPU_TESTS_RANKS="4" GPU_TESTS_ONLY="adam adam@chunks5 adam@split5 adam@ce sgd megatron_row megatron_row@two megatron_row@pipe megatron_row@ll megatron_row@ceg megatron_mlp megatron_mlp@pipe decode_gemv decode_gemv@two"
job_end
