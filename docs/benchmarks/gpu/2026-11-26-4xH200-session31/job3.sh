#!/usr/bin/env bash
# session 31 job 3 (4 GPUs; LIMIT seconds in all, default 400): the MoE bench at 4 GPUs with the
# rows taking turns (10 rounds of 10 steps) after the queued steps learnt to halve while the host
# waits on a full launch queue, then the GPU tests of run_args and ops_mix at 4 GPUs (their
# vectors made by the new verify, which draws a size used as a root as a rank). -> $OUT/s31c
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-400}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s31c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 150 env OUT=$R/moe4-interleaved WORK=/tmp/bw-m4 BENCH_TIMEOUT=140 BENCH_ARGS='--interleave 10 --iters 100' bash tools/bench/gpu/run.sh --gpus 4 --workloads moe > $R/moe4-interleaved.log 2>&1
step "moe4-interleaved" $?
timeout $(( $(left) - 15 )) env GPU_TESTS_ONLY="run_args ops_mix" GPU_TESTS_RANKS="4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step "tests" $?
cat $R/header.txt
grep -A4 "^| config | unfused" $R/moe4-interleaved/results.md | head -12; grep "moe_gemm" $R/moe4-interleaved/results.md | cut -c1-400
tail -8 $R/gpu-tests/gpu-results.txt 2>/dev/null
cd $OUT && tar czf s31c.tgz s31c && rm -rf s31c
