#!/usr/bin/env bash
# Session 48, call a4 (4 H200): LAMB at 2^24 (1.28x the all-reduce; target 1.15x) and the claimed
# pushes at 2^28. (1) Drivers at 4 ranks, 2^24: main's build (cur), 6f4a202's build (def: tiles
# of 4, the next claim stored before the tile), the rounds 8/4, 4/8, 8/8 for moments/apply (m8a4,
# m4a8, m8a8) and the bundle's lamb@taper and lamb@taperends (tapered rounds, now with claimed
# pushes), cur stamped (curst: tools/bench/gpu/stamps.py, call 200; raw outputs in raw24/); then cur with tiles of 4 (its default), 2 and 1 units and the fixed parts
# (COCONET_CLAIMED_PUSH=2, 1, 0); (2) at 2^28 cur with tiles of 4, 2, 1 and the fixed parts; (3) the bench at 2^24 .. 2^28,
# rows taking turns, every row checked: coconetc (main) against 50eb01d's compiler (fixed parts)
# and NCCL.
# Bundle: bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/prep-a4.sh.
# Run: LIMIT=540 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/job-a4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/a4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a4 "${LIMIT:-540}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ab=.gpu-bundle/ab
ab4() {  # N SECONDS_LEFT_AFTER ARGS...
  local n=$1 keep=$2; shift 2
  timeout $(( $(left) - keep )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 2 \
    -D N=$n -D t=10 "$@" >> "$R/ab.txt" 2>&1
  step "ab N=$n $*" $?
}
units=";COCONET_CLAIMED_PUSH=2;COCONET_CLAIMED_PUSH=1;COCONET_CLAIMED_PUSH=0"
ab4 16777216 340 --raw "$R/raw24" $ab/curst $ab/cur $ab/def $ab/m8a4 $ab/m4a8 $ab/m8a8 .gpu-bundle/gen/lamb@taper .gpu-bundle/gen/lamb@taperends
ab4 16777216 280 --env "$units" $ab/cur
ab4 268435456 200 --env "$units" $ab/cur
cat "$R/ab.txt"
for f in "$R"/raw24/run-curst-*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done > "$R/stamps24.txt"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,nccl_allreduce --interleave 10"
job_end
