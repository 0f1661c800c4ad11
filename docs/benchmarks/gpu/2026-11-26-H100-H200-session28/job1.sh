#!/usr/bin/env bash
# session 28 job 1 (4 GPUs, or RANKS=2): LAMB's two device kernels merged into one grid (proto_merge.py):
# GPU tests of lamb and lamb@merge at 2 and 4 GPUs, then driver A/B at 2^20, 2^22, 2^24 (t = 10).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s28a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 200 env GPU_TESTS_ONLY="lamb lamb@merge" GPU_TESTS_RANKS="1 2" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail" $R/gpu-tests/gpu-results.txt | head -5 >> $R/summary.txt
for N in 1048576 4194304 16777216; do
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks "${RANKS:-4}" --iters 300 --warmup 50 --reps 3 \
    -D N=$N -D t=10 .gpu-bundle/gen/lamb .gpu-bundle/gen/lamb@merge > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cuobjdump --dump-resource-usage .gpu-bundle/gen/lamb@merge/build/lamb_main 2>/dev/null | grep -B1 "REG" | grep -A1 "moments\|apply" | cut -c1-200 > $R/resources.txt
cat $R/summary.txt; cat $R/ab-N*.txt; cat $R/resources.txt | head -12
cd $OUT && tar czf s28a.tgz s28a && rm -rf s28a
