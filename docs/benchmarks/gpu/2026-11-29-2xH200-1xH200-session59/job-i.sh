#!/usr/bin/env bash
# Call i (session 59), one GPU: call h found the GPU at its 700-W cap after 2 s of back-to-back layer
# norms (SM clock 1770-1920 MHz), the generated kernel then 73.5-76.3 us a step and torch.compile's
# 79.1-79.9 (cold: 72.8 vs 71.5): rows timed one after another compare power states. Here the
# norms bench's training shapes with the rows taking turns (--interleave 10).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-i.sh (carry .gpu-bundle) -> $OUT/i.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin i "${LIMIT:-300}"
job_bench norms 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16" \
  BENCH_ARGS="--configs layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16,softmax_T=8192_H=1024_f16 --rows eager,torch.compile,coconetc --interleave 10"
job_end
