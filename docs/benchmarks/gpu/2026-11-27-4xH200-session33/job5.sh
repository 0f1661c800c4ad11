#!/usr/bin/env bash
# session 33 job 5: where the fused group's one-shot form stops paying against its two-shot
# kernel past the 512 KiB limit it is taken below: megatron_row@one (tune(f, algorithm =
# one_shot)) and megatron_row@two (two_shot) by their own drivers at H = 4096, B*S = 64 ..
# 512 tokens (512 KiB .. 4 MiB of partial sums; one chunk), on 2 and 4 GPUs. -> $OUT/s33e
set -uo pipefail
export NCCL_NVLS_ENABLE=0
R=$OUT/s33e; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
for T in 64 128 256 512; do
  echo "== B=$T S=1 H=4096" >> $R/ab.txt
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 50 \
    -D B=$T -D S=1 -D H=4096 -D seed=1 .gpu-bundle/gen/megatron_row@one .gpu-bundle/gen/megatron_row@two >> $R/ab.txt 2>&1
  echo "rc=$? at $(date -u +%T)" >> $R/ab.txt
done
cat $R/header.txt $R/ab.txt
cd $OUT && tar czf s33e.tgz s33e && rm -rf s33e
