#!/usr/bin/env bash
# Session 46, call e (2 GPUs): does `apply` enter early, by PDL, on the SMs `moments`' movers left?
# Stamped drivers (tools/bench/gpu/stamps.py: per kernel block 0's and the last block's stamps,
# and every block's earliest entry (3) and latest end (4)) of LAMB at 2^24, 2 ranks:
# .gpu-bundle/ab/basest (the sample: `moments` two blocks per SM at 2 ranks) and
# .gpu-bundle/ab/occ1st (`tune(moments, occupancy = 1)`: one block per SM, as at 4 ranks).
# Made before the call from 7503240's coconetc: `coconetc compile samples/lamb/lamb.cnet [--schedule
# S]` then `stamps.py GEN .gpu-bundle/ab/NAME`.  -> $OUT/e
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin e "${LIMIT:-150}"
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 300 --warmup 50 --reps 1 \
  --raw "$R/raw" -D N=16777216 -D t=10 .gpu-bundle/ab/basest .gpu-bundle/ab/occ1st > "$R/ab.txt" 2>&1
step "stamps" $?
cat "$R/ab.txt"
grep -h "^ST" "$R"/raw/*.txt
job_end
