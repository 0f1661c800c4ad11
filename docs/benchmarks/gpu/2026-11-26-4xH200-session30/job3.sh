#!/usr/bin/env bash
# session 30 job 3 (4 GPUs), run inline as one device command: the LAMB bench at every size with
# rows eager, coconetc, coconetc_split and the bare all-reduce. -> lamb/
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; R=$OUT/s30c; mkdir -p $R; T0=$(date +%s); { date -u +%FT%TZ; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; } > $R/header.txt; timeout 400 env OUT=$R/bench WORK=/tmp/bw2 BENCH_TIMEOUT=380 BENCH_ARGS='--rows eager,coconetc,coconetc_split,nccl_allreduce' bash tools/bench/gpu/run.sh --gpus 4 --workloads lamb > $R/bench.log 2>&1; echo "bench rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; cat $R/header.txt; grep -A9 "Median time" $R/bench/results.md; cd $OUT && tar czf s30c.tgz s30c
