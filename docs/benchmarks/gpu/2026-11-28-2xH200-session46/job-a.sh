#!/usr/bin/env bash
# Session 46, call a (GPUS=4, or GPUS=2 where 4 are not lent: the tests at 2 ranks alone). The bundle's coconetc: main + LAMB's roles kernel `moments` leaving
# the own slice in its input when it runs without movers (below roles = auto's 4 rounds: 2^20,
# 2^22). (1) GPU tests: lamb (test sizes: no movers, the new path), lamb@chunks8 and adam@split5
# (movers: the staging path), lamb@op / lamb@op8 (proto_ownprefetch.py on the default and
# chunks8 builds), at 2 and 4 ranks, memcheck of lamb and lamb@op at 2 ranks first; (2) the bench,
# rows taking turns, every row checked: coconetc (this compiler), coconetc_base (main's, 675079f),
# coconetc_op (this compiler + proto_ownprefetch.py), NCCL's all-reduce, at 2^20 .. 2^28.
# Before the call: GPU_BUNDLE_ONLY="lamb adam@split5" bash tools/gpu-bundle.sh, then main's
# stripped coconetc as .gpu-bundle/ab/coconetc-main.  -> $OUT/a
set -uo pipefail
source tools/bench/gpu/job.sh
here=docs/benchmarks/gpu/2026-11-28-2xH200-session46
GPUS=${GPUS:-4}
ranks="2"; [ "$GPUS" = 4 ] && ranks="2 4"
job_begin a "${LIMIT:-560}"
for v in "" chunks8; do
  src=.gpu-bundle/gen/lamb${v:+@$v} dst=.gpu-bundle/gen/lamb@op${v:+${v#chunks}}
  rm -rf "$dst" && cp -r "$src" "$dst" && rm -rf "$dst/build" && python3 $here/proto_ownprefetch.py "$dst"
done
step patch $?
job_tests 210 GPU_TESTS_ONLY="lamb lamb@chunks8 adam@split5 lamb@op lamb@op8" GPU_TESTS_RANKS="$ranks" \
  MEMCHECK_P2="lamb lamb@op" GPU_TESTS_MEMCHECK_FIRST=1
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb$GPUS "$GPUS" lamb $(( $(left) - 10 )) \
  BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main|op=$here/cc-ownprefetch.sh" \
  BUILD_ARGS="--programs lamb,lamb_x_base,lamb_x_op" \
  BENCH_ARGS="--configs N=2^20,N=2^22,N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,coconetc_op,nccl_allreduce --interleave 10"
job_end
