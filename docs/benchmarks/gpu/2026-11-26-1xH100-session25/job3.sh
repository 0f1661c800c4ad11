#!/usr/bin/env bash
# session 25 job 3 (1 GPU): tools/bench/gpu/optim-micro.cu at 2^24, 2^26, 2^28.
set -uo pipefail
R=$OUT/s25c; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; } > $R/header.txt
nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/optim-micro.cu -o /tmp/optim-micro 2>&1 | tee $R/build.txt
/tmp/optim-micro 24 26 28 2>&1 | tee $R/optim-micro.txt
cd $OUT && tar czf s25c.tgz s25c && rm -rf s25c
