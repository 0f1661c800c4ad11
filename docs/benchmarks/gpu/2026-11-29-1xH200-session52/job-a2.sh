#!/usr/bin/env bash
# Session 52, call a2 (1 H200): the runtime's guard (coconet_rt::pdlCompiled) on a GPU: the same
# generated LAMB (this compiler) built for sm_75 (-DCMAKE_CUDA_ARCHITECTURES=75, what the old
# CMakeLists.txt gave) and for sm_90a (its default now), each driver run at one rank: the sm_75 build
# says once that its kernels run one after another, the sm_90a build says nothing; both run.
# Bundle: job-a1.sh's (.gpu-bundle/ab/solo). Run: LIMIT=120 bash
# docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-a2.sh (kind nvidia-h200, carry .gpu-bundle).
#   -> $OUT/a2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a2 "${LIMIT:-120}"
A=.gpu-bundle/ab
NC=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
export LD_LIBRARY_PATH="$NC/lib:$LD_LIBRARY_PATH"
for arch in 75 90a; do
  ( cmake -S $A/solo -B /tmp/guard-$arch -DCMAKE_CUDA_ARCHITECTURES=$arch -DNCCL_ROOT=$NC > /tmp/guard-$arch.log 2>&1 &&
    cmake --build /tmp/guard-$arch -j 8 >> /tmp/guard-$arch.log 2>&1 ) &
done
wait
for arch in 75 90a; do
  { echo "== sm_$arch: $(grep -h CUDA_FLAGS /tmp/guard-$arch/CMakeFiles/lamb_objects.dir/flags.make)"
    timeout 40 /tmp/guard-$arch/lamb_main --spawn 1 -D N=4194304 -D t=10 --bench --iters 100 --warmup 20 2>&1 | tail -5
    echo "rc=$?"; } >> "$R/guard.txt"
done
step "guard" $?
cat "$R/guard.txt"
job_end
