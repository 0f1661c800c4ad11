#!/usr/bin/env bash
# Session 47, call m (4 GPUs): proto_dynpush.py at 4 ranks, where `moments`' movers set its pace.
# (1) GPU tests at 2 and 4 ranks of gen/lamb@split16dp, @splitc8dp (block tiles of 2 units per
# thread) and @split16dpw, @splitc8dpw (warp tiles of 1 unit per lane), lamb's vectors and at 4
# ranks the lamb@many set; (2) drivers (median of 300 calls, repetitions interleaved) of
# .gpu-bundle/ab/def (the sample as compiled) against ab/dp2, dp4 (block tiles of 2, 4 units per
# thread) and dpw1 (warp tiles of 1 unit per lane) at 2^24 and 2^26; (3)
# sm-transfer-micro `dyn` on 4 GPUs. Made before the call from main 50eb01d's coconetc.  -> $OUT/m
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m "${LIMIT:-300}"
job_tests 110 GPU_TESTS_RANKS="2 4" GPU_TESTS_SETS="lamb@many" GPU_TESTS_ONLY="lamb@split16dp lamb@splitc8dp lamb@split16dpw lamb@splitc8dpw"
ab=.gpu-bundle/ab
for n in 67108864 16777216; do
  timeout $(( $(left) - 25 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 2 \
    -D N=$n -D t=10 $ab/def $ab/dp2 $ab/dp4 $ab/dpw1 >> "$R/ab.txt" 2>&1
  step "ab N=$n" $?
done
cat "$R/ab.txt"
NC=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt > "$R/smt-build.txt" 2>&1
LD_LIBRARY_PATH=$NC/lib timeout $(( $(left) - 3 )) /tmp/smt dyn 16 32 128 > "$R/dyn.txt" 2>&1
step dyn $?
cat "$R/dyn.txt"
job_end
