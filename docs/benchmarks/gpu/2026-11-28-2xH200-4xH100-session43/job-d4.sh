#!/usr/bin/env bash
# Session 43, second LAMB call on 4 GPUs: is `moments`' slowdown with any taper (call a4: t2, e2,
# e3, e5, m3 all ~25 us slower at 2^24) its code or its chunks? m1 tapers `moments`' last chunk
# once (chunks 2, 2, 2, 1 of 7 in 4 rounds: nearly alike); a3 again (`apply`'s first chunks).
# Bundle: as job-a4.sh. -> $OUT/s43d4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s43d4 "${LIMIT:-300}"
rows='m1=tune(moments, taper = 1, taper_ends = last);|a3=tune(apply, taper = 3, taper_ends = first);'
job_bench lamb4b 4 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb,lamb_x_m1,lamb_x_a3" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_m1,coconetc_a3,nccl_allreduce --interleave 10"
job_end
