#!/usr/bin/env bash
# session 30 job 5 (2 GPUs): after kRolesAutoRounds 8 -> 4, GPU tests of LAMB's builds at 1 and 2
# GPUs (lamb@chunks4: roles = auto at the new threshold), compute-sanitizer memcheck of lamb and
# lamb@chunks4 at 2 GPUs, then the LAMB bench at 2^22..2^26 (rows coconetc, nccl_allreduce).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/s30e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
timeout 330 env GPU_TESTS_ONLY="lamb lamb@chunks3 lamb@chunks4 lamb@chunks8 lamb@split3 lamb@split16 lamb@occ2 lamb@taper lamb@nccl" GPU_TESTS_RANKS="1 2" SANITIZE=0 MEMCHECK_P2="lamb lamb@chunks4" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
timeout 150 env OUT=$R/bench WORK=/tmp/bw5 BENCH_TIMEOUT=140 BENCH_ARGS='--configs N=2^22,N=2^24,N=2^26 --rows coconetc,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus 2 --workloads lamb > $R/bench.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt; tail -n 25 $R/gpu-tests/gpu-results.txt; grep -A6 "Median time" $R/bench/results.md; grep -A6 "GPU time per step with the host ahead" $R/bench/results.md | tail -3
cd $OUT && tar czf s30e.tgz s30e && rm -rf s30e
