#!/usr/bin/env bash
# Session 57, call A (one H200): the row-wise kernels.
#  1. workload norms (every row, 8192 rows): 5cffd82 (16-bit pairs converted together, softmax's
#     product by the reciprocal sum) and softmax's exp2f for 16-bit results, both unmeasured;
#  2. an A/B of the generated layernorm / rmsnorm / softmax drivers (f16, T = 8192, H = 4096, 8192,
#     12288; `--bench --iters 200`, medians, event-timed around one program run) as generated
#     (`base`), with the row kernel's bounds __launch_bounds__(256, 4) (`lb4`: at most 64
#     registers; layer norm's kernel takes 103 as generated, 4 blocks of 128 threads an SM) and
#     with the grid capped at 8 blocks an SM (`persist`: each block loops over rows);
#  3. Nsight Compute on layer norm and RMSNorm at H = 8192: the generated kernels and
#     torch.compile's (with Inductor's source of its kernels);
#  4. GPU tests at one rank with sanitizers: rowwise_types (never run on a GPU), ops_mix, keepdim_norms.
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=570 bash docs/benchmarks/gpu/2026-11-29-1xH200-session57/job-a.sh (carry .gpu-bundle) -> $OUT/a.tgz
# As run (bundle 13bd4b7). Its bug: CC named coconetc, and Inductor compiles its C++ with $CC, so
# torch.compile failed in 1 and 3 (job-b.sh names it COCONETC); 1 also timed out at 200 s, 2's
# builds running beside it.
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a "${LIMIT:-570}"
NCU=/usr/local/cuda/bin/ncu
CC=.gpu-bundle/bin/coconetc
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
# 2's builds, in the background while 1 runs (16 cores; the bench builds its own programs first)
(
  for p in layernorm rmsnorm softmax; do
    g=/tmp/ab/$p; rm -rf $g; $CC compile tools/bench/programs/$p.cnet -o $g/base > /dev/null
    cp -r $g/base $g/lb4; sed -i 's/__launch_bounds__(512)/__launch_bounds__(256, 4)/' $g/lb4/$p.cu
    cp -r $g/base $g/persist; sed -i 's/std::min<long long>(groups, 1 << 20)/std::min<long long>(groups, 132 * 8)/' $g/persist/$p.cu
    for v in base lb4 persist; do
      ( cmake -S $g/$v -B $g/$v/build -DNCCL_ROOT=$NCCL -DCMAKE_CUDA_FLAGS="-Xptxas -v" > $g/$v/build.log 2>&1 &&
        cmake --build $g/$v/build -j 4 >> $g/$v/build.log 2>&1 ) || echo "build $p $v failed" &
    done
  done
  wait
) > $R/ab-build.txt 2>&1 &
ABB=$!
job_bench norms 1 norms 200
wait $ABB
step "ab builds" $?
for p in layernorm rmsnorm softmax; do
  for v in base lb4 persist; do
    grep -A3 "Compiling entry.*_reg" /tmp/ab/$p/$v/build.log | grep -E "Compiling|Used|spill" | sed "s/^/$p $v: /" >> $R/ab-ptxas.txt
    for H in 4096 8192 12288; do
      r=$(timeout 30 /tmp/ab/$p/$v/build/${p}_main -D T=8192 -D H=$H --bench --iters 200 --warmup 50 2>&1 | tail -1)
      echo "$p $v H=$H $r" >> $R/ab.txt
    done
  done
done
step "ab runs" $?
SECS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for p in layernorm rmsnorm; do
  timeout 60 $NCU --clock-control none -k regex:_reg -s 3 -c 1 $SECS /tmp/ab/$p/base/build/${p}_main -D T=8192 -D H=8192 --bench --iters 2 --warmup 3 > $R/ncu-$p.txt 2>&1
  step "ncu $p" $?
done
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
  timeout 150 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$p TORCHINDUCTOR_COMPILE_THREADS=1 $NCU --clock-control none -k regex:triton -s 3 -c 1 $SECS python3 /tmp/tc_norms.py $p > $R/ncu-$p-torch-compile.txt 2>&1
  step "ncu $p torch.compile" $?
  find /tmp/ind-$p -name "*.py" 2>/dev/null | xargs grep -l "@triton.jit" 2>/dev/null | head -3 | while read f; do echo "== $f"; cat "$f"; done > $R/torch-compile-$p-source.txt 2>&1
done
job_tests $(( $(left) - 15 )) GPU_TESTS_RANKS="1" GPU_TESTS_SHARE=2 SANITIZE=1 \
  GPU_TESTS_ONLY="rowwise_types rowwise_types@* ops_mix ops_mix@* keepdim_norms keepdim_norms@*"
cat $R/ab.txt $R/ab-ptxas.txt
for f in $R/ncu-*.txt; do echo "=== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|Block Size|Grid Size|Waves Per SM|L2 Hit|Stall|One or More" $f | head -40; done
job_end
