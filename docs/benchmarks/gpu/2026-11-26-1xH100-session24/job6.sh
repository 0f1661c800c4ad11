#!/usr/bin/env bash
# session 24 job 6 (1x H100): on one rank the device-group kernels take no barrier and their grid
# fills the GPU (coconet_rt::soloBlocks): GPU tests at P = 1, then drivers of Adam and LAMB at one
# and two blocks per SM (adam / adam@occ2: 116 / 64 registers; lamb / lamb@occ2: `moments`'s).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24f; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader; } > $R/header.txt
timeout ${TLIM:-150} env GPU_TESTS_ONLY="adam adam@occ2 adam@split5 lamb lamb@occ2 lamb@chunks8 fold_local norm_clip scalar_chain sgd" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/gpu-tests.log 2>&1
echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep "checks:\|FAIL" $R/gpu-tests/gpu-results.txt >> $R/summary.txt
left=$(( ${LIM:-230} - ($(date +%s) - T0) ))
for N in 67108864 268435456; do
  [ $left -gt 20 ] || break
  timeout $((left - 5)) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 20 --reps 2 -D N=$N .gpu-bundle/gen/adam .gpu-bundle/gen/adam@occ2 .gpu-bundle/gen/lamb .gpu-bundle/gen/lamb@occ2 >> $R/ab.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
  left=$(( ${LIM:-230} - ($(date +%s) - T0) ))
done
cat $R/summary.txt; grep median_us $R/ab.txt
cd $OUT && tar czf s24f.tgz s24f && rm -rf s24f
