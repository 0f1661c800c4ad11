#!/usr/bin/env bash
# Session 57, call B (one H200), after the row kernels' 64-register bound (2b: __launch_bounds__(512, 2)):
#  1. workload norms, every row, alone on the machine;
#  2. Nsight Compute at T = H = 8192 f16: torch.compile's layer norm and RMSNorm kernels (with
#     Inductor's source) and the generated layer norm kernel as it is now;
#  3. GPU tests at one rank: every program with row kernels.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=480 bash docs/benchmarks/gpu/2026-11-29-1xH200-session57/job-b.sh (carry .gpu-bundle) -> $OUT/b.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin b "${LIMIT:-480}"
NCU=/usr/local/cuda/bin/ncu
COCONETC=.gpu-bundle/bin/coconetc
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
job_bench norms 1 norms 230
SECS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
g=/tmp/ncu-ln; rm -rf $g; $COCONETC compile tools/bench/programs/layernorm.cnet -o $g > /dev/null
( cmake -S $g -B $g/build -DNCCL_ROOT=$NCCL > $g/build.log 2>&1 && cmake --build $g/build -j 8 >> $g/build.log 2>&1 )
timeout 60 $NCU --clock-control none -k regex:_reg -s 3 -c 1 $SECS $g/build/layernorm_main -D T=8192 -D H=8192 --bench --iters 2 --warmup 3 > $R/ncu-layernorm.txt 2>&1
step "ncu layernorm" $?
cat > /tmp/tc_norms.py <<'PY'
import sys, torch
import torch.nn.functional as F
op = sys.argv[1]
T, H = 8192, 8192
x = torch.randn(T, H, device="cuda", dtype=torch.float16)
g = (1 + 0.1 * torch.randn(H, device="cuda")).half()
b = (0.1 * torch.randn(H, device="cuda")).half()
if op == "layernorm":
    f = lambda: F.layer_norm(x, (H,), g, b, 1e-5)
else:
    f = lambda: F.rms_norm(x, (H,), g, 1e-6)
f = torch.compile(f, dynamic=False, fullgraph=True)
for _ in range(6):
    f()
torch.cuda.synchronize()
PY
for p in layernorm rmsnorm; do
  rm -rf /tmp/ind-$p
  timeout 100 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$p $NCU --clock-control none -k regex:triton -s 3 -c 1 $SECS python3 /tmp/tc_norms.py $p > $R/ncu-$p-torch-compile.txt 2>&1
  step "ncu $p torch.compile" $?
  find /tmp/ind-$p -name "*.py" 2>/dev/null | xargs grep -l "@triton.jit" 2>/dev/null | head -3 | while read f; do echo "== $f"; cat "$f"; done > $R/torch-compile-$p-source.txt 2>&1
done
job_tests $(( $(left) - 15 )) GPU_TESTS_RANKS="1" GPU_TESTS_SHARE=2 \
  GPU_TESTS_ONLY="rowwise_types rowwise_types@* ops_mix ops_mix@* keepdim_norms keepdim_norms@* seq_parallel seq_parallel@*"
for f in $R/ncu-*.txt; do echo "=== $f"; grep -E "Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|Block Size|Grid Size|Waves Per SM" $f | head -14; done
job_end
