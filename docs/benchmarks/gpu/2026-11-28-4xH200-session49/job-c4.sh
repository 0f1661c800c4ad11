#!/usr/bin/env bash
# Session 49, call c4 (4 H200): claimed pushes only where a round of `moments` holds 4 tiles per
# mover (coconet_rt::claimedPushes taking the round's elements; the flags' epoch wrap zeroing them).
# (1) GPU tests of LAMB's movers builds at 4 ranks with lamb@many (the tests' sizes now take the
# fixed parts) and again with the claims forced (COCONET_CLAIMED_PUSH=4); (2) the bench 2^24 ..
# 2^28, rows taking turns: coconetc (this build) against 63884ff's compiler (coconetc_base: claims at
# every size), this build with the claims forced (coconetc_claim4) and NCCL's all-reduce;
# (3) stamps of this build at 2^24 (call 200 of 250).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; 63884ff's stripped coconetc as
# .gpu-bundle/ab/coconetc-main; build/coconetc compile samples/lamb/lamb.cnet -o /tmp/cur &&
# python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=480 bash docs/benchmarks/gpu/2026-11-28-4xH200-session49/job-c4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/c4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c4 "${LIMIT:-480}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
only="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_tests 130 GPU_TESTS_RANKS="4" GPU_TESTS_SETS="lamb@many" GPU_TESTS_ONLY="$only"
mv "$R/gpu-tests" "$R/gpu-tests-default"; mv "$R/tests.log" "$R/tests-default.log"
job_tests 90 COCONET_CLAIMED_PUSH=4 GPU_TESTS_RANKS="4" GPU_TESTS_SETS="none" GPU_TESTS_ONLY="$only"
mv "$R/gpu-tests" "$R/gpu-tests-claim4"; mv "$R/tests.log" "$R/tests-claim4.log"
job_bench lamb4 4 lamb $(( $(left) - 40 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BENCH_ENV_ROWS="claim4=COCONET_CLAIMED_PUSH=4" BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,coconetc_claim4,nccl_allreduce --interleave 10"
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
  --raw "$R/raw24" --env "" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
step "stamps 2^24" $?
cat "$R/ab.txt"
for f in "$R"/raw24/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done > "$R/stamps.txt"
for t in default claim4; do echo "$t:"; grep -v ": ok" "$R/gpu-tests-$t/gpu-results.txt" | tail -n 4; done
job_end
