#!/usr/bin/env bash
# Session 48, call a2 (2 H200): why the claimed pushes (c3ebc4d) lose on 2 GPUs (call next2: 710.3
# vs 693.6 us GPU time at 2^26, 2,576 vs 2,490 at 2^28 against the fixed parts). Drivers at 2
# ranks, 2^26 and 2^28, of the sample as compiled by main 6f4a202 (ab/def), with the next claim's
# answer kept in a register over the tile (ab/ov: thread 0 no longer waits for the atomic before
# the tile), ov with tiles of 8 units (ab/ov-t8), and def with COCONET_CLAIMED_PUSH=0 (the fixed
# parts); then the bench at 2^24..2^28, rows taking turns: coconetc (ov) against 50eb01d's
# compiler (fixed parts).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh (at ov); ab/coconetc-main = 50eb01d's
# stripped coconetc; ab/def by 6f4a202's coconetc; ab/ov by ov's; ab/ov-tK copies of ov with
# `sed -i "s/kPushTileUnits = 4;/kPushTileUnits = K;/" coconet_device.cuh`.
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/job-a2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/a2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a2 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ab=.gpu-bundle/ab
for n in 67108864 268435456; do
  timeout $(( $(left) - 200 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 200 --warmup 50 --reps 2 \
    --env ";COCONET_CLAIMED_PUSH=0" -D N=$n -D t=10 $ab/def $ab/ov $ab/ov-t8 >> "$R/ab.txt" 2>&1
  step "ab N=$n" $?
done
cat "$R/ab.txt"
job_bench lamb2 2 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
