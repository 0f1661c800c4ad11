#!/usr/bin/env bash
# Call g (session 59), one GPU: inside a PyTorch process the micro's launches take 72.5-72.7 us back
# to back (call f), the bench's coconetc row 80.4 (call b). Here the bench's own path
# (in_torch2.py: the CMake-built library through coconet.py, torch tensors made as the bench makes
# them) timed as bench.py times it, against torch.compile's and the micro's in the same process.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-g.sh (carry .gpu-bundle) -> $OUT/g.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin g "${LIMIT:-200}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
export LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH
g=/tmp/ln; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $R/build-lib.log 2>&1 && cmake --build $g/build -j 8 >> $R/build-lib.log 2>&1 )
step "build library" $?
nvcc -std=c++17 -O3 -arch=sm_90a -shared -Xcompiler -fPIC -DROWS_B2B_SHARED -Dmain=rows_b2b_main -I$g -I$NCCL/include \
  -Itools/bench/gpu tools/bench/gpu/rows-b2b-micro.cu -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b.so > $R/build.log 2>&1
step "build micro" $?
timeout 150 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind python3 docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/in_torch2.py \
  $g/build/libcoconet_layernorm.so /tmp/rows-b2b.so > $R/in-torch2.txt 2>&1
step "in torch" $?
grep -v "gap\|occ[246]\|carve\|split2\|alt" $R/in-torch2.txt | tail -40
job_end
