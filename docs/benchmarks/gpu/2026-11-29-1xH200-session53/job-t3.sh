#!/usr/bin/env bash
# Call t3 (1 H200): (1) README's main job (tools/main-job.sh: the flagship through the compiler,
# its nvcc build for sm_90a, a checked run on the GPU) with the bundled coconetc as build/coconetc;
# (2) compute-sanitizer at one rank of the builds whose kernels are launched dependent (PDL) in
# their one-rank form: memcheck of sgd and tail_fold (t1/t2 did not reach them), then racecheck of
# lamb, adam, sgd, tail_fold; (3) the driver's --bench warm-up (4247386): Adam N = 2^24 by its
# driver with the default (5 runs, then about 1 s) against --warmup 5 (the old default), three
# times each, taking turns.
# Bundle: bash tools/gpu-bundle.sh at 4247386 or later.
# Run: LIMIT=420 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-t3.sh (carry .gpu-bundle) -> $OUT/t3.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t3 "${LIMIT:-420}"
bash tools/gpu-unpack.sh
mkdir -p build && cp .gpu-bundle/bin/coconetc build/coconetc
LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 200 bash tools/main-job.sh > "$R/main-job.log" 2>&1
step main-job $?
tail -n 8 "$R/main-job.log"
grep -h 'CUDA_FLAGS' build/main-job/cuda/build/CMakeFiles/*/flags.make >> "$R/main-job.log" 2>/dev/null
job_tests $(( $(left) - 60 )) GPU_TESTS_ONLY="sgd tail_fold lamb adam" GPU_TESTS_RANKS=1 GPU_TESTS_DRIVERS=0 SANITIZE=1
exe=.gpu-bundle/gen/adam/build/adam_main
for rep in 1 2 3; do
  for w in default old; do
    args=(); [ "$w" = old ] && args=(--warmup 5)
    echo "$w rep $rep: $(timeout 20 "$exe" --spawn 1 -D N=2^24 -D t=10 --bench "${args[@]}" 2>&1 | tail -n 1)" >> "$R/warmup.txt"
  done
done
step warmup $?
cat "$R/warmup.txt"
job_end
