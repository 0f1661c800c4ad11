#!/usr/bin/env bash
# session 36 job 2 (LIMIT seconds in all, default 560), 2 GPUs: the allreduce's LL128 form
# (dev_allreduce_ll128: 128-byte lines with one flag, no barrier; tune(algorithm = ll128)), first
# run, and the LL form as the default up to 1 MiB on 2 ranks. GPU tests at 2 GPUs of allreduces
# (default) and allreduces@ll128 with the @ll, @big and @two sets, memcheck at 2 GPUs of
# allreduces@ll128; the stress test (tests/gpu/ll-stress.sh: back-to-back calls, every output
# checked bit for bit) of the default, LL and LL128 builds; then the allreduce at 64 KiB .. 8 MiB:
# NCCL, the default, LL, LL128 and the barrier one-shot. -> $OUT/s36b
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s36b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 200 env GPU_TESTS_ONLY="allreduces allreduces@ll128" GPU_TESTS_SETS="allreduces@ll allreduces@big allreduces@two" GPU_TESTS_RANKS="2" \
  SANITIZE=0 MEMCHECK_P2="allreduces@ll128" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
timeout 150 env OUT=$R/stress WORK=/tmp/ll-stress-work bash tests/gpu/ll-stress.sh --gpus 2 --programs allreduce,allreduce_ll,allreduce_ll128 > $R/stress.log 2>&1
step stress $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=64K,256K,512K,1M,2M,4M,8M \
    BUILD_ARGS='--programs allreduce,allreduce_ll,allreduce_ll128,allreduce_one_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_ll,coconetc_ll128,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -25; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
cat $R/stress.log
grep -B2 -A12 "GPU time per step" $R/allreduce/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/allreduce/results.md
cd $OUT && tar czf s36b.tgz s36b && rm -rf s36b
