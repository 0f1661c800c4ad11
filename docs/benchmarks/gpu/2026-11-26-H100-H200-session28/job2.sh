#!/usr/bin/env bash
# session 28 job 2 (RANKS GPUs, default 2): why the merged LAMB kernel was slower: variants
# (lamb@merge inlined bodies, @mergeni bodies not inlined, @mergeldg u by the read-only path)
# by driver A/B at 2^22 and 2^24, then %globaltimer stamps of lamb and the merged lamb at 2^24.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
T0=$(date +%s); RK=${RANKS:-2}
R=$OUT/s28b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
for N in 4194304 16777216; do
  timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks "$RK" --iters 300 --warmup 50 --reps 2 \
    -D N=$N -D t=10 .gpu-bundle/gen/lamb .gpu-bundle/gen/lamb@merge .gpu-bundle/gen/lamb@mergeni .gpu-bundle/gen/lamb@mergeldg > $R/ab-N$N.txt 2>&1
  echo "ab N=$N rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
done
for d in lamb_st lamb_st_merge; do
  (cmake -S .gpu-bundle/ab/$d -B .gpu-bundle/ab/$d/build -DNCCL_ROOT=$NC > /dev/null && cmake --build .gpu-bundle/ab/$d/build -j 8 > /dev/null) 2>&1 | tail -3 >> $R/summary.txt
done
for d in lamb_st lamb_st_merge; do
  for rep in 1 2; do
    timeout 60 .gpu-bundle/ab/$d/build/lamb_main --spawn $RK -D N=16777216 -D t=10 --bench --warmup 50 --iters 300 > $R/st-$d-r$rep.txt 2>&1
  done
done
echo "stamps at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; cat $R/ab-N*.txt; grep -h "^ST" $R/st-*-r1.txt | head -16
cd $OUT && tar czf s28b.tgz s28b && rm -rf s28b
