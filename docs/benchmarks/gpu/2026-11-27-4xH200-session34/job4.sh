#!/usr/bin/env bash
# session 34 job 4 (on job 3's warm machine, its .gpu-bundle builds and vectors kept): what job
# 3's test limit cut: megatron_row's builds with the @big (640 KiB: one-shot at 2 ranks now,
# two-shot at 4) and @decode sets, compute-sanitizer memcheck at 2 GPUs of allreduces and
# megatron_row with their default vectors and with @big (the one-shot path past 512 KiB). -> $OUT/s34d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s34d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 330 env GPU_TESTS_ONLY="megatron_row megatron_row@two megatron_row@one megatron_row@group" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@decode" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="allreduces megatron_row" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$?" >> $R/header.txt
b=.gpu-bundle
for n in allreduces megatron_row; do
  exe="$b/gen/$n/build/${n}_main"; d="$b/dumps/$n@big/ranks2"
  [ -x "$exe" ] && [ -f "$d/manifest.txt" ] || { echo "memcheck $n@big P=2: not run (no build or vectors)" >> $R/header.txt; continue; }
  timeout 100 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$exe" --spawn 2 --check "$d" --timeout 90 > $R/memcheck-$n-big.log 2>&1
  echo "compute-sanitizer memcheck $n with $n@big P=2: rc=$?" >> $R/header.txt
done
cat $R/header.txt; tail -n +7 $R/gpu-tests/gpu-results.txt | grep -v ": ok" ; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"; tail -3 $R/memcheck-*.log
cd $OUT && tar czf s34d.tgz s34d && rm -rf s34d
