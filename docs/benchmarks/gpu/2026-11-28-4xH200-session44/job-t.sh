#!/usr/bin/env bash
# Session 44, call t (4 GPUs): the turn between LAMB's kernels. (1) The stamped drivers (stamps.py,
# now also every block's earliest entry (3) and latest end (4) per kernel) at 2^24, 4 ranks:
# .gpu-bundle/ab/base (samples/lamb/lamb.sched), .gpu-bundle/ab/ml2a2 (plus `moments`' last two
# chunks and `apply`'s first two tapered). (2) The LAMB bench at 2^24 and 2^26 with rows that shrink
# the turn's exposed computation: `moments`' last chunks tapered (ml2; in 6 rounds, c6ml3), with
# `apply`'s first (ml2a2), `apply`'s alone (a2). -> $OUT/t
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t "${LIMIT:-400}"
timeout 120 bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 2 \
  --raw "$R/raw-st" -D N=16777216 -D t=10 .gpu-bundle/ab/base .gpu-bundle/ab/ml2a2 > "$R/ab-st.txt" 2>&1
step "stamps" $?
cat "$R/ab-st.txt"
rows='ml2=tune(moments, taper = 2, taper_ends = last);'
rows+='|ml2a2=tune(moments, taper = 2, taper_ends = last); tune(apply, taper = 2, taper_ends = first);'
rows+='|c6ml3=tune(moments, chunks = 6, taper = 3, taper_ends = last);'
rows+='|a2=tune(apply, taper = 2, taper_ends = first);'
names="ml2 ml2a2 c6ml3 a2"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb$(for n in $names; do printf ',lamb_x_%s' $n; done)" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc$(for n in $names; do printf ',coconetc_%s' $n; done),nccl_allreduce --interleave 10"
job_end
