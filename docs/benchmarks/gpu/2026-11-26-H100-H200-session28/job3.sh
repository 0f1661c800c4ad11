#!/usr/bin/env bash
# session 28 job 3 (RANKS GPUs, default 2): blockReduceEach (a group's folded reductions and a
# chain's neighbouring reductions in one tree pass): GPU tests of the ten programs with
# reductions at 1 and RANKS GPUs, racecheck and memcheck of lamb and scalar_chain at one GPU,
# then driver A/B of 589bb06's lamb and scalar_chain (ab/*-old) against the new ones.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); RK=${RANKS:-2}
R=$OUT/s28c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 250 env GPU_TESTS_ONLY="lamb scalar_chain norm_clip fold_local reduce_chains ops_mix embedding_bag dlrm_embedding megatron_mlp adam" GPU_TESTS_RANKS="1 $RK" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -c ": ok" $R/gpu-tests/gpu-results.txt >> $R/summary.txt; grep -i "fail" $R/gpu-tests/gpu-results.txt | head -5 >> $R/summary.txt
for n in lamb scalar_chain; do
  for tool in racecheck memcheck; do
    timeout 120 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 .gpu-bundle/gen/$n/build/${n}_main --spawn 1 --check .gpu-bundle/dumps/$n/ranks1 > $R/sanitizer-$tool-$n.log 2>&1
    echo "compute-sanitizer $tool $n P=1: rc=$? ($(grep -m1 'ERROR SUMMARY' $R/sanitizer-$tool-$n.log))" >> $R/summary.txt
  done
done
echo "sanitizer at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
for N in 1048576 4194304; do
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks "$RK" --iters 300 --warmup 50 --reps 3 \
    -D N=$N -D t=10 .gpu-bundle/ab/lamb-old .gpu-bundle/gen/lamb > $R/ab-lamb-N$N.txt 2>&1
  echo "ab lamb N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
timeout 80 bash tools/bench/gpu/driver-ab.sh --ranks "$RK" --iters 300 --warmup 50 --reps 3 \
  -D N=1048576 .gpu-bundle/ab/scalar_chain-old .gpu-bundle/gen/scalar_chain > $R/ab-scalar_chain-N1048576.txt 2>&1
echo "ab scalar_chain rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cuobjdump --dump-resource-usage .gpu-bundle/gen/lamb/build/lamb_main 2>/dev/null | grep -A1 "device" | grep -o "k_[0-9a-z_]*device\|REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*" | paste - - - - > $R/resources.txt
cat $R/summary.txt; cat $R/ab-*.txt; cat $R/resources.txt
cd $OUT && tar czf s28c.tgz s28c && rm -rf s28c
