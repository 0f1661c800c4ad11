#!/usr/bin/env bash
# Not run yet (written at the end of session 52): LAMB and Adam on 4 (or 2) GPUs built for sm_90a
# (`coconetc`) against the same code built for sm_75 as every figure before session 52
# (`coconetc_prev`: ef43cba's compiler, whose CMakeLists.txt took nvcc's default), with NCCL's
# all-reduce, rows taking turns, every row checked.
# Bundle: GPU_BUNDLE_ONLY="lamb adam" bash tools/gpu-bundle.sh; mkdir -p .gpu-bundle/ab; a stripped
#   coconetc built at ef43cba in .gpu-bundle/ab/coconetc-prev (git worktree add /tmp/wt ef43cba;
#   cmake -S /tmp/wt -B /tmp/wt/build -G Ninja -DCOCONETC_TESTS=OFF; ninja -C /tmp/wt/build coconetc).
# Run: LIMIT=560 GPUS=4 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-next-b.sh (kind
# nvidia-h200-x4 or -x2 with GPUS=2, carry .gpu-bundle).  -> $OUT/b$GPUS
set -uo pipefail
source tools/bench/gpu/job.sh
g=${GPUS:-4}
job_begin "b$g" "${LIMIT:-560}"
job_bench optim$g "$g" lamb,adam $(( $(left) - 5 )) \
  BENCH_COMPILER_ROWS="prev=.gpu-bundle/ab/coconetc-prev" \
  BUILD_ARGS="--programs lamb,adam" \
  BENCH_ARGS="--configs N=2^20,N=2^22,N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_prev,nccl_allreduce --interleave 10"
job_end
