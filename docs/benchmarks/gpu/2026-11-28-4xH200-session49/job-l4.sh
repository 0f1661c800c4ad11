#!/usr/bin/env bash
# Session 49, call l4 (4 H200): `apply`'s workers compute chunk 0 together (each waits for every
# worker's chunk 0 before its chunk 1: call c4's stamps had the workers' chunk 0 ending 4.4-6.7 us
# apart, the early ones already on later chunks). (1) GPU tests of LAMB's movers builds at 4 ranks
# with lamb@many and at 2 ranks; (2) the bench 2^24 .. 2^28, rows taking turns: coconetc (this
# build) against cebefb0's compiler (coconetc_base) and a compiler whose workers wait so after every
# chunk (coconetc_all), and NCCL's all-reduce; (3) stamps of this build at 2^24 (call 200 of 250).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; stripped compilers in .gpu-bundle/ab/
# (coconetc-base: cebefb0; coconetc-all: this tree with `roleWait(roleDone(roles, r), ...)` after
# every workerDone); build/coconetc compile samples/lamb/lamb.cnet -o /tmp/cur &&
# python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-4xH200-session49/job-l4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/l4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin l4 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 150 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 40 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-base|all=.gpu-bundle/ab/coconetc-all" \
  BUILD_ARGS="--programs lamb,lamb_x_base,lamb_x_all" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,coconetc_all,nccl_allreduce --interleave 10"
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
  --raw "$R/raw24" --env "" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
step "stamps 2^24" $?
cat "$R/ab.txt"
for f in "$R"/raw24/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done > "$R/stamps.txt"
cat "$R/stamps.txt"
job_end
