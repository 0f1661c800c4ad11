#!/usr/bin/env bash
# Prepared in session 48 for the next (not yet run), on branch tail-workers-publish: `apply`'s
# workers publish each chunk (the last worker of a chunk: system fence, fetch-max of the count into
# every rank's flags) and the movers pull with no synchronization between rounds once the counts
# they read cover them (needChunk). (1) GPU tests of LAMB's movers builds at 4 ranks with lamb@many
# and at 2 ranks; (2) the bench at 2^24 .. 2^28, rows taking turns: coconetc (the branch) against
# main's compiler (coconetc_base: block 0 publishing, a6c17be), the branch's build with a barrier
# per pull round (coconetc_barriers: COCONET_TAIL_FLAGS=0) and with the movers' fixed parts
# (coconetc_fixed: COCONET_CLAIMED_PUSH=0; BENCH_ENV_ROWS), and NCCL's all-reduce.
# Bundle (on the branch, coconetc built there): GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh;
# then main's stripped coconetc as .gpu-bundle/ab/coconetc-main (git stash / checkout main, ninja
# -C build coconetc, strip -o, back to the branch and rebuild).
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-28-4xH200-session49/job-w4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/w4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin w4 "${LIMIT:-420}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 220 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_COMPILER_ROWS="base=.gpu-bundle/ab/coconetc-main" \
  BENCH_ENV_ROWS="barriers=COCONET_TAIL_FLAGS=0|fixed=COCONET_CLAIMED_PUSH=0" BUILD_ARGS="--programs lamb,lamb_x_base" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_base,coconetc_barriers,coconetc_fixed,nccl_allreduce --interleave 10"
job_end
