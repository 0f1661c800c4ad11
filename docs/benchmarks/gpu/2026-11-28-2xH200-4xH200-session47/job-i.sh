#!/usr/bin/env bash
# Session 47, call i (4 GPUs): where LAMB's step goes at 2^26 (and 2^24) on 4 ranks, main's code:
# the stamped drivers (tools/bench/gpu/stamps.py: block 0's and the last block's stamps per round,
# every block's earliest entry and latest end; call 200 of 300) of the sample as compiled
# (.gpu-bundle/ab/defst: `stamps.py` over `coconetc compile samples/lamb/lamb.cnet` of main 50eb01d's
# compiler, made before the call).  -> $OUT/i
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin i "${LIMIT:-150}"
for n in 67108864 16777216; do
  timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 1 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/defst >> "$R/ab.txt" 2>&1
  step "stamps N=$n" $?
done
cat "$R/ab.txt"
for f in "$R"/raw-*/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done
job_end
