#!/usr/bin/env bash
# session 37 job 9, 4 GPUs (run inline on job 7's warm machine; this file records the command):
# the allreduce's LL and LL128 forms against NCCL at 64 and 128 KiB per rank. -> $OUT/s37i
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT/s37i; date -u +%FT%TZ > $OUT/s37i/header.txt
timeout 85 env OUT=$OUT/s37i/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=80 ALLREDUCE_SIZES=64K,128K \
  BUILD_ARGS='--programs allreduce_ll,allreduce_ll128' BENCH_ARGS='--rows nccl_allreduce,coconetc_ll,coconetc_ll128' \
  bash tools/bench/gpu/run.sh --gpus 4 --workloads allreduce > $OUT/s37i/allreduce.log 2>&1
echo rc=$? >> $OUT/s37i/header.txt
