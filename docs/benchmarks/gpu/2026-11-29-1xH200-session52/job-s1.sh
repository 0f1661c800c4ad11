#!/usr/bin/env bash
# Session 52, call s1 (1 H200): LAMB's multi-rank kernels at one rank (proto_p1.py: the roles, the
# hand-over counters, the norms' chain, the tail's flags; 4 rounds, `moments` at one block per SM, as
# on 4 ranks at N = 2^24), N = 2^22 (one rank's slice of 2^24 on four): (1) the drivers' medians
# against the product's one-rank form; (2) %globaltimer stamps (tools/bench/gpu/stamps.py; call 200 of
# 250, three runs each) of p1, of p1 whose tail workers publish a chunk with a GPU-scope fence instead
# of a system one (p1nf), and of the one-rank form.
# Bundle: GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh; then in .gpu-bundle/ab:
#   build/coconetc compile samples/lamb/lamb.cnet -o solo; proto_p1.py solo p1;
#   stamps.py p1 p1st; stamps.py solo solost; p1nfst = p1st with workerDone's
#   __threadfence_system() made __threadfence().
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-1xH200-session52/job-s1.sh (kind nvidia-h200,
# carry .gpu-bundle).  -> $OUT/s1
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s1 "${LIMIT:-300}"
A=.gpu-bundle/ab
timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 300 --warmup 50 --reps 3 \
  -D N=4194304 -D t=10 $A/solo $A/p1 >> "$R/ab.txt" 2>&1
step "drivers" $?
for v in p1st p1nfst solost; do
  timeout $(( ($(left) - 10) / 2 )) bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 3 \
    --raw "$R/raw-$v" -D N=4194304 -D t=10 $A/$v >> "$R/ab.txt" 2>&1
  step "stamps $v" $?
  for f in "$R/raw-$v"/*.txt; do echo "== $v $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
done
cat "$R/ab.txt"
cat "$R/stamps.txt"
job_end
