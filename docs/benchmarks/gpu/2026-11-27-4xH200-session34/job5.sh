#!/usr/bin/env bash
# session 34 job 5 (LIMIT seconds in all, default 420): after 4c6d43a (an overlap's one chunk in
# the one-shot form makes no staging or slice window). GPU tests at 2 and 4 GPUs of the overlap
# builds it changes: megatron_row (one-shot at the default sizes), @one (one_shot at every
# size), @tail (gather = pipelined, tail = 4, merge = never), @ceg (copy_engines: no one-shot
# form), @pipe (gather = pipelined, merge = never), megatron_mlp and overlap_cast, with megatron_row's @big (640
# KiB: one-shot at 2 ranks, two-shot at 4), @rows and @odd sets; memcheck at 2 GPUs of
# megatron_row and megatron_row@tail with the default vectors and of megatron_row with @big. -> $OUT/s34e
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s34e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout ${TESTS_LIMIT:-300} env GPU_TESTS_ONLY="megatron_row megatron_row@one megatron_row@tail megatron_row@ceg megatron_row@pipe megatron_mlp overlap_cast" \
  GPU_TESTS_SETS="megatron_row@big megatron_row@rows megatron_row@odd" GPU_TESTS_RANKS="2 4" \
  SANITIZE=0 MEMCHECK_P2="megatron_row megatron_row@tail" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$?" >> $R/header.txt
b=.gpu-bundle; exe="$b/gen/megatron_row/build/megatron_row_main"; d="$b/dumps/megatron_row@big/ranks2"
if [ -x "$exe" ] && [ -f "$d/manifest.txt" ]; then
  timeout 90 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$exe" --spawn 2 --check "$d" --timeout 80 > $R/memcheck-megatron_row-big.log 2>&1
  echo "compute-sanitizer memcheck megatron_row with megatron_row@big P=2: rc=$?" >> $R/header.txt
fi
cat $R/header.txt; tail -n +7 $R/gpu-tests/gpu-results.txt | grep -v ": ok"; echo "ok lines: $(grep -c ': ok' $R/gpu-tests/gpu-results.txt)"
cd $OUT && tar czf s34e.tgz s34e && rm -rf s34e
