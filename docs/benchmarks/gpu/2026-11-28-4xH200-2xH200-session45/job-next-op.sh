#!/usr/bin/env bash
# Prepared in session 45 for the next session (not yet run; 4 GPUs, H200 for the targets):
# proto_ownprefetch.py (LAMB's `moments` movers ask L2 for the own slice's chunk instead of copying
# it into the staging window; the workers read it from the input). Before the call, on main:
#   GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh
# (1) the patched default and chunks8 builds (made here, lamb@op and lamb@op8, from the bundle's)
# at 2 and 4 ranks with their size sets, memcheck of lamb@op at 2 ranks first (the prefetches
# stay within the slice); (2) the bench's row `coconetc_op` (BENCH_COMPILER_ROWS, cc-ownprefetch.sh)
# beside the default at 2^24, 2^26, 2^28, taking turns, every row checked. -> $OUT/op
set -uo pipefail
source tools/bench/gpu/job.sh
here=docs/benchmarks/gpu/2026-11-28-4xH200-2xH200-session45
job_begin op "${LIMIT:-540}"
for v in "" chunks8; do
  src=.gpu-bundle/gen/lamb${v:+@$v} dst=.gpu-bundle/gen/lamb@op${v:+${v#chunks}}
  rm -rf "$dst" && cp -r "$src" "$dst" && rm -rf "$dst/build" && python3 $here/proto_ownprefetch.py "$dst"
done
step patch $?
job_tests 220 GPU_TESTS_ONLY="lamb@op lamb@op8" GPU_TESTS_RANKS="2 4" MEMCHECK_P2="lamb@op" GPU_TESTS_MEMCHECK_FIRST=1
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="op=$here/cc-ownprefetch.sh" \
  BUILD_ARGS="--programs lamb,lamb_x_op" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_op,nccl_allreduce --interleave 10"
job_end
