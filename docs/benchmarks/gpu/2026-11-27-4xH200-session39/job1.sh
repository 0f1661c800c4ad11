#!/usr/bin/env bash
# session 39 job 1 (LIMIT seconds in all, default 550), 4 GPUs: GPU tests of the one-chunk kernel's
# tune knobs (megatron_row@two3: tune(f, algorithm = two_shot, chunks = 3); @twosplit: chunks = 4,
# roles = split, movers = 16) and of the sample at 2 and 4 ranks with tests/gpu/run.sh's lanes
# (driver runs of one world size side by side on disjoint GPUs), memcheck of @twosplit at 2 and 4
# ranks; then the Megatron workload at 4 GPUs, every training and decode shape, rows eager,
# async_tp, coconetc, coconetc_chunks2, coconetc_fused (f16). -> $OUT/s39a
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s39a "${LIMIT:-550}"
job_tests 170 GPU_TESTS_ONLY="megatron_row megatron_row@two3 megatron_row@twosplit" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@odd megatron_row@vec" GPU_TESTS_RANKS="2 4" \
  MEMCHECK_P2="megatron_row@twosplit" MEMCHECK_P4="megatron_row@twosplit"
job_bench megatron4 4 megatron $(( $(left) - 10 )) \
  BUILD_ARGS="--programs megatron_row,megatron_row_unscheduled,megatron_row_bf16,megatron_row_bf16_unscheduled,megatron_row_chunks2,megatron_row_bf16_chunks2,megatron_row_fused" \
  BENCH_ARGS="--rows eager,async_tp,coconetc,coconetc_chunks2,coconetc_fused"
job_end
