#!/usr/bin/env bash
# session 29 job 6 (RANKS GPUs, default 2): the all_to_all pipelines after the review fix (the
# own block split only where every stage keeps x's rows; a rank-1 block's rows are its
# elements): GPU tests of the new a2a_bcast (whole blocks, a weight broadcasting the blocks'
# batch) and a2a_ew (rank 1, halves), moe_gemm and a2a_ffn, with their builds, at 1 and RANKS GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); RANKS=${RANKS:-2}
R=$OUT/s29f; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout ${LIMIT:-280} env GPU_TESTS_ONLY="a2a_bcast a2a_bcast@nccl a2a_ew a2a_ew@nccl moe_gemm moe_gemm@nccl a2a_ffn a2a_ffn@nccl" GPU_TESTS_RANKS="1 $RANKS" SANITIZE=0 OUT=$R/tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt $R/tests/gpu-results.txt
cd $OUT && tar czf s29f.tgz s29f && rm -rf s29f
