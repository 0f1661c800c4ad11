#!/usr/bin/env bash
# session 25 job 2 (1x H100): Adam and LAMB on one GPU, eager / torch.compile / coconetc /
# coconetc_occ2 (two blocks per SM), 2^20..2^28.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/s25b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; } > $R/header.txt
timeout 560 env OUT=$R/bench WORK=/tmp/bw BENCH_TIMEOUT=540 BENCH_ARGS='--rows eager,torch.compile,coconetc,coconetc_occ2' bash tools/bench/gpu/run.sh --gpus 1 --workloads adam,lamb > $R/bench.log 2>&1
echo "bench rc=$?" >> $R/header.txt
grep -h "coconetc\|eager\|compile\|^== \|config" $R/bench/logs/bench-p*.log 2>/dev/null | head -80
cd $OUT && tar czf s25b.tgz s25b && rm -rf s25b
