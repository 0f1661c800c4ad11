#!/usr/bin/env bash
# session 26 job D (1 GPU): the one-rank kernels with real data (-D t=10): P and me known to the
# compiler in the one-rank form (gen/adam, gen/lamb) against the form before (@prev), Adam's
# one-rank kernel in 256-thread blocks (@t256), and the grid (COCONET_SOLO_UNITS); then the GPU
# tests of the one-rank kernels at 1 GPU (compute-sanitizer) and 2 GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
R=$OUT/s26d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c; } > $R/header.txt
G=.gpu-bundle/gen
for N in 268435456 16777216; do
  timeout 170 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 50 --warmup 10 --reps 2 \
    --env ";COCONET_SOLO_UNITS=1;COCONET_SOLO_UNITS=4" \
    -D N=$N -D t=10 $G/adam $G/adam@prev $G/adam@t256 $G/lamb $G/lamb@prev > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
left=$(( 575 - ($(date +%s) - T0) ))
timeout $((left - 10)) env GPU_TESTS_ONLY="adam lamb sgd norm_clip fold_local reduce_chains batched_slices scalar_chain" GPU_TESTS_RANKS="1 2" SANITIZE=1 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/ab-N*.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:\|sanitizer" $R/gpu-tests/gpu-results.txt | head -30
cd $OUT && tar czf s26d.tgz s26d && rm -rf s26d
