#!/usr/bin/env bash
# Not run yet (session 58): LAMB at 2^22 took 1.24x the all-reduce by GPU time in call r2
# (72.8 vs 58.5 us; session 39, sm_75, before sessions 44-50's changes: 1.15x). Which change: 4 H200,
# LAMB 2^20 .. 2^24, rows taking turns, the sample's build with its run-time knobs one at a time
# (BENCH_ENV_ROWS: claimed pushes off, claimed pulls off, pulls by a barrier a round instead of
# flags), then the same bench with programmatic dependent launch off for the whole run (COCONET_PDL
# is read once a process, so not a row knob).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=400 bash docs/benchmarks/gpu/2026-11-29-4xH200-session58/job-next-l.sh (kind nvidia-h200-x4,
#   carry .gpu-bundle) -> $OUT/nl.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nl "${LIMIT:-400}"
job_bench lamb-knobs 4 lamb $(( $(left) * 60 / 100 )) BUILD_ARGS="--programs lamb" \
  BENCH_ENV_ROWS="pushfixed=COCONET_CLAIMED_PUSH=0|pullfixed=COCONET_CLAIMED_PULL=0|flagsoff=COCONET_TAIL_FLAGS=0" \
  BENCH_ARGS="--configs N=2^20,N=2^22,N=2^24 --rows coconetc,coconetc_pushfixed,coconetc_pullfixed,coconetc_flagsoff,nccl_allreduce --interleave 10"
job_bench lamb-nopdl 4 lamb $(( $(left) - 10 )) BUILD_ARGS="--programs lamb" COCONET_PDL=0 \
  BENCH_ARGS="--configs N=2^20,N=2^22,N=2^24 --rows coconetc,nccl_allreduce --interleave 10"
job_end
