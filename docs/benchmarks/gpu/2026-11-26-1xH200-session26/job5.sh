#!/usr/bin/env bash
# session 26 job E (1 GPU): every GPU test program at one GPU with the drivers that read their
# numbers whole and need every scalar without a default (b97cf15): the checks against the
# reference vectors and the run-time error path (megatron_row -D seed=0.5).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
R=$OUT/s26e; mkdir -p $R
timeout 540 env GPU_TESTS_RANKS="1" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:\|error path\|not built" $R/gpu-tests/gpu-results.txt | head -30
cd $OUT && tar czf s26e.tgz s26e && rm -rf s26e
