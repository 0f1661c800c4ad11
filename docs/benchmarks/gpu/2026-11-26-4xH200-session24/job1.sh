#!/usr/bin/env bash
# session 24 job 1 (4x H200 or what comes): programmatic dependent launch (PDL) in the device-group
# kernels: GPU tests of the device-API programs with it on (the default), then driver A/B
# COCONET_PDL=0 against =1 for LAMB and Adam at 2^20 and 2^22 on 2 and 4 GPUs.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; git log --oneline -1 2>/dev/null; } > $R/header.txt
G=$(nvidia-smi -L | wc -l)
timeout ${TLIM:-300} env GPU_TESTS_ONLY="adam lamb sgd norm_clip fold_local scalar_chain reduce_chains ops_mix overlap_cast batched_slices pipeline megatron_row allreduces lamb@occ2 lamb@split3 lamb@chunks3 lamb@chunks8 adam@split5 adam@chunks5" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/gpu-tests.log 2>&1
echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
tail -3 $R/gpu-tests/gpu-results.txt >> $R/summary.txt 2>/dev/null
ranks="2"; [ "$G" -ge 4 ] && ranks="2 4"
left=$(( ${LIM:-570} - ($(date +%s) - T0) ))
for N in 1048576 4194304; do
  [ $left -gt 30 ] || break
  timeout $((left - 15)) bash tools/bench/gpu/driver-ab.sh --ranks "$ranks" --iters 60 --reps 2 --env "COCONET_PDL=0;COCONET_PDL=1" -D N=$N .gpu-bundle/gen/lamb .gpu-bundle/gen/adam >> $R/ab.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
  left=$(( ${LIM:-570} - ($(date +%s) - T0) ))
done
cat $R/summary.txt; grep "median_us" $R/ab.txt
cd $OUT && tar czf s24a.tgz s24a && rm -rf s24a
