#!/usr/bin/env bash
# Session 45, call c (4 GPUs): own-slice as it lands (08a02a3): the own slice stays in the input
# only where the same blocks push and sum (Adam, the all-reduces, Megatron's groups); LAMB's
# `moments` (roles split) pushes it again, as main does. (1) GPU tests of the defaults at 2 and 4
# ranks; (2) LAMB and Adam against main's compiler (BENCH_COMPILER_ROWS, base = 8c1180f's
# coconetc) at 2^24, 2^26, 2^28, taking turns. Before the call: the bundle (tools/gpu-bundle.sh
# with GPU_BUNDLE_ONLY="adam lamb allreduces megatron_row"), main's stripped coconetc in
# .gpu-bundle/ab/. GPUS=2 for a machine of two (4-GPU machines were not lent for this call). -> $OUT/c
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c "${LIMIT:-420}"
gpus=${GPUS:-4}
job_tests 150 GPU_TESTS_RANKS="$( [ "$gpus" = 4 ] && echo "2 4" || echo 2)" GPU_TESTS_SETS="none" \
  GPU_TESTS_ONLY="adam lamb lamb@taper lamb@chunks8 allreduces megatron_row megatron_row@two"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench optim$gpus $gpus lamb,adam $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base,adam,adam_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
