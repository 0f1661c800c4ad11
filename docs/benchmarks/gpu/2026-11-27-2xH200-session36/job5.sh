#!/usr/bin/env bash
# session 36 job 5 (LIMIT seconds in all, default 300), 2 GPUs: the allreduce's default as
# committed (LL up to 256 KiB, LL128 to 2 MiB, then the barrier one-shot on 2 ranks): GPU tests
# of allreduces with the @ll, @big and @two sets; the stress test of the default build with sizes
# on both sides of each limit taken in turn (one call's form differs from the last's: LL, LL128,
# one-shot share the calls' area parity and epochs), and of the LL128 build. -> $OUT/s36e
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s36e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 150 env GPU_TESTS_ONLY="allreduces" GPU_TESTS_SETS="allreduces@ll allreduces@big allreduces@two" GPU_TESTS_RANKS="2" \
  SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
timeout 140 env OUT=$R/stress WORK=/tmp/ll-stress-work bash tests/gpu/ll-stress.sh --gpus 2 --programs allreduce,allreduce_ll128 -- \
  --sizes 131072,131073,1048576,1048577,3,524288,131071,1048575,4194304,65536 --rounds 100 > $R/stress.log 2>&1
step stress $?
cat $R/header.txt; grep -v ": ok" $R/gpu-tests/gpu-results.txt | tail -12; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
cat $R/stress.log
cd $OUT && tar czf s36e.tgz s36e && rm -rf s36e
