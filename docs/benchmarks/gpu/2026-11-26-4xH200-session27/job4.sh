#!/usr/bin/env bash
# session 27 job 4 (4 GPUs): blockReduce's last five levels by shuffles (same pairs), on top of
# job 3's code: GPU tests of the programs with reductions at 1 and 4 GPUs (2 where time allows);
# the bench's LAMB and Adam rows with NCCL's halves again.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s27d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 230 env GPU_TESTS_ONLY="lamb scalar_chain norm_clip fold_local reduce_chains ops_mix embedding_bag dlrm_embedding megatron_mlp adam" GPU_TESTS_RANKS="1 4 2" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail\|checks:" $R/gpu-tests/gpu-results.txt | head -8 >> $R/summary.txt
timeout 150 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=140 BENCH_ARGS='--configs N=2^20,N=2^22,N=2^24,N=2^26 --rows coconetc,nccl_allreduce,nccl_reduce_scatter,nccl_all_gather' bash tools/bench/gpu/run.sh --gpus 4 --workloads lamb,adam > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt
grep -h "bench: \|queued" $R/bench/logs/bench-p*.log 2>/dev/null | grep -v "check\|eager" | head -60
cd $OUT && tar czf s27d.tgz s27d && rm -rf s27d
