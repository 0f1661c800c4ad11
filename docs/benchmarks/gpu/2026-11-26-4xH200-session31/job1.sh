#!/usr/bin/env bash
# session 31 job 1 (4 GPUs; LIMIT seconds in all, default 570): the MoE bench with the rows taking
# turns (--interleave 10, 100 timed steps), then as before (one row after another, 100 steps), the
# LAMB bench with the default rows (eager, coconetc, the bare all-reduce), then the GPU tests of
# LAMB's roles-from-4-rounds build (lamb@chunks4) and the default lamb build at 4 GPUs. Results under $OUT/s31a.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-570}; GPUS=${GPUS:-4}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s31a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
# 1. MoE, rows taking turns in 10 rounds of 10 steps.
timeout 150 env OUT=$R/moe-interleaved WORK=/tmp/bw1 BENCH_TIMEOUT=140 BENCH_ARGS='--interleave 10 --iters 100' bash tools/bench/gpu/run.sh --gpus "$GPUS" --workloads moe > $R/moe-interleaved.log 2>&1
step "moe interleaved" $?
# 2. MoE, one row after another, the same 100 steps.
timeout 130 env OUT=$R/moe-sequential WORK=/tmp/bw2 BENCH_TIMEOUT=120 BENCH_ARGS='--iters 100' bash tools/bench/gpu/run.sh --gpus "$GPUS" --workloads moe > $R/moe-sequential.log 2>&1
step "moe sequential" $?
# 3. LAMB with the default rows.
timeout $(( $(left) < 200 ? $(left) - 60 : 200 )) env OUT=$R/lamb WORK=/tmp/bw3 BENCH_TIMEOUT=190 BENCH_ARGS='--rows eager,coconetc,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus "$GPUS" --workloads lamb > $R/lamb.log 2>&1
step "lamb" $?
# 4. GPU tests of LAMB's builds at 4 GPUs.
timeout $(( $(left) - 15 )) env GPU_TESTS_ONLY="lamb lamb@chunks4" GPU_TESTS_RANKS="4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step "tests" $?
cat $R/header.txt
for b in moe-interleaved moe-sequential; do echo "== $b"; grep -A5 "^| config | unfused" $R/$b/results.md 2>/dev/null | head -14; done
echo "== lamb"; grep -A9 "Median time" $R/lamb/results.md 2>/dev/null | head -12
tail -12 $R/gpu-tests/gpu-results.txt 2>/dev/null
cd $OUT && tar czf s31a.tgz s31a && rm -rf s31a
