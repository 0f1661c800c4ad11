#!/usr/bin/env bash
# Not run yet (session 54): for a machine of 4 GPUs (kind nvidia-h200-x4). Does launching every
# block that fits (COCONET_DEV_BLOCKS=512, ac8a2bd's barrierBlocks) speed up the device groups
# without roles on 2 and 4 ranks, where the same blocks push and pull over NVLink? At one rank
# (this folder, m2) it gained LAMB 2^22 4-5 us and Adam 0-3. Drivers, the default 128-block cap
# against 512, three reps taking turns, 200 timed calls after 50: Adam and LAMB (2^20..2^26; LAMB
# in roles from 2^24 at 4 ranks, where the cap does not apply) and SGD.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-next-d.sh (carry .gpu-bundle) -> $OUT/d.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin d "${LIMIT:-560}"
G=.gpu-bundle/gen
for n in 1048576 4194304 16777216 67108864; do
  timeout 120 bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 200 --warmup 50 --reps 3 \
    --env ";COCONET_DEV_BLOCKS=512" -D N=$n -D t=10 $G/adam $G/lamb >> "$R/ab.txt" 2>&1
  step "adam lamb N=$n" $?
  timeout 60 bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 200 --warmup 50 --reps 3 \
    --env ";COCONET_DEV_BLOCKS=512" -D N=$n $G/sgd >> "$R/ab.txt" 2>&1
  step "sgd N=$n" $?
done
cat "$R/ab.txt"
job_end
