#!/usr/bin/env bash
# session 29 job 3 (RANKS GPUs, default 2): moe_gemm with its own block in two parts, the second
# computed last (proto_moesplit.py): GPU tests of gen/moe_gemm@own with moe_gemm's vectors at 1
# and RANKS GPUs, then driver A/B of the committed moe_gemm against it at the bench's shapes
# (X = 2, C = 1024, H = 4096, F = 8192 and 2048).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); RANKS=${RANKS:-2}; LIMIT=${LIMIT:-500}
R=$OUT/s29c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 200 env GPU_TESTS_ONLY="moe_gemm@own" GPU_TESTS_RANKS="1 $RANKS" SANITIZE=0 OUT=$R/tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
echo "$(grep -c ': ok' $R/tests/gpu-results.txt) ok"; grep -i "fail" $R/tests/gpu-results.txt | head -5 >> $R/summary.txt
for F in 8192 2048; do
  left=$(( LIMIT - ($(date +%s) - T0) )); [ $left -gt 60 ] || break
  timeout $((left - 20)) bash tools/bench/gpu/driver-ab.sh --ranks "$RANKS" --iters 100 --warmup 20 --reps 3 \
    -D X=2 -D C=1024 -D H=4096 -D F=$F .gpu-bundle/ab/moe_gemm .gpu-bundle/ab/moe_gemm@own > $R/ab-F$F.txt 2>&1
  echo "ab F=$F rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cat $R/header.txt $R/summary.txt $R/tests/gpu-results.txt $R/ab-*.txt
cd $OUT && tar czf s29c.tgz s29c && rm -rf s29c
