#!/usr/bin/env bash
# Not run yet (session 58): on one GPU (any kind; on 4 GPUs the memcheck at P = 4 too):
# rowwise_types with its long rows after c69fbe2 (the interpreter's row sums in f64: call v's one
# failure was the reference's f32 sum), split (default) and one block a row (COCONET_ROWWISE=long);
# then workload norms' long rows (softmax over 131072 at T = 1..1024; layer norm and RMSNorm over
# 65536 at T = 8 and 1024, new after call v) with rows coconetc, coconetc_long, coconetc_split4/8,
# and layer norm / RMSNorm at T = 8192, H = 8192 and 12288, where torch.compile's looped two-read
# kernel led the `_reg` kernel (session 57): its coconetc_long row is now the packed one-block kernel;
# where 4 GPUs are lent, memcheck at P = 4 of what session 58's nt4 did not reach.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-29-4xH200-session58/job-next-n.sh (carry .gpu-bundle) -> $OUT/nn.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nn "${LIMIT:-420}"
sets="rowwise_types@long rowwise_types@wide rowwise_types@odd ops_mix@long ops_mix@vocab"
job_tests --as packs 70 GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types ops_mix" GPU_TESTS_SETS="$sets" \
  SANITIZE=1 SANITIZE_TOOLS=racecheck GPU_TESTS_SANITIZE_SETS="rowwise_types@long ops_mix@vocab"
job_tests --as long 50 COCONET_ROWWISE=long GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_types ops_mix" GPU_TESTS_SETS="$sets"
job_bench norms 1 norms $(( $(left) * 75 / 100 )) BUILD_ARGS="--programs softmax_f16,layernorm_f16,rmsnorm_f16" \
  BENCH_ARGS="--configs softmax_T=1_H=131072_f16,softmax_T=64_H=131072_f16,softmax_T=1024_H=131072_f16,layernorm_T=8_H=65536_f16,layernorm_T=1024_H=65536_f16,rmsnorm_T=8_H=65536_f16,rmsnorm_T=1024_H=65536_f16,layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16"
if [ "$(nvidia-smi -L | wc -l)" -ge 4 ]; then
  job_tests --as mem4 $(( $(left) - 10 )) GPU_TESTS_RANKS="4" GPU_TESTS_DRIVERS=0 \
    GPU_TESTS_ONLY="rowwise_types lamb adam megatron_row" MEMCHECK_P4="rowwise_types lamb adam megatron_row"
fi
job_end
