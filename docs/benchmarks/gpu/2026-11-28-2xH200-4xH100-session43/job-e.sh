#!/usr/bin/env bash
# Session 43, call e (2 GPUs): LAMB's drivers (no PyTorch) at 2 ranks, `moments` at one block per
# SM in every build (tune(moments, occupancy = 1): the same instantiation, 116-120 registers, no
# spills), its chunk edges of a tapered kernel from a table the block fills once (this call's
# working tree): base (chunks alike), m1 / m3 (taper 1 / 3 at the last chunks), mf2 (taper 2 at
# the first), t2 (taper 2 at both ends). Builds: .gpu-bundle/ab/NAME (coconetc compile of
# samples/lamb with .gpu-bundle/ab/NAME.sched). -> $OUT/s43e
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s43e "${LIMIT:-300}"
for n in 16777216 67108864; do
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 200 --warmup 30 --reps 2 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/base .gpu-bundle/ab/m1 .gpu-bundle/ab/m3 .gpu-bundle/ab/mf2 \
    .gpu-bundle/ab/t2 > "$R/ab-$n.txt" 2>&1
  step "ab N=$n" $?
  cat "$R/ab-$n.txt"
done
job_end
