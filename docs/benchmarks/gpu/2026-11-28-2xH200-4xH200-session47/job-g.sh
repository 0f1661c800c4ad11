#!/usr/bin/env bash
# Session 47, call g (2 GPUs): why the generated LAMB's `apply` enters no SM early by PDL when the
# micro's secondary does (session 46, call e). (1) tools/bench/gpu/pdl-micro.cu brought closer to
# the generated pair: the primary one block per SM by its registers (regs), the secondary 2 per
# SM, a 1-KiB parameter (bigParam), the primary's blocks storing into GPU 1 before leaving (peer).
# (2) stamped LAMB drivers at 2^24, 2 ranks, `tune(moments, occupancy = 1)` (tools/bench/gpu/stamps.py;
# made before the call from the session's coconetc into .gpu-bundle/ab/): occ1st as compiled,
# occ1cv with both kernels' shared-memory carveout set to the most shared memory, occ1g1 with
# `apply` on one block per SM, and occ1st again with COCONET_PDL=0 (ordinary launches).  -> $OUT/g
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin g "${LIMIT:-200}"
nvcc -O3 -std=c++17 -arch=sm_90a tools/bench/gpu/pdl-micro.cu -o /tmp/pdl-micro > "$R/pdl-build.txt" 2>&1
step "pdl build" $?
for a in "1 0" "0 0 1" "0 1 1" "1 0 0 1" "1 0 0 0 1" "0 0 1 0 1" "0 1 1 1 1"; do
  # shellcheck disable=SC2086
  timeout 30 /tmp/pdl-micro 32 10 60 50 $a >> "$R/pdl-micro.txt" 2>&1
  step "pdl $a" $?
done
cat "$R/pdl-micro.txt"
ab=.gpu-bundle/ab
timeout $(( $(left) - 40 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 300 --warmup 50 --reps 1 \
  --raw "$R/raw" -D N=16777216 -D t=10 $ab/occ1st $ab/occ1cv $ab/occ1g1 > "$R/ab.txt" 2>&1
step "stamps" $?
timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 2 --iters 300 --warmup 50 --reps 1 \
  --env "COCONET_PDL=0" --raw "$R/raw-nopdl" -D N=16777216 -D t=10 $ab/occ1st >> "$R/ab.txt" 2>&1
step "stamps nopdl" $?
cat "$R/ab.txt"
for f in "$R"/raw/*.txt "$R"/raw-nopdl/*.txt; do echo "== $f"; grep -h "^ST" "$f"; done
job_end
