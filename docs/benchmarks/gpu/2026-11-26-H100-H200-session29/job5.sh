#!/usr/bin/env bash
# session 29 job 5 (GPUS GPUs, default 2): the MoE bench with the own-block split (d0dd510):
# `tools/bench/gpu/run.sh --gpus GPUS --workloads moe`, every row checked and warmed up for 1 s.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); GPUS=${GPUS:-2}
R=$OUT/s29e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout ${LIMIT:-400} env OUT=$R/bench bash tools/bench/gpu/run.sh --gpus "$GPUS" --workloads moe > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt; tail -5 $R/bench.log; cat $R/bench/results.md 2>/dev/null | head -40
cd $OUT && tar czf s29e.tgz s29e && rm -rf s29e
