#!/usr/bin/env bash
# Prepared in session 44 for the next session (not yet run; 4 GPUs, H200 for the targets):
# proto_prefetch.py (LAMB's `apply` asks L2 for its first chunk's w and u at entry). Before the
# call: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; then
#   python3 docs/benchmarks/gpu/2026-11-28-4xH200-session44/proto_prefetch.py .gpu-bundle/gen/lamb
#   python3 docs/benchmarks/gpu/2026-11-28-4xH200-session44/proto_prefetch.py .gpu-bundle/gen/lamb@chunks8
# and the stamped builds: build/coconetc compile samples/lamb/lamb.cnet -o /tmp/g0; cp -r /tmp/g0 /tmp/g1;
# python3 .../proto_prefetch.py /tmp/g1; python3 tools/bench/gpu/stamps.py /tmp/g0 .gpu-bundle/ab/p0;
# python3 tools/bench/gpu/stamps.py /tmp/g1 .gpu-bundle/ab/p1.
# (1) GPU tests of the patched builds at 2 and 4 ranks (memcheck at 2: prefetches within the slice);
# (2) the stamped drivers p0 / p1 at 2^24, 2^26, 2^28, 4 ranks. -> $OUT/pf
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin pf "${LIMIT:-450}"
job_tests 170 GPU_TESTS_ONLY="lamb lamb@chunks8" GPU_TESTS_RANKS="2 4" MEMCHECK_P2="lamb"
for n in 16777216 67108864 268435456; do
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 300 --warmup 50 --reps 3 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/p0 .gpu-bundle/ab/p1 > "$R/ab-$n.txt" 2>&1
  step "ab N=$n" $?
  cat "$R/ab-$n.txt"
done
job_end
