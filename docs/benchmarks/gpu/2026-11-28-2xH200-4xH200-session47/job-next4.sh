#!/usr/bin/env bash
# Prepared in session 47 for the next (not yet run): the claimed pushes (c3ebc4d) on 4 H200.
# (1) the LAMB bench at 2^24, 2^26, 2^28, rows taking turns, every row checked: coconetc (main)
# against coconetc_base (50eb01d, before the claimed pushes) and NCCL's all-reduce; (2) drivers at
# 4 ranks, 2^24 and 2^28, of the sample as compiled with tiles of 4 (ab/def), 2 (ab/t2) and 1
# (ab/t1) units per thread, and ab/def again with COCONET_CLAIMED_PUSH=0 (the fixed parts).
# Before the call, on the build machine:
#   GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh
#   (50eb01d's coconetc: git worktree or stash, ninja -C build coconetc, then)
#   mkdir -p .gpu-bundle/ab && strip -o .gpu-bundle/ab/coconetc-main <50eb01d's build/coconetc>
#   build/coconetc compile samples/lamb/lamb.cnet -o .gpu-bundle/ab/def
#   for t in 1 2; do cp -r .gpu-bundle/ab/def .gpu-bundle/ab/t$t;
#     sed -i "s/kPushTileUnits = 4;/kPushTileUnits = $t;/" .gpu-bundle/ab/t$t/coconet_device.cuh; done
# Run: LIMIT=450 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session47/job-next4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/next4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin next4 "${LIMIT:-450}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb 200 BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
ab=.gpu-bundle/ab
for n in 16777216 268435456; do
  timeout $(( $(left) - 60 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 2 \
    -D N=$n -D t=10 $ab/def $ab/t2 $ab/t1 >> "$R/ab.txt" 2>&1
  step "ab N=$n" $?
done
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 2 \
  --env "COCONET_CLAIMED_PUSH=0" -D N=16777216 -D t=10 $ab/def >> "$R/ab.txt" 2>&1
step "ab fixed parts" $?
cat "$R/ab.txt"
job_end
