#!/usr/bin/env bash
# session 33 job 2: what job 1's test limit cut: compute-sanitizer memcheck at 2 GPUs of
# megatron_row (the overlap's one-shot form at the default vectors' sizes) and megatron_row@group
# (the fused group's one-shot form without the overlap), then the C interface and fake hosts
# (each process its own NCCL host: the NCCL fallback). -> $OUT/s33b
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s33b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 400 env GPU_TESTS_ONLY="megatron_row megatron_row@group" GPU_TESTS_SETS="none" GPU_TESTS_RANKS="2" \
  SANITIZE=0 MEMCHECK_P2="megatron_row megatron_row@group" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$?" >> $R/header.txt
cat $R/header.txt; cat $R/gpu-tests/gpu-results.txt | tail -n +7
cd $OUT && tar czf s33b.tgz s33b && rm -rf s33b
