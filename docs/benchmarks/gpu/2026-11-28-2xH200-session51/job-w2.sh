#!/usr/bin/env bash
# Session 51, call w2 (2 H200): call v2's bench again, now with the compiler row built (v2's
# BUILD_ARGS="--programs lamb" had left lamb_x_c832 out; build.py keeps a program's rows'
# variants since b29332b): 2^24 .. 2^28, rows taking turns: coconetc (main), coconetc_c832
# (832f65d's compiler: on 2 ranks the same kernels as main's fixed-parts instantiation), NCCL's
# all-reduce.
# Bundle: as job-v2.sh.
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-28-2xH200-session51/job-w2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/w2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin w2 "${LIMIT:-200}"
job_bench lamb2 2 lamb $(( $(left) - 5 )) \
  BENCH_COMPILER_ROWS="c832=.gpu-bundle/ab/coconetc-832f65d" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_c832,nccl_allreduce --interleave 10"
job_end
