#!/usr/bin/env bash
# Session 60 call f (1x H200), the session's final row-kernel code (softmax streams only when
# forced): the norms bench, rows taking turns, torch.compile, coconetc, coconetc_stream
# (COCONET_ROW_STREAM=1) and coconetc_nostream (=0), f16 at H = 4096, 8192, 12288 and softmax at 1024.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=240 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-f.sh (carry .gpu-bundle) -> $OUT/f.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin f "${LIMIT:-240}"
job_bench norms 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs layernorm_f16,rmsnorm_f16,softmax_f16" \
  BENCH_ARGS="--rows torch.compile,coconetc,coconetc_stream,coconetc_nostream --interleave 10 --configs layernorm_T=8192_H=4096_f16,layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=4096_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16,softmax_T=8192_H=1024_f16,softmax_T=8192_H=4096_f16,softmax_T=8192_H=8192_f16,softmax_T=8192_H=12288_f16"
job_end
