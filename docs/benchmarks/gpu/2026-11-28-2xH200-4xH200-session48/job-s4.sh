#!/usr/bin/env bash
# Session 48, call s4 (4 H200): where LAMB's step goes on main after the tail flags (a6c17be):
# stamped drivers (tools/bench/gpu/stamps.py, call 200 of 250) of the sample at 2^24, with the flags
# and with COCONET_TAIL_FLAGS=0 (a barrier per pull round), and at 2^26 with the flags.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; build/coconetc compile
# samples/lamb/lamb.cnet -o /tmp/cur && python3 tools/bench/gpu/stamps.py /tmp/cur .gpu-bundle/ab/curst
# Run: LIMIT=150 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/job-s4.sh (kind
# nvidia-h200-x4, carry .gpu-bundle).  -> $OUT/s4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s4 "${LIMIT:-150}"
st() {  # RAWDIR N ENV
  timeout $(( $(left) - 5 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 50 --reps 1 \
    --raw "$R/$1" --env "$3" -D N=$2 -D t=10 .gpu-bundle/ab/curst >> "$R/ab.txt" 2>&1
  step "stamps $*" $?
}
st raw24 16777216 ""
st raw24b 16777216 "COCONET_TAIL_FLAGS=0"
st raw26 67108864 ""
cat "$R/ab.txt"
for d in raw24 raw24b raw26; do for f in "$R"/$d/*.txt; do echo "== $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done; done > "$R/stamps.txt"
job_end
