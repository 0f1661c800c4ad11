#!/usr/bin/env bash
# session 30 job 1 (4 GPUs; LIMIT seconds in all, default 580): the MoE bench with the own-block
# split (first at 4 GPUs), sm-transfer-micro at 4 GPUs, then GPU tests of the all_to_all
# pipelines and the run-time argument programs at 4 GPUs. Results under $OUT/s30a.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
T0=$(date +%s); LIMIT=${LIMIT:-580}; GPUS=${GPUS:-4}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s30a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
# 1. MoE bench (every row checked, 1-s warm-up).
timeout 200 env OUT=$R/bench-moe bash tools/bench/gpu/run.sh --gpus "$GPUS" --workloads moe > $R/bench-moe.log 2>&1
echo "moe bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
# 2. The runtime's push/pull loops against NCCL's reduce-scatter / all-gather.
nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt > $R/micro-build.log 2>&1
LD_LIBRARY_PATH=$NC/lib timeout 60 /tmp/smt 2 8 32 128 > $R/micro.txt 2>&1
echo "micro rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
# 3. GPU tests at 4 GPUs.
timeout $(( $(left) - 10 )) env GPU_TESTS_ONLY="moe_gemm a2a_ffn a2a_bcast a2a_ew matmul_all_to_all run_args ops_mix ops_mix@nccl" GPU_TESTS_RANKS="4" SANITIZE=0 OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
echo "tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt
cat $R/header.txt; cat $R/bench-moe/results.md 2>/dev/null | grep -i -A12 "moe" | head -30; tail -4 $R/micro.txt; cat $R/gpu-tests/gpu-results.txt 2>/dev/null | tail -30
cd $OUT && tar czf s30a.tgz s30a && rm -rf s30a
