#!/usr/bin/env bash
# Session 49, call p4 (4 H200): `apply`'s workers ask L2 for their units of chunk 0 (w and u)
# before the norms' chain, so that the loads run while the chain waits for the other ranks.
# (1) GPU tests of LAMB's movers builds at 4 ranks; (2) the bench 2^24 .. 2^28, rows taking turns:
# coconetc (this build) against 44fce72's compiler (coconetc_base) and NCCL's all-reduce;
# (3) stamps of this build at 2^24 (call 200 of 250).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; 44fce72's stripped coconetc as
# .gpu-bundle/ab/coconetc-base; build/coconetc compile samples/lamb/lamb.cnet -o /tmp/cur &&
# python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=330 bash docs/benchmarks/gpu/2026-11-28-4xH200-session49/job-p4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/p4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin p4 "${LIMIT:-330}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 110 GPU_TESTS_RANKS="4" GPU_TESTS_SETS="none" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 40 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-base" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
  --raw "$R/raw24" --env "" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
step "stamps 2^24" $?
cat "$R/ab.txt"
for f in "$R"/raw24/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done > "$R/stamps.txt"
cat "$R/stamps.txt"
job_end
