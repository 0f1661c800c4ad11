#!/usr/bin/env bash
# session 29 job 2 (RANKS GPUs, default 2): warp roles in LAMB's shared rounds (proto_warps.py):
# GPU tests of gen/lamb@ws with the roles on (lamb's vector sets, 4 and 3 rounds forced), then
# driver A/B at 2^24 of the committed lamb against the prototype with 2 (ws2) and 4 (ws4) units in
# flight per transfer thread, over warp settings (t = 10).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); RANKS=${RANKS:-2}
R=$OUT/s29b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 150 env X_ROUNDS=4 X_MWARPS=4 X_AWARPS=4 GPU_TESTS_ONLY="lamb@ws" GPU_TESTS_RANKS="$RANKS" SANITIZE=0 OUT=$R/tests-4-4 bash tests/gpu/run.sh > $R/tests-4-4.log 2>&1
echo "tests 4/4 rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
timeout 150 env X_ROUNDS=3 X_MWARPS=8 X_AWARPS=2 GPU_TESTS_ONLY="lamb@ws" GPU_TESTS_RANKS="$RANKS" SANITIZE=0 OUT=$R/tests-8-2 bash tests/gpu/run.sh > $R/tests-8-2.log 2>&1
echo "tests 8/2 rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for t in tests-4-4 tests-8-2; do echo "$t: $(grep -c ': ok' $R/$t/gpu-results.txt) ok"; grep -i "fail" $R/$t/gpu-results.txt | head -5; done >> $R/summary.txt
S=';X_MWARPS=4 X_AWARPS=4;X_MWARPS=8 X_AWARPS=8;X_MWARPS=4 X_AWARPS=8;X_MWARPS=8 X_AWARPS=4'
timeout 330 bash tools/bench/gpu/driver-ab.sh --ranks "$RANKS" --iters 300 --warmup 50 --reps 2 --env "$S" \
  -D N=16777216 -D t=10 .gpu-bundle/ab/lamb .gpu-bundle/ab/lamb@ws2 .gpu-bundle/ab/lamb@ws4 > $R/ab-N16777216.txt 2>&1
echo "ab rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/header.txt $R/summary.txt $R/ab-*.txt
cd $OUT && tar czf s29b.tgz s29b && rm -rf s29b
