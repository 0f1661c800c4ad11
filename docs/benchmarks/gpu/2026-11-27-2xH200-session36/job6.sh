#!/usr/bin/env bash
# session 36 job 6 (LIMIT seconds in all, default 250), 2 GPUs: the barrier allreduce kernels
# (dev_allreduce_one_shot, dev_allreduce_two_shot) launched with PDL (launchDependent; before:
# plain launches). The same builds twice in one job, PDL off (COCONET_PDL=0, the runtime's A/B
# switch) then on: the one-shot and two-shot rows at 512 KiB .. 16 MiB. -> $OUT/s36f
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s36f; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
for pdl in 0 1; do
  timeout 110 env COCONET_PDL=$pdl OUT=$R/pdl$pdl WORK=/tmp/bw-ar BENCH_TIMEOUT=90 ALLREDUCE_SIZES=512K,2M,8M,16M \
    BUILD_ARGS='--programs allreduce_one_shot,allreduce_two_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc_one_shot,coconetc_two_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads allreduce > $R/pdl$pdl.log 2>&1
  step "bench COCONET_PDL=$pdl" $?
done
cat $R/header.txt; for pdl in 0 1; do echo "COCONET_PDL=$pdl"; grep -A8 "GPU time per step" $R/pdl$pdl/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/pdl$pdl/results.md; done
cd $OUT && tar czf s36f.tgz s36f && rm -rf s36f
