#!/usr/bin/env bash
# Session 47, call l (RANKS=2 or 4 GPUs): proto_dynpush.py (LAMB's `moments` movers claiming tiles,
# one LSA barrier per rank and round). (1) GPU tests of gen/lamb@split16dp and gen/lamb@splitc8dp
# (lamb@split16 and lamb@chunks8 of the bundle patched, tiles of 2 units per thread) with lamb's
# vectors, and at 4 ranks the lamb@many set; (2) drivers (median of 300 calls, repetitions
# interleaved) of .gpu-bundle/ab/def (the sample as compiled) against ab/dp1, dp2, dp4 (tiles of 1,
# 2, 4 units per thread) at 2^24 and 2^26; (3) at 4 ranks, sm-transfer-micro `dyn` too.
# Made before the call from main 50eb01d's coconetc.  -> $OUT/l$RANKS
set -uo pipefail
source tools/bench/gpu/job.sh
RANKS=${RANKS:-2}
job_begin "l$RANKS" "${LIMIT:-300}"
sets=""; [ "$RANKS" = 4 ] && sets="lamb@many"
job_tests 120 GPU_TESTS_RANKS="$RANKS" GPU_TESTS_SETS="${sets:-none}" GPU_TESTS_ONLY="lamb@split16dp lamb@splitc8dp"
ab=.gpu-bundle/ab
for n in 16777216 67108864; do
  timeout $(( $(left) - 30 )) bash tools/bench/gpu/driver-ab.sh --ranks "$RANKS" --iters 300 --warmup 50 --reps 2 \
    -D N=$n -D t=10 $ab/def $ab/dp1 $ab/dp2 $ab/dp4 >> "$R/ab.txt" 2>&1
  step "ab N=$n" $?
done
cat "$R/ab.txt"
if [ "$RANKS" = 4 ]; then
  NC=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
  nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt > "$R/smt-build.txt" 2>&1
  LD_LIBRARY_PATH=$NC/lib timeout $(( $(left) - 3 )) /tmp/smt dyn 16 32 128 > "$R/dyn.txt" 2>&1
  step dyn $?
  cat "$R/dyn.txt"
fi
job_end
