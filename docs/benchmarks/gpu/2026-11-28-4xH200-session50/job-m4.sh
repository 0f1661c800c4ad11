#!/usr/bin/env bash
# Session 50, call m4 (4 H200): `apply`'s movers pulling in claimed tiles (coconet_rt::pullTiles,
# COCONET_CLAIMED_PULL = the tile's units per thread; the workers no longer join, after call k4).
# (1) GPU tests of LAMB's movers builds at 4 ranks with lamb@many and at 2 ranks, with
# COCONET_CLAIMED_PULL=2; (2) the bench 2^24 .. 2^28 at 4 GPUs, rows taking turns: coconetc (fixed
# parts, the default), tiles of 1, 2 and 4 units (coconetc_t1, _t2, _t4), NCCL's all-reduce; (3) the
# same at 2 GPUs with tiles of 1 and 2 (session 49's changes had not been benched at 2 GPUs).
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh.
# Run: LIMIT=460 bash docs/benchmarks/gpu/2026-11-28-4xH200-session50/job-m4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/m4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m4 "${LIMIT:-460}"
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
job_tests 170 COCONET_CLAIMED_PULL=2 GPU_TESTS_RANKS="4 2" GPU_TESTS_SETS="lamb@many" \
  GPU_TESTS_ONLY="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_bench lamb4 4 lamb $(( ($(left) - 10) * 11 / 20 )) \
  BENCH_ENV_ROWS="t1=COCONET_CLAIMED_PULL=1|t2=COCONET_CLAIMED_PULL=2|t4=COCONET_CLAIMED_PULL=4" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_t1,coconetc_t2,coconetc_t4,nccl_allreduce --interleave 10"
job_bench lamb2 2 lamb $(( $(left) - 10 )) \
  BENCH_ENV_ROWS="t1=COCONET_CLAIMED_PULL=1|t2=COCONET_CLAIMED_PULL=2" \
  BUILD_ARGS="--programs lamb" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_t1,coconetc_t2,nccl_allreduce --interleave 10"
job_end
