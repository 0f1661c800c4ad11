#!/usr/bin/env bash
# Session 44, call j (4 GPUs): prototype "movers join" (proto_join.py): in LAMB's `moments` with
# roles split, the movers compute their parts of the last J chunks (divided over the whole grid)
# once they have pushed every chunk. (1) GPU tests with the bundle's gen/lamb patched J = 2,
# gen/lamb@chunks4 J = 1, gen/lamb@chunks8 J = 3 (`python3 proto_join.py DIR J`), at 2 and 4
# ranks. (2) The drivers of stamped builds .gpu-bundle/ab/jJ (J = 0: the sample as committed;
# proto_join.py then stamps.py) at 2^24, 2^26, 2^28, 4 ranks. -> $OUT/j
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin j "${LIMIT:-450}"
job_tests 150 GPU_TESTS_ONLY="lamb lamb@chunks4 lamb@chunks8" GPU_TESTS_RANKS="2 4"
for n in 16777216 67108864 268435456; do
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 2 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/j0 .gpu-bundle/ab/j1 .gpu-bundle/ab/j2 .gpu-bundle/ab/j3 \
    > "$R/ab-$n.txt" 2>&1
  step "ab N=$n" $?
  cat "$R/ab-$n.txt"
done
job_end
