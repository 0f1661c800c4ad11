#!/usr/bin/env bash
# session 35 job 2: the LL allreduce's grid shape by the drivers (tools/bench/gpu/driver-ab.sh, no
# PyTorch): tools/bench/programs/allreduce.cnet with tune(f, algorithm = ll) at 64 KiB, 256 KiB
# and 1 MiB per rank on 2 and 4 GPUs, blocks of 512 (the default), 256, 128 and 64 threads
# (COCONET_LL_THREADS); the barrier one-shot (algorithm = one_shot) beside it. -> $OUT/s35b
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s35b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
for N in 32768 131072 524288; do
  bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 300 --warmup 50 -D N=$N \
    --env ";COCONET_LL_THREADS=256;COCONET_LL_THREADS=128;COCONET_LL_THREADS=64" .gpu-bundle/gen-ab/allreduce@ll 2>&1 | sed "s/^/N=$N /" >> $R/ab.txt
  bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 300 --warmup 50 -D N=$N .gpu-bundle/gen-ab/allreduce@one_shot 2>&1 | sed "s/^/N=$N /" >> $R/ab.txt
done
cat $R/header.txt $R/ab.txt
cd $OUT && tar czf s35b.tgz s35b && rm -rf s35b
