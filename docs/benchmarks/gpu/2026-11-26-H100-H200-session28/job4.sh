#!/usr/bin/env bash
# session 28 job 4 (4 GPUs): blockReduceEach at 4 GPUs: GPU tests of lamb, scalar_chain,
# norm_clip, fold_local at 4 GPUs; the LAMB bench (coconetc and the bare all-reduce, 2^20..2^26)
# twice while time is left.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-380}
R=$OUT/s28d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 120 env GPU_TESTS_ONLY="lamb scalar_chain norm_clip fold_local" GPU_TESTS_RANKS="4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail" $R/gpu-tests/gpu-results.txt | head -5 >> $R/summary.txt
for run in 1 2; do
  left=$(( LIMIT - ($(date +%s) - T0) ))
  [ $left -gt 90 ] || break
  timeout $((left - 5)) env OUT=$R/bench$run WORK=/tmp/bw$run BENCH_TIMEOUT=$((left - 15)) BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24,N=2^26 --rows coconetc,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus 4 --workloads lamb > $R/bench$run.log 2>&1
  echo "bench $run rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cat $R/summary.txt
for run in 1 2; do grep -h "bench: \|gpu_us\|GPU" $R/bench$run/logs/bench-p*.log 2>/dev/null | head -20; tail -3 $R/bench$run.log 2>/dev/null; done
cd $OUT && tar czf s28d.tgz s28d && rm -rf s28d
