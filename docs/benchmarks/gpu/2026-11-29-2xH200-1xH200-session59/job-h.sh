#!/usr/bin/env bash
# Call h (session 59), one GPU: through the bench's own path the generated layer norm takes
# 70.6-72.9 us back to back, torch.compile's 71.4-71.5 (call g: 20 warm-up steps); the bench, which
# warms each row up for about a second first, timed 80.4 vs 71.5 (call b). Here in_torch2.py with no
# warm-up and with 2 s of warm-up before each timing, nvidia-smi dmon's clocks and power beside.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-h.sh (carry .gpu-bundle) -> $OUT/h.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin h "${LIMIT:-150}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
export LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH
g=/tmp/ln; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $R/build-lib.log 2>&1 && cmake --build $g/build -j 8 >> $R/build-lib.log 2>&1 )
step "build library" $?
nvidia-smi dmon -s pc -d 1 > $R/dmon.txt 2>&1 &
dm=$!
for w in 0 2; do
  echo "== warm-up $w s" >> $R/in-torch2.txt
  timeout 100 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind python3 docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/in_torch2.py \
    $g/build/libcoconet_layernorm.so - $w >> $R/in-torch2.txt 2>&1
  step "in torch, warm-up $w s" $?
done
kill $dm
cat $R/in-torch2.txt
awk 'NR <= 2 || NR % 4 == 0' $R/dmon.txt | head -40
job_end
