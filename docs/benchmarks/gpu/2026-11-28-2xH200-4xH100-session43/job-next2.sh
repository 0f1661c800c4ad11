#!/usr/bin/env bash
# Prepared in session 43 for the next session (not yet run), on 2 GPUs, where no 4-GPU machine is
# lent: GPU tests of the tapered builds in their table form (1299615; not yet run on GPUs) at 1
# and 2 ranks with memcheck at 2, then the LAMB bench at 2 GPUs with job-next4.sh's rows (2^24,
# 2^26), which call e's drivers suggest (`moments`' first chunks tapered: 1.3% by the minima).
# Bundle first: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh. -> $OUT/n43b
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n43b "${LIMIT:-560}"
job_tests 200 GPU_TESTS_ONLY="lamb lamb@taper*" GPU_TESTS_RANKS="1 2" MEMCHECK_P2="lamb@taper lamb@taperends" GPU_TESTS_MEMCHECK_FIRST=1
rows='mf2=tune(moments, taper = 2, taper_ends = first);'
rows+='|mf3=tune(moments, taper = 3, taper_ends = first);'
rows+='|a3=tune(apply, taper = 3, taper_ends = first);'
rows+='|mf2a3=tune(moments, taper = 2, taper_ends = first); tune(apply, taper = 3, taper_ends = first);'
names="mf2 mf3 a3 mf2a3"
job_bench lamb2 2 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb$(for n in $names; do printf ',lamb_x_%s' $n; done)" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc$(for n in $names; do printf ',coconetc_%s' $n; done),nccl_allreduce --interleave 10"
job_end
