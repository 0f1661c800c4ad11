#!/usr/bin/env bash
# session 27 job 1 (4 GPUs): LAMB's sync between its kernels (protos p1, p2 by
# /tmp/jobs/proto_lamb_sync.py: checked at 2 and 4 GPUs, then driver A/B at 2^20..2^24 with t = 10),
# and the bench's LAMB rows with NCCL's halves alone (first run of nccl_reduce_scatter / nccl_all_gather).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s27a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 150 env GPU_TESTS_ONLY="lamb@p1 lamb@p2" GPU_TESTS_RANKS="2 4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail" $R/gpu-tests/gpu-results.txt | head -5 >> $R/summary.txt
for N in 1048576 4194304 16777216; do
  timeout 110 bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 3 \
    -D N=$N -D t=10 .gpu-bundle/gen/lamb .gpu-bundle/gen/lamb@p1 .gpu-bundle/gen/lamb@p2 > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
left=$(( 570 - ($(date +%s) - T0) ))
timeout $((left - 5)) env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=$((left - 15)) BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24,N=2^26 --rows coconetc,nccl_allreduce,nccl_reduce_scatter,nccl_all_gather' bash tools/bench/gpu/run.sh --gpus 4 --workloads lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/ab-N*.txt
grep -h "bench: \|queued" $R/bench/logs/bench-p*.log 2>/dev/null | head -40
tail -5 $R/bench.log
cd $OUT && tar czf s27a.tgz s27a && rm -rf s27a
