#!/usr/bin/env bash
# Call b (session 59), one GPU: workload norms' long rows (softmax over 131072 at T = 1, 64, 1024;
# layer norm and RMSNorm over 65536 at T = 8 and 1024; both at T = 8192, H = 8192 and 12288, where
# torch.compile's looped kernel led the register kernel in session 57) with rows coconetc,
# coconetc_long (the packed one-block kernel), coconetc_split4/8; then session 57's job-next-b5
# question: DRAM bytes per launch of our layer norm and torch.compile's at T = H = 8192 f16, with
# the caches as the previous launch leaves them and flushed (Nsight Compute, application replay).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=500 bash docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/job-b.sh (carry .gpu-bundle) -> $OUT/b.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin b "${LIMIT:-500}"
job_bench norms 1 norms $(( $(left) - 230 )) BUILD_ARGS="--programs softmax_f16,layernorm_f16,rmsnorm_f16" \
  BENCH_ARGS="--configs softmax_T=1_H=131072_f16,softmax_T=64_H=131072_f16,softmax_T=1024_H=131072_f16,layernorm_T=8_H=65536_f16,layernorm_T=1024_H=65536_f16,rmsnorm_T=8_H=65536_f16,rmsnorm_T=1024_H=65536_f16,layernorm_T=8192_H=8192_f16,layernorm_T=8192_H=12288_f16,rmsnorm_T=8192_H=8192_f16,rmsnorm_T=8192_H=12288_f16"
NCU=/usr/local/cuda/bin/ncu
COCONETC=.gpu-bundle/bin/coconetc
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
g=/tmp/ncu-ln; rm -rf $g; $COCONETC compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $g/build.log 2>&1 && cmake --build $g/build -j 8 >> $g/build.log 2>&1 )
step "build layernorm" $?
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
  timeout 60 $NCU --clock-control none --cache-control $cc --replay-mode application -k regex:_reg -s 6 -c 3 $M \
    $g/build/layernorm_main -D T=8192 -D H=8192 --bench --iters 4 --warmup 6 > $R/ncu-ours-$cc.txt 2>&1
  step "ncu ours $cc" $?
  timeout 90 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind $NCU --clock-control none --cache-control $cc --replay-mode application \
    -k regex:triton -s 6 -c 3 $M python3 /tmp/tc_ln.py > $R/ncu-tc-$cc.txt 2>&1
  step "ncu torch.compile $cc" $?
done
for f in $R/ncu-*.txt; do echo "=== $f"; grep -E "gpu__time|dram__bytes|lts__t_sectors|dram__throughput|==PROF==|==ERROR==" $f | head -20; done
job_end
