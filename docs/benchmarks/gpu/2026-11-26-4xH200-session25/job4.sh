#!/usr/bin/env bash
# session 25 job 4 (4 GPUs): one-rank kernels as their own instantiation (kSolo) with flat grids:
# bench at P = 1 (Adam, LAMB; torch.compile, coconetc, coconetc_occ2), then the GPU tests of
# the device-API programs at 1/2/4 GPUs with compute-sanitizer at P = 1.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s25d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; git log -1 --format=%H 2>/dev/null; } > $R/header.txt
timeout 130 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=120 BENCH_ARGS='--configs N=2^24,N=2^26,N=2^28 --rows eager,torch.compile,coconetc,coconetc_occ2' bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
grep -h "queued\|config\|N=" $R/bench/logs/bench-p*.log 2>/dev/null | head -60
left=$(( 575 - ($(date +%s) - T0) ))
timeout $((left - 10)) env GPU_TESTS_ONLY="adam lamb sgd scalar_chain norm_clip fold_local reduce_chains batched_slices" SANITIZE=1 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; grep -c ": ok" $R/gpu-tests/gpu-results.txt; grep -i "fail\|checks:\|sanitizer" $R/gpu-tests/gpu-results.txt | head -30
cd $OUT && tar czf s25d.tgz s25d && rm -rf s25d
