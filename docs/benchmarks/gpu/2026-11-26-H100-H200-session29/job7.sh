#!/usr/bin/env bash
# session 29 job 7 (2 GPUs): compute-sanitizer memcheck at 2 GPUs (where the own block splits and
# the GEMMs read and write at row offsets) of the all_to_all pipelines: moe_gemm, a2a_ffn, a2a_ew,
# a2a_bcast, after their functional tests at 2 GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s29g; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout ${LIMIT:-220} env GPU_TESTS_ONLY="moe_gemm a2a_ffn a2a_ew a2a_bcast" GPU_TESTS_RANKS="2" SANITIZE=0 MEMCHECK_P2="moe_gemm a2a_ffn a2a_ew a2a_bcast" OUT=$R/tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt $R/tests/gpu-results.txt
cd $OUT && tar czf s29g.tgz s29g && rm -rf s29g
