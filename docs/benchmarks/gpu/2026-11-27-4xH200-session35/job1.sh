#!/usr/bin/env bash
# session 35 job 1 (LIMIT seconds in all, default 560): the allreduce's LL form (dev_allreduce_ll:
# flags in the data, no barrier), first run. GPU tests at 2 and 4 GPUs of allreduces and its
# builds (@ll: LL at every size; @ce, @ce_rounds) with the @ll, @big and @two vector sets,
# memcheck at 2 GPUs of allreduces; then the allreduce at 16 KiB .. 1 MiB on 4 and 2 GPUs:
# NCCL, the default (LL up to 256 KiB), LL and the barrier one-shot at every size. -> $OUT/s35a
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s35a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 230 env GPU_TESTS_ONLY="allreduces allreduces@ll allreduces@ce allreduces@ce_rounds" \
  GPU_TESTS_SETS="allreduces@ll allreduces@big allreduces@two" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="allreduces" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=16K,64K,256K,1M \
    BUILD_ARGS='--programs allreduce,allreduce_ll,allreduce_one_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_ll,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 4,2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -20; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
grep -B2 -A9 "GPU time per step" $R/allreduce/results.md 2>/dev/null | grep "^|\|###"; grep -c "fail (" $R/allreduce/results.md
cd $OUT && tar czf s35a.tgz s35a && rm -rf s35a
