#!/usr/bin/env bash
# Session 49, call j4 (4 H200): `apply`'s movers join its chunk 0 (every block computes it, with
# one unit per thread at 2^24 where the workers alone left 24 of 232 blocks a second unit), and
# `apply`'s rounds now that its pulls wait for no barrier. (1) GPU tests of LAMB's movers builds at
# 4 ranks with lamb@many and at 2 ranks; (2) the bench 2^24 .. 2^28, rows taking turns: coconetc
# (this build) against 748399a's compiler (coconetc_base), this build's `apply` in 8 rounds
# (coconetc_a8), in 16 (coconetc_a16), its first chunks tapered (coconetc_tf: taper 2 at the first
# end), and NCCL's all-reduce; (3) stamps of this build at 2^24 (call 200 of 250).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; 748399a's stripped coconetc as
# .gpu-bundle/ab/coconetc-base; build/coconetc compile samples/lamb/lamb.cnet -o /tmp/cur &&
# python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-4xH200-session49/job-j4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/j4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin j4 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 150 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 35 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-base" \
  BENCH_SCHED_ROWS="a8=tune(apply, chunks = 8);|a16=tune(apply, chunks = 16);|tf=tune(apply, taper = 2, taper_ends = first);" \
  BUILD_ARGS="--programs lamb,lamb_x_base,lamb_x_a8,lamb_x_a16,lamb_x_tf" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,coconetc_a8,coconetc_a16,coconetc_tf,nccl_allreduce --interleave 10"
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
  --raw "$R/raw24" --env "" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
step "stamps 2^24" $?
cat "$R/ab.txt"
for f in "$R"/raw24/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done > "$R/stamps.txt"
cat "$R/stamps.txt"
job_end
