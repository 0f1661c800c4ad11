#!/usr/bin/env bash
# Session 43, call b (2 GPUs; 4 were not lent): session 42's job-next2 (compute-sanitizer memcheck
# at 2 ranks of the copy-engine allreduces after roundUp16, the C interface in one batch) with
# LAMB's taper builds, memcheck of lamb@taperends too; then the LAMB bench at 2 GPUs with call a's
# taper rows (2^24, 2^26, taking turns).
# Bundle: as job-a.sh. -> $OUT/s43b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s43b "${LIMIT:-560}"
job_tests 250 GPU_TESTS_ONLY="allreduces allreduces@ce allreduces@ce_rounds allreduces@nccl lamb lamb@taper lamb@taperends lamb@chunks8" \
  GPU_TESTS_RANKS="1 2" MEMCHECK_P2="allreduces@ce allreduces@ce_rounds allreduces@nccl lamb@taperends" GPU_TESTS_MEMCHECK_FIRST=1
rows='t2=tune(moments, taper = 2); tune(apply, taper = 2);'
rows+='|e2=tune(moments, taper = 2, taper_ends = last); tune(apply, taper = 2, taper_ends = first);'
rows+='|e3=tune(moments, taper = 3, taper_ends = last); tune(apply, taper = 3, taper_ends = first);'
rows+='|c8e3=tune(moments, chunks = 8, taper = 3, taper_ends = last); tune(apply, chunks = 8, taper = 3, taper_ends = first);'
job_bench lamb2 2 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb,lamb_x_t2,lamb_x_e2,lamb_x_e3,lamb_x_c8e3" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_t2,coconetc_e2,coconetc_e3,coconetc_c8e3,nccl_allreduce --interleave 10"
job_end
