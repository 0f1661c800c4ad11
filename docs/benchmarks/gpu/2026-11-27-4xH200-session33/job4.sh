#!/usr/bin/env bash
# session 33 job 4: where gathering an MoE layer's expert rows by weight (coconet_rt::
# gatherBatchedRows: one GEMM of R C rows per expert instead of R GEMMs of C rows, each reading
# the weights) stops paying. moe_gemm without a schedule (gen/moe_gemm@none) by its own driver at
# X = 2 experts per rank, H = 4096, F = 8192 and capacities C = 16..512, on 2 and 4 GPUs, with the
# committed rule (gather below 256 rows), always (COCONET_GATHER_ROWS=1) and never (=0), the
# settings interleaved, twice. -> $OUT/s33d
set -uo pipefail
export NCCL_NVLS_ENABLE=0
R=$OUT/s33d; mkdir -p $R/raw
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
for C in 16 64 128 256 512; do
  echo "== C=$C" >> $R/ab.txt
  timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 50 --reps 2 --raw $R/raw/C$C \
    --env ";COCONET_GATHER_ROWS=0;COCONET_GATHER_ROWS=1" -D X=2 -D C=$C -D H=4096 -D F=8192 .gpu-bundle/gen/moe_gemm@none >> $R/ab.txt 2>&1
  echo "rc=$? at $(date -u +%T)" >> $R/ab.txt
done
cat $R/header.txt $R/ab.txt
cd $OUT && tar czf s33d.tgz s33d && rm -rf s33d
