#!/usr/bin/env bash
# session 24 job 4 (1x H100): the fused groups' kernels on one rank (device path at P = 1: the
# input read as the one slot, nothing pushed, published or pulled): GPU tests of every program
# whose code takes it, then compute-sanitizer (memcheck, racecheck) on three of them.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s24d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader; } > $R/header.txt
timeout ${TLIM:-250} env GPU_TESTS_ONLY="adam adam@chunks5 adam@split16 adam@split5 fold_local lamb lamb@chunks3 lamb@chunks8 lamb@occ2 lamb@split16 lamb@split3 lamb@taper norm_clip scalar_chain sgd" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/gpu-tests.log 2>&1
echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
left=$(( ${LIM:-540} - ($(date +%s) - T0) ))
[ $left -gt 40 ] && timeout $((left - 20)) env GPU_TESTS_ONLY="lamb adam scalar_chain" OUT=$R/gpu-sanitize bash tests/gpu/run.sh > $R/gpu-sanitize.log 2>&1
echo "sanitize rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for f in $R/gpu-tests/gpu-results.txt $R/gpu-sanitize/gpu-results.txt; do echo "== $f: $(grep -c ': ok\|: clean\|ok (' $f 2>/dev/null) ok"; grep -v ": ok (" $f | tail -n +7; done >> $R/summary.txt 2>&1
cat $R/summary.txt
cd $OUT && tar czf s24d.tgz s24d && rm -rf s24d
