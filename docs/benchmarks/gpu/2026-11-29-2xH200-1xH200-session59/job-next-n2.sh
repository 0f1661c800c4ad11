#!/usr/bin/env bash
# Not run yet (session 59): the norms bench with the rows taking turns (call i showed rows timed one
# after another compare the GPU's power states) after 66cdb10 (threads a row a multiple of 32 past
# 128: layer norm at H = 12288 105.6 us alone in call j against torch.compile's 101.1 in call i):
# every op at H = 1024 .. 12288 (8192 rows, f16; bf16 at 4096), then the long rows, each with
# eager, torch.compile and coconetc taking turns; H = 1024 with fewer packs a thread.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-next-n2.sh (carry .gpu-bundle) -> $OUT/nn2.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nn2 "${LIMIT:-420}"
job_bench norms 1 norms $(( $(left) * 50 / 100 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16,layernorm_bf16,rmsnorm_bf16,softmax_bf16" \
  BENCH_ARGS="--rows eager,torch.compile,coconetc --interleave 10 --configs layernorm_T=8192_H=1024_f16,layernorm_T=8192_H=4096_f16,layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=1024_f16,rmsnorm_T=8192_H=4096_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16,softmax_T=8192_H=1024_f16,softmax_T=8192_H=4096_f16,softmax_T=8192_H=8192_f16,softmax_T=8192_H=12288_f16,layernorm_T=8192_H=4096_bf16,rmsnorm_T=8192_H=4096_bf16,softmax_T=8192_H=4096_bf16"
# H = 1024: softmax 11.8 vs torch.compile's 9.8 us (call i); 8192 rows of 1024 are 1024 blocks of 8
# rows at 8 blocks an SM (one partial wave, loads then exps then stores); at most 4 / 2 packs a
# thread makes 2 / 4 waves
job_bench small 1 norms $(( $(left) * 50 / 100 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16" \
  BENCH_ARGS="--rows torch.compile,coconetc,coconetc_p4,coconetc_p2 --interleave 10 --configs layernorm_T=8192_H=1024_f16,rmsnorm_T=8192_H=1024_f16,softmax_T=8192_H=1024_f16"
job_bench long 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16" \
  BENCH_ARGS="--rows eager,torch.compile,coconetc --interleave 10 --configs softmax_T=1_H=131072_f16,softmax_T=64_H=131072_f16,softmax_T=1024_H=131072_f16,layernorm_T=8_H=65536_f16,layernorm_T=1024_H=65536_f16,rmsnorm_T=8_H=65536_f16,rmsnorm_T=1024_H=65536_f16"
job_end
