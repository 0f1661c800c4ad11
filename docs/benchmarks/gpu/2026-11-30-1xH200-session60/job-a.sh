#!/usr/bin/env bash
# Session 60 call a (1x H200): softmax after d600f04 (the maximum from the packs as stored, f16's
# exp the bare ex2.approx.ftz) against the code before it, by the generated drivers in turns
# (.gpu-bundle/ab/softmax-old: tools/bench/programs/softmax.cnet compiled by 42d8ae9;
# .gpu-bundle/ab/softmax-new: by d600f04), with the SASS instruction mix of each register kernel;
# the norms bench's softmax rows against torch.compile (rows taking turns); rows-prefetch-micro.cu
# (RMSNorm: the next row loaded while the current one is written) at H = 4096, 8192, 12288.
# Bundle: bash tools/gpu-bundle.sh, then the two ab folders (coconetc compile ... -o .gpu-bundle/ab/softmax-{old,new})
# Run: LIMIT=480 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-a.sh (carry .gpu-bundle) -> $OUT/a.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a "${LIMIT:-480}"
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
# the drivers in turns, 3 reps, every size
for H in 1024 4096 8192 12288; do
  timeout 100 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 3 --raw "$R/raw-ab-$H" \
    -D T=8192 -D H=$H .gpu-bundle/ab/softmax-old .gpu-bundle/ab/softmax-new >> "$R/ab.txt" 2>&1
  step "ab H=$H" $?
done
# SASS instruction mix of the f16 register kernel (k_1_y_reg<8>) in each build
for v in old new; do
  exe=.gpu-bundle/ab/softmax-$v/ab-build/softmax_main
  echo "== $v $exe" >> "$R/sass.txt"
  cuobjdump -sass "$exe" 2>/dev/null | awk '/Function : .*k_1_y_regILi8/{p=1;next} /Function :/{p=0} p' \
    | grep -oP '^\s+/\*[0-9a-f]{4}\*/\s+\K(@!?U?P[0-9T] )?[A-Z0-9_.]+' | sed 's/^@!\?U\?P[0-9T] //' | sed 's/\..*//' \
    | sort | uniq -c | sort -rn >> "$R/sass.txt"
done
step sass $?
# the prefetching RMSNorm micro
.gpu-bundle/bin/coconetc compile tools/bench/programs/rmsnorm.cnet -o /tmp/rms > /dev/null
nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/rms -I$NCCL/include -Itools/bench/gpu tools/bench/gpu/rows-prefetch-micro.cu \
  -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-prefetch > "$R/prefetch.txt" 2>&1
for H in 4096 8192 12288; do timeout 60 /tmp/rows-prefetch 8192 $H 3 >> "$R/prefetch.txt" 2>&1; done
step prefetch $?
job_bench softmax 1 norms $(( $(left) - 10 )) BUILD_ARGS="--programs softmax_f16,softmax_bf16" \
  BENCH_ARGS="--rows torch.compile,coconetc --interleave 10 --configs softmax_T=8192_H=1024_f16,softmax_T=8192_H=4096_f16,softmax_T=8192_H=8192_f16,softmax_T=8192_H=12288_f16,softmax_T=8192_H=4096_bf16,softmax_T=1024_H=131072_f16"
cat "$R/ab.txt" "$R/sass.txt" | head -80
grep -v "^ptxas\|^$" "$R/prefetch.txt" | tail -45
job_end
