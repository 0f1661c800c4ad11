#!/usr/bin/env bash
# session 22 job 3 (2x H200; the 4-GPU kind was withdrawn after job 2): the MoE FFN micro again (each variant twice, plus `whole`: the unfused
# path's GEMM shape) with nvidia-smi's clocks and power sampled beside it; then the GPU tests of the
# LAMB builds with movers at 1 and 2 ranks (two blocks per SM there), the sample's occupancy = auto in each.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
G=$(nvidia-smi -L | wc -l)
R=$OUT/s22c; mkdir -p $R $R/gputests
echo "== date $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$G" > $R/header.txt
$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/moe-ffn-micro.cu -lcublas -o /tmp/moe-ffn-micro > $R/micro-build.log 2>&1
nvidia-smi -i 0 --query-gpu=timestamp,clocks.current.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > $R/micro-clocks.csv 2>&1 &
SMI=$!
timeout 90 /tmp/moe-ffn-micro 2 1024 4096 8192 4 > $R/moe-ffn-micro.txt 2>&1
kill $SMI
echo "micro done at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
ONLY="lamb@split16 lamb@chunks8 lamb@taper lamb@occ2 lamb@split3"
GPU_TESTS_ONLY="$ONLY" SANITIZE=0 OUT=$R/gputests timeout 300 bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
tail -4 $R/gputests.log >> $R/summary.txt
cat $R/summary.txt; cat $R/moe-ffn-micro.txt
cd $OUT && tar czf s22c.tgz s22c && rm -rf s22c
