#!/usr/bin/env bash
# session 29 job 1 (2 or 4 GPUs): tools/bench/gpu/sm-transfer-micro.cu, the runtime's push and pull
# loops on 12 shapes against NCCL's reduce-scatter and all-gather, S = 2, 8, 32, 128 MiB per GPU.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
R=$OUT/s29a; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; git rev-parse HEAD 2>/dev/null; } > $R/header.txt
nvcc -O3 -std=c++17 -arch=sm_90a -I$NC/include tools/bench/gpu/sm-transfer-micro.cu -L$NC/lib -l:libnccl.so.2 -o /tmp/smt > $R/build.log 2>&1
echo "build rc=$?" >> $R/header.txt
LD_LIBRARY_PATH=$NC/lib timeout 200 /tmp/smt 2 8 32 128 > $R/micro.txt 2>&1
echo "micro rc=$?" >> $R/header.txt
cat $R/header.txt $R/build.log $R/micro.txt
cd $OUT && tar czf s29a.tgz s29a && rm -rf s29a
