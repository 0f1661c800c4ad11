#!/usr/bin/env bash
# session 26 job C (1 GPU): Nsight Compute on the kernels behind the open figures:
# Adam's one-rank kernel and torch.compile's Adam kernel at 2^28; the runtime's GEMV at the
# 2-GPU decode shape per rank; the MoE step's GEMMs (with SM clock and power sampled).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
R=$OUT/s26c; mkdir -p $R
NCU=/usr/local/cuda/bin/ncu
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
export LD_LIBRARY_PATH="$NCCL/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | sort | uniq -c; $NCU --version | tail -1; git log -1 --format=%H 2>/dev/null; } > $R/header.txt
for d in adam decode_gemv moe_gemm; do
  ( cmake -S .gpu-bundle/gen/$d -B /tmp/b-$d -DNCCL_ROOT=$NCCL > /tmp/b-$d.log 2>&1 && cmake --build /tmp/b-$d -j 8 >> /tmp/b-$d.log 2>&1 ) || echo "build $d failed" >> $R/summary.txt &
done
wait
echo "built at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
SECS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
timeout 120 $NCU --clock-control none -k regex:k_5_f_device -s 3 -c 1 $SECS /tmp/b-adam/adam_main -D N=268435456 --bench --iters 2 --warmup 3 > $R/ncu-adam-solo.txt 2>&1
echo "ncu adam rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat > /tmp/tc_adam.py <<'PY'
import torch
torch.manual_seed(0)
n = 1 << 28
dev = "cuda"
w = torch.rand(n, device=dev) * 2 - 1
m = (torch.rand(n, device=dev) * 2 - 1) * 0.05
v = (torch.rand(n, device=dev) * 2 - 1).square_().add_(0.1).mul_(0.01)
g16 = ((torch.rand(n, device=dev) * 2 - 1)).half()
w16 = w.half()
def adam_update(w, m, v, w16, g16, P: int, t: int, lr: float, beta1: float, beta2: float, eps: float, wd: float):
    g = g16.float() / P
    m1 = beta1 * m + (1.0 - beta1) * g
    v1 = beta2 * v + (1.0 - beta2) * g * g
    mhat = m1 / (1.0 - beta1 ** t)
    vhat = v1 / (1.0 - beta2 ** t)
    w1 = w - lr * (mhat / (torch.sqrt(vhat) + eps) + wd * w)
    w.copy_(w1); m.copy_(m1); v.copy_(v1); w16.copy_(w1)
fn = torch.compile(adam_update, dynamic=False)
for _ in range(6):
    fn(w, m, v, w16, g16, 1, 10, 1e-3, 0.9, 0.999, 1e-8, 0.01)
torch.cuda.synchronize()
import glob, os
PY
timeout 200 env TORCHINDUCTOR_CACHE_DIR=/tmp/ind TORCHINDUCTOR_COMPILE_THREADS=1 $NCU --clock-control none -k regex:triton -s 3 -c 1 $SECS python3 /tmp/tc_adam.py > $R/ncu-adam-torch-compile.txt 2>&1
echo "ncu tc rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
find /tmp/ind -name "*.py" -newer /tmp/tc_adam.py 2>/dev/null | xargs grep -l "triton_" 2>/dev/null | head -3 | while read f; do echo "== $f"; cat "$f"; done > $R/torch-compile-kernel-source.txt 2>&1
timeout 90 $NCU --clock-control none -k regex:gemv -s 2 -c 2 $SECS /tmp/b-decode_gemv/decode_gemv_main -D H=8192 -D F=16384 --bench --iters 2 --warmup 2 > $R/ncu-gemv.txt 2>&1
echo "ncu gemv rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 100 > $R/moe-clocks.csv 2>&1 &
SMI=$!
timeout 60 /tmp/b-moe_gemm/moe_gemm_main -D X=2 -D C=1024 -D H=4096 -D F=8192 --bench --iters 400 --warmup 50 > $R/moe-bench.txt 2>&1
kill $SMI
timeout 90 $NCU --clock-control none -k regex:"gemm|sm90|gelu|Kernel" -s 10 -c 4 --section SpeedOfLight --section LaunchStats /tmp/b-moe_gemm/moe_gemm_main -D X=2 -D C=1024 -D H=4096 -D F=8192 --bench --iters 2 --warmup 2 > $R/ncu-moe.txt 2>&1
echo "ncu moe rc=$? at +$(( $(date +%s) - T0 )) s" >> $R/summary.txt
cat $R/summary.txt; head -c 1500 $R/ncu-adam-solo.txt
for f in $R/ncu-*.txt; do echo "=== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|SM Frequency|Compute \(SM\) Throughput|Block Size|Grid Size|^  [a-z_]" $f | head -60; done
cd $OUT && tar czf s26c.tgz s26c && rm -rf s26c
