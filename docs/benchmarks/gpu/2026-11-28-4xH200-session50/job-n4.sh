#!/usr/bin/env bash
# Session 50, call n4 (4 H200): where `apply`'s claimed pulls pay. (1) The bench at 2^24, rows
# taking turns: coconetc (fixed parts), tiles of 1 and 4 units (coconetc_t1, _t4), NCCL's
# all-reduce; (2) the drivers (tools/bench/gpu/driver-ab.sh, 3 repetitions interleaved) at 2^24
# and 2^25 (4 rounds of 1 Mi and 2 Mi elements per slice) with fixed parts and tiles of 1 and 4;
# (3) stamps at 2^24 (call 200 of 250) with fixed parts and with tiles of 4.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; build/coconetc compile
# samples/lamb/lamb.cnet -o .gpu-bundle/ab/cur && python3 tools/bench/gpu/stamps.py
# .gpu-bundle/ab/cur .gpu-bundle/ab/curst
# Run: LIMIT=330 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-n4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/n4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n4 "${LIMIT:-330}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_bench lamb4 4 lamb 90 \
  BENCH_ENV_ROWS="t1=COCONET_CLAIMED_PULL=1|t4=COCONET_CLAIMED_PULL=4" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24 --rows coconetc,coconetc_t1,coconetc_t4,nccl_allreduce --interleave 10"
for n in 16777216 33554432; do
  timeout $(( ($(left) - 40) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 3 \
    --env ";COCONET_CLAIMED_PULL=1;COCONET_CLAIMED_PULL=4" -D N=$n -D t=10 .gpu-bundle/ab/cur >> "$R/ab.txt" 2>&1
  step "drivers N=$n" $?
done
for e in fixed t4; do
  env=""; [ "$e" = t4 ] && env="COCONET_CLAIMED_PULL=4"
  timeout $(( $(left) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
    --raw "$R/raw24-$e" --env "$env" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
  step "stamps 2^24 $e" $?
  for f in "$R"/raw24-$e/*.txt; do echo "== $e $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt"
job_end
