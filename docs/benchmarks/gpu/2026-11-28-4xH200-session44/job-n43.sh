#!/usr/bin/env bash
# Prepared in session 43 for the next session (not yet run), on 4 GPUs (H200 for the targets):
# GPU tests of the tapered builds after their chunk edges became a table each block fills once
# (1299615; not yet checked on GPUs: the 4-GPU machine and the budget were gone), then the LAMB
# bench at 2^24, 2^26, 2^28 with `moments`' first chunks tapered (compute-bound, its workers set
# the pace: call e at 2 GPUs had mf2 1.3% faster by the minima), alone and with `apply`'s first.
# Bundle first: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh. -> $OUT/n43
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin n43 "${LIMIT:-560}"
job_tests 150 GPU_TESTS_ONLY="lamb lamb@taper lamb@taperends" GPU_TESTS_RANKS="2 4"
rows='mf2=tune(moments, taper = 2, taper_ends = first);'
rows+='|mf3=tune(moments, taper = 3, taper_ends = first);'
rows+='|a3=tune(apply, taper = 3, taper_ends = first);'
rows+='|mf2a3=tune(moments, taper = 2, taper_ends = first); tune(apply, taper = 3, taper_ends = first);'
names="mf2 mf3 a3 mf2a3"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb$(for n in $names; do printf ',lamb_x_%s' $n; done)" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc$(for n in $names; do printf ',coconetc_%s' $n; done),nccl_allreduce --interleave 10"
job_end
