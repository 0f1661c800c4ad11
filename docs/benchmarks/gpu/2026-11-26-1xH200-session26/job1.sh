#!/usr/bin/env bash
# session 26 job A (1 GPU): the one-rank kernels on the resident grid (613d7d3 + COCONET_SOLO_UNITS):
# optim-micro; driver A/B of the one-rank grid (resident, K units per thread); bench at P = 1;
# GPU tests at P = 1 with compute-sanitizer (memcheck, racecheck).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s26a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c; } > $R/header.txt
nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/optim-micro.cu -o /tmp/optim-micro > $R/micro-build.txt 2>&1
/tmp/optim-micro 24 26 28 > $R/optim-micro.txt 2>&1
echo "micro rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for N in 2^28 2^24; do
  timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 50 --warmup 10 --reps 2 \
    --env ";COCONET_SOLO_UNITS=1;COCONET_SOLO_UNITS=2;COCONET_SOLO_UNITS=4;COCONET_SOLO_UNITS=16" \
    -D N=$N .gpu-bundle/gen/adam .gpu-bundle/gen/lamb > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
timeout 150 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=140 BENCH_ARGS='--configs N=2^24,N=2^26,N=2^28 --rows eager,torch.compile,coconetc' bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
left=$(( 570 - ($(date +%s) - T0) ))
timeout $((left - 10)) env GPU_TESTS_ONLY="adam lamb sgd norm_clip fold_local reduce_chains batched_slices scalar_chain" GPU_TESTS_RANKS="1" SANITIZE=1 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/optim-micro.txt | tail -40; cat $R/ab-N*.txt
grep -h "queued\|config\|N=" $R/bench/logs/bench-p*.log 2>/dev/null | head -40
grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:\|sanitizer\|ERROR SUMMARY" $R/gpu-tests/gpu-results.txt | head -30
cd $OUT && tar czf s26a.tgz s26a && rm -rf s26a
