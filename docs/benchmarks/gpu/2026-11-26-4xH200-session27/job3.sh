#!/usr/bin/env bash
# session 27 job 3 (4 GPUs): the exchange spread over threads and moments' last barrier dropped
# (working tree after 77ebafa): GPU tests of the programs whose kernels changed at 1, 2, 4 GPUs;
# the bench's LAMB and Adam rows with NCCL's halves; driver A/B against the HEAD build of lamb
# (ab/lamb-old); stamps of the new lamb (ab/lamb-st, tools: jobs/proto_stamps.py).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s27c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 200 env GPU_TESTS_ONLY="lamb scalar_chain norm_clip fold_local" GPU_TESTS_RANKS="1 2 4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail\|checks:" $R/gpu-tests/gpu-results.txt | head -8 >> $R/summary.txt
timeout 150 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=140 BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24,N=2^26 --rows coconetc,nccl_allreduce,nccl_reduce_scatter,nccl_all_gather' bash tools/bench/gpu/run.sh --gpus 4 --workloads lamb,adam > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for N in 1048576 4194304 16777216; do
  timeout 60 bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 3 \
    -D N=$N -D t=10 .gpu-bundle/ab/lamb-old .gpu-bundle/gen/lamb > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
for N in 1048576 4194304; do
  timeout 40 bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 2 --raw $R/st-N$N \
    -D N=$N -D t=10 .gpu-bundle/ab/lamb-st > $R/st-N$N.txt 2>&1
  echo "stamps N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cat $R/summary.txt; cat $R/ab-N*.txt
grep -h "bench: \|queued" $R/bench/logs/bench-p*.log 2>/dev/null | grep -v "check" | head -60
cd $OUT && tar czf s27c.tgz s27c && rm -rf s27c
