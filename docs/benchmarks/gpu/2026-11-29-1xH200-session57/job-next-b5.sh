#!/usr/bin/env bash
# Not run yet (session 57): why the generated layer norm kernel takes 67.7 us alone (Nsight
# Compute, caches flushed) but ~82 us back to back, where torch.compile's takes 69.4 / 71.5.
# Hypothesis: alone, ~40 MB of the kernel's output stay dirty in L2 when it ends and are not
# counted; Inductor's evict_last loads of x push its output out of L2 during its own run. Nsight
# Compute with the caches left as the previous launch leaves them (--cache-control none) and the
# application replayed (no memory save/restore between passes), DRAM bytes read and written per
# launch, for ours and torch.compile's, T = H = 8192 f16; then the same with the caches flushed.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-1xH200-session57/job-next-b5.sh (carry .gpu-bundle) -> $OUT/nb5.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin nb5 "${LIMIT:-300}"
NCU=/usr/local/cuda/bin/ncu
COCONETC=.gpu-bundle/bin/coconetc
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
g=/tmp/ncu-ln; rm -rf $g; $COCONETC compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $g/build.log 2>&1 && cmake --build $g/build -j 8 >> $g/build.log 2>&1 )
M="--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
cat > /tmp/tc_ln.py <<'PY'
import torch
import torch.nn.functional as F
T, H = 8192, 8192
x = torch.randn(T, H, device="cuda", dtype=torch.float16)
g = (1 + 0.1 * torch.randn(H, device="cuda")).half()
b = (0.1 * torch.randn(H, device="cuda")).half()
f = torch.compile(lambda: F.layer_norm(x, (H,), g, b, 1e-5), dynamic=False, fullgraph=True)
for _ in range(12):
    f()
torch.cuda.synchronize()
PY
for cc in none all; do
  timeout 80 $NCU --clock-control none --cache-control $cc --replay-mode application -k regex:_reg -s 6 -c 3 $M \
    $g/build/layernorm_main -D T=8192 -D H=8192 --bench --iters 4 --warmup 6 > $R/ncu-ours-$cc.txt 2>&1
  step "ncu ours $cc" $?
  timeout 120 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind $NCU --clock-control none --cache-control $cc --replay-mode application \
    -k regex:triton -s 6 -c 3 $M python3 /tmp/tc_ln.py > $R/ncu-tc-$cc.txt 2>&1
  step "ncu torch.compile $cc" $?
done
for f in $R/ncu-*.txt; do echo "=== $f"; grep -E "gpu__time|dram__bytes|lts__t_sectors|dram__throughput" $f; done
job_end
