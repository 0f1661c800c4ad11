#!/usr/bin/env bash
# session 26 job B (4 GPUs): after kSolo (9e49ff1..613d7d3) the multi-rank kernels at 4 GPUs
# (bench: Adam and LAMB against the bare all-reduce, LAMB's split row beside); one-rank grid
# and register A/B on GPU 0 (driver, numeric sizes); GPU tests at 2 and 4 GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s26b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c; } > $R/header.txt
timeout 230 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=220 BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24,N=2^28 --rows coconetc,coconetc_split,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus 4 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for N in 268435456 16777216; do
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 50 --warmup 10 --reps 2 \
    --env ";COCONET_SOLO_UNITS=1;COCONET_SOLO_UNITS=4" \
    -D N=$N .gpu-bundle/gen/adam .gpu-bundle/gen/adam@mb3 .gpu-bundle/gen/adam@t256 .gpu-bundle/gen/lamb > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
left=$(( 575 - ($(date +%s) - T0) ))
timeout $((left - 10)) env GPU_TESTS_ONLY="adam lamb sgd norm_clip fold_local reduce_chains batched_slices scalar_chain adam@mb3 adam@t256" GPU_TESTS_RANKS="1 2 4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/ab-N*.txt
grep -h "bench: \|queued" $R/bench/logs/bench-p*.log 2>/dev/null | head -60
grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:" $R/gpu-tests/gpu-results.txt | head -20
cd $OUT && tar czf s26b.tgz s26b && rm -rf s26b
