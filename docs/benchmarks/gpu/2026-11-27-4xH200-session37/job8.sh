#!/usr/bin/env bash
# session 37 job 8, 4 GPUs (run inline on job 7's warm machine; this file records the command):
# tests/gpu/ll-stress.sh of the LL128 allreduce at 4 ranks (960 back-to-back calls, sizes and
# alignments in turn, every output checked bit for bit against NCCL's). -> $OUT/s37h
mkdir -p $OUT/s37h && (nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c; date -u +%FT%TZ; cat .gpu-bundle/commit.txt) > $OUT/s37h/header.txt
timeout 125 bash tests/gpu/ll-stress.sh --gpus 4 --programs allreduce_ll128 > $OUT/s37h/stress.txt 2>&1
echo "rc=$?" >> $OUT/s37h/stress.txt
