#!/usr/bin/env bash
# Session 50, call k4 (4 H200): `apply`'s pulls in tiles claimed by the movers and, once done with
# their chunks, the workers (coconet_rt::pullTiles; COCONET_CLAIMED_PULL = the tile's units per
# thread, COCONET_PULL_JOIN=0 keeps the workers out). (1) GPU tests of LAMB's movers builds at 4
# ranks with lamb@many and at 2 ranks, with COCONET_CLAIMED_PULL=1; (2) the bench 2^24 .. 2^28,
# rows taking turns: coconetc (fixed parts, the default), tiles of 1, 2 and 4 units with the
# workers joining (coconetc_t1, _t2, _t4), tiles of 1 unit by the movers alone (coconetc_t1m),
# NCCL's all-reduce; (3) stamps at 2^24 (call 200 of 250) with fixed parts and with tiles of 1.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; build/coconetc compile
# samples/lamb/lamb.cnet -o /tmp/cur && python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-k4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/k4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin k4 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 150 COCONET_CLAIMED_PULL=1 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 75 )) \
  BENCH_ENV_ROWS="t1=COCONET_CLAIMED_PULL=1|t2=COCONET_CLAIMED_PULL=2|t4=COCONET_CLAIMED_PULL=4|t1m=COCONET_CLAIMED_PULL=1 COCONET_PULL_JOIN=0" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_t1,coconetc_t2,coconetc_t4,coconetc_t1m,nccl_allreduce --interleave 10"
for e in fixed t1; do
  env=""; [ "$e" = t1 ] && env="COCONET_CLAIMED_PULL=1"
  timeout $(( $(left) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
    --raw "$R/raw24-$e" --env "$env" -D N=16777216 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
  step "stamps 2^24 $e" $?
  for f in "$R"/raw24-$e/*.txt; do echo "== $e $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt"
cat "$R/stamps.txt"
job_end
