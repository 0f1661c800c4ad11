#!/usr/bin/env bash
# session 39 job 4 (LIMIT seconds in all, default 500), 4 GPUs, after mergedOverlapChunks (one
# chunk on more than two ranks up to 16 MiB per peer): GPU tests of megatron_row@twosplit at 4
# ranks with memcheck at 2 and 4 ranks (job 1's run was cut before its memcheck); the Megatron
# workload's training shapes at 4 GPUs (eager, async_tp, coconetc, coconetc_fused (f16),
# coconetc_tail2, coconetc_copy_engines); the all-reduce alone at 2 GPUs (every size, coconetc
# against NCCL). -> $OUT/s39d
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39d "${LIMIT:-500}"
job_tests 190 GPU_TESTS_ONLY="megatron_row@twosplit" GPU_TESTS_SETS="megatron_row@big" GPU_TESTS_RANKS="4" \
  MEMCHECK_P2="megatron_row@twosplit" MEMCHECK_P4="megatron_row@twosplit"
job_bench megatron4 4 megatron $(( $(left) * 62 / 100 )) \
  BUILD_ARGS="--programs megatron_row,megatron_row_bf16,megatron_row_fused,megatron_row_tail2,megatron_row_bf16_tail2,megatron_row_ce,megatron_row_bf16_ce" \
  BENCH_ARGS="--configs train_T=8192_H=4096_f16,train_T=8192_H=8192_f16,train_T=8192_H=12288_f16,train_T=8192_H=4096_bf16,train_T=8192_H=8192_bf16,train_T=8192_H=12288_bf16 --rows eager,async_tp,coconetc,coconetc_fused,coconetc_tail2,coconetc_copy_engines"
job_bench allreduce2 2 allreduce $(( $(left) - 10 )) \
  BUILD_ARGS="--programs allreduce" BENCH_ARGS="--rows coconetc,nccl_allreduce"
job_end
