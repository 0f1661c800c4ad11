#!/usr/bin/env bash
# Session 44, call st (4 GPUs): where LAMB's step goes at 2^24 and 2^26 with its kernels' blocks in
# roles: the drivers (no PyTorch) of %globaltimer-stamped builds (tools/bench/gpu/stamps.py, now
# stamping the movers' and workers' own loops: block 0 a mover, the last block a worker), call 200
# printed. Builds: .gpu-bundle/ab/NAME = stamps.py over `coconetc compile samples/lamb/lamb.cnet`
# with samples/lamb/lamb.sched plus: base (nothing), mm16 / mm48 / mm64 (tune(moments, movers = K)),
# am32 / am96 (tune(apply, movers = K)). -> $OUT/st
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin st "${LIMIT:-300}"
for n in 16777216 67108864; do
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 2 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/base .gpu-bundle/ab/mm16 .gpu-bundle/ab/mm48 \
    .gpu-bundle/ab/mm64 .gpu-bundle/ab/am32 .gpu-bundle/ab/am96 > "$R/ab-$n.txt" 2>&1
  step "ab N=$n" $?
  cat "$R/ab-$n.txt"
done
job_end
