#!/usr/bin/env bash
# session 25 job 1 (4x H200): driver A/B of LAMB with warp roles in the shared loop (hand-edited
# gen/lamb@ws: X_MWARPS push warps in `moments`, X_AWARPS pull warps in `apply`, X_ROUNDS
# rounds), then the GPU tests of the device-API programs at 1/2/4 GPUs (HEAD + Part.t0/nt).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s25a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; } > $R/header.txt
B=.gpu-bundle/gen/lamb@ws
S='X_ROUNDS=4;X_ROUNDS=4 X_MWARPS=4 X_AWARPS=4;X_ROUNDS=4 X_MWARPS=2 X_AWARPS=2;X_ROUNDS=4 X_MWARPS=8 X_AWARPS=8;X_ROUNDS=6;X_ROUNDS=6 X_MWARPS=4 X_AWARPS=4'
for N in 16777216 4194304; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -gt 200 ] || break
  timeout $((left - 150)) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 100 --warmup 20 --reps 2 --env "$S" -D N=$N $B > $R/ab-$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cat $R/ab-*.txt
left=$(( 570 - ($(date +%s) - T0) ))
export X_ROUNDS=4 X_MWARPS=4 X_AWARPS=4
timeout $((left - 10)) env GPU_TESTS_ONLY="adam lamb sgd norm_clip fold_local scalar_chain reduce_chains ops_mix batched_slices lamb@split3 lamb@chunks8 lamb@occ2 adam@split5 adam@occ2 lamb@ws" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:" $R/gpu-tests/gpu-results.txt | head -20
cd $OUT && tar czf s25a.tgz s25a && rm -rf s25a
