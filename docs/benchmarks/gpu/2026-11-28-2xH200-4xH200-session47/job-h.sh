#!/usr/bin/env bash
# Session 47, call h (2 GPUs): LAMB's `moments` workers claiming tiles (proto_tiles.py) against the
# sample's build, by the drivers (median of 300 calls, 3 repetitions interleaved), 2 ranks, 2^24
# and 2^26: .gpu-bundle/ab/def (the sample as compiled: two blocks per SM at 2 ranks), t4k / t8k
# (tiles of 4096 / 8192 elements), occ1 (`tune(moments, occupancy = 1)`, as at 4 ranks), occ1t4k.
# Made before the call from the session's coconetc.  -> $OUT/h
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin h "${LIMIT:-300}"
ab=.gpu-bundle/ab
for n in 16777216 67108864; do
  timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 300 --warmup 50 --reps 3 \
    -D N=$n -D t=10 $ab/def $ab/t4k $ab/t8k $ab/occ1 $ab/occ1t4k >> "$R/ab.txt" 2>&1
  step "ab N=$n" $?
done
cat "$R/ab.txt"
job_end
