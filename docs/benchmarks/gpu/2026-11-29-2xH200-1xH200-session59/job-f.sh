#!/usr/bin/env bash
# Call f (session 59), one GPU: in a plain process the generated layer norm kernel takes 72.9 us
# back to back, its own program's step too (call e), while the bench (a PyTorch process) times
# 80.4; call d showed a shared memory carveout preference of 50-100% costs ~10 us. Here the micro
# runs inside a PyTorch process (in_torch.py) before and after eager and torch.compile'd layer
# norms, with the context's cache configuration printed.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=200 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-f.sh (carry .gpu-bundle) -> $OUT/f.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin f "${LIMIT:-200}"
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
export LD_LIBRARY_PATH=$NCCL/lib:$LD_LIBRARY_PATH
g=/tmp/ln; rm -rf $g; .gpu-bundle/bin/coconetc compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -shared -Xcompiler -fPIC -DROWS_B2B_SHARED -Dmain=rows_b2b_main -I$g -I$NCCL/include -Itools/bench/gpu \
  tools/bench/gpu/rows-b2b-micro.cu -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b.so > $R/build.log 2>&1
step "build micro" $?
timeout 150 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind python3 docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/in_torch.py /tmp/rows-b2b.so \
  > $R/in-torch.txt 2>&1
step "in torch" $?
grep -v "gap\|occ[246]" $R/in-torch.txt
job_end
