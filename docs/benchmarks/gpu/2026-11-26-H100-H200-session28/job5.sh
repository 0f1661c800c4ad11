#!/usr/bin/env bash
# session 28 job 5 (2 GPUs): blockReduceEach in every emitted form with folds: LAMB's variants
# (copy engines, fixed rounds, roles split / auto with movers, two blocks per SM, tapered chunks)
# with lamb's vector sets at 1 and 2 GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s28e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 230 env GPU_TESTS_ONLY="lamb@ce lamb@ce3 lamb@chunks3 lamb@chunks8 lamb@occ2 lamb@split16 lamb@split3 lamb@taper" GPU_TESTS_RANKS="1 2" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$?" >> $R/header.txt
cat $R/header.txt $R/gpu-tests/gpu-results.txt
cd $OUT && tar czf s28e.tgz s28e && rm -rf s28e
