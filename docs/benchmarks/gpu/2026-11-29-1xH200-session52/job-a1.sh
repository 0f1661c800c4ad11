#!/usr/bin/env bash
# Session 52, call a1 (1 H200): the generated builds for sm_90a (the CMakeLists.txt fix: before it,
# CMake compiled every generated program for nvcc's default sm_75, whose PTX ran on H200 without
# programmatic dependent launch). (1) the compile flags of one build; (2) GPU tests at one GPU of
# the bundled programs (their kernels now launched early for real); (3) stamps of proto_p1's kernels
# (one rank, N = 2^22) built for sm_90a; the drivers' medians of the one-rank form and of p1, each
# built for sm_75 (the old CMakeLists.txt: -old) and for sm_90a; (4) the bench at one GPU, Adam and
# LAMB 2^24..2^28: coconetc (sm_90a) against coconetc_prev (the same code by the compiler before the
# fix: sm_75), torch.compile and eager, rows taking turns.
# Bundle: GPU_BUNDLE_ONLY="adam lamb sgd megatron_row decode_gemv norm_clip fold_local reduce_chains
#   batched_slices scalar_chain tail_fold allreduces" bash tools/gpu-bundle.sh; .gpu-bundle/ab/ with
#   coconetc-prev (ef43cba's, stripped), solo / p1 / p1st / solost (this compiler, proto_p1.py,
#   stamps.py) and solo-old / p1-old / p1st-old (job-s1.sh's, made by ef43cba's compiler).
# Run: LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-a1.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/a1
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin a1 "${LIMIT:-560}"
A=.gpu-bundle/ab
job_tests 200 GPU_TESTS_RANKS="1"
for d in solo p1; do
  cmake -S $A/$d -B /tmp/flags-$d > /dev/null 2>&1
  echo "$d: $(grep -h CUDA_FLAGS /tmp/flags-$d/CMakeFiles/lamb_objects.dir/flags.make)" >> "$R/flags.txt"
done
timeout 120 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 300 --warmup 50 --reps 2 \
  -D N=4194304 -D t=10 $A/solo-old $A/solo $A/p1-old $A/p1 >> "$R/ab.txt" 2>&1
step "drivers" $?
for v in p1st solost; do
  timeout 60 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 2 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
job_bench optim1 1 adam,lamb $(( $(left) - 5 )) \
  BENCH_COMPILER_ROWS="prev=.gpu-bundle/ab/coconetc-prev" \
  BENCH_ARGS="--configs N=2^24,N=2^26,N=2^28 --rows coconetc,coconetc_prev,torch.compile,eager --interleave 10"
cat "$R/flags.txt" "$R/ab.txt"
grep -h "kernel 1 block 0\|kernel 0 block 0" "$R/stamps.txt"
job_end
