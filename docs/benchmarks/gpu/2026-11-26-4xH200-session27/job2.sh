#!/usr/bin/env bash
# session 27 job 2 (4 GPUs): where LAMB's step goes against Adam's: %globaltimer stamps
# (/tmp/jobs/proto_stamps.py) of one call (the 200th) per run at 2^20, 2^22, 2^24, t = 10.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
R=$OUT/s27b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
for N in 1048576 4194304 16777216; do
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 3 --raw $R/raw-N$N \
    -D N=$N -D t=10 .gpu-bundle/gen/lamb@st .gpu-bundle/gen/adam@st > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
cat $R/summary.txt; cat $R/ab-N*.txt
for f in $R/raw-N*/*; do echo "== $f"; grep "^ST" $f | sort; done
cd $OUT && tar czf s27b.tgz s27b && rm -rf s27b
