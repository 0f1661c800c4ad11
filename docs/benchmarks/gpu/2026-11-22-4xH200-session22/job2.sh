#!/usr/bin/env bash
# session 22 job 2 (4x H200): the MoE FFN micro (one GPU); GPU tests of every LAMB build with
# tune(moments/apply, occupancy = auto) in the sample's schedule (at 2 ranks the split builds run
# the 2-blocks-per-SM instantiation); the LAMB bench at 2 GPUs (its default row now occupancy auto).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
R=$OUT/s22b; mkdir -p $R $R/gputests
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/moe-ffn-micro.cu -lcublas -o /tmp/moe-ffn-micro > $R/micro-build.log 2>&1
( timeout 60 /tmp/moe-ffn-micro 2 1024 4096 8192 4; timeout 60 /tmp/moe-ffn-micro 2 1024 4096 2048 4 ) > $R/moe-ffn-micro.txt 2>&1
echo "micro done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
ONLY="lamb lamb@chunks3 lamb@chunks8 lamb@split3 lamb@split16 lamb@occ2 lamb@taper lamb@nccl lamb@ce"
GPU_TESTS_ONLY="$ONLY" SANITIZE=0 OUT=$R/gputests timeout 230 bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
tail -4 $R/gputests.log >> $R/summary.txt
lim=$(( 575 - ($(date +%s) - T0) ))
timeout $lim bash -c "OUT=$R/bench-lamb WORK=/tmp/bw-lamb BENCH_TIMEOUT=$((lim-15)) bash tools/bench/gpu/run.sh --gpus 2 --workloads lamb" > $R/bench-lamb.log 2>&1
echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/moe-ffn-micro.txt
cd $OUT && tar czf s22b.tgz s22b && rm -rf s22b
