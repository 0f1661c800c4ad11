#!/usr/bin/env bash
# Not run yet (session 54). proto_v4.py (this folder): the multi-rank kernels at 4 elements a unit
# and two blocks per SM, which ptxas (nvcc 13.0, sm_90a) keeps at 64 registers with 0-16 bytes of
# spills (Adam's `f` 108 -> 64, LAMB's `moments` 122 -> 64, `apply` 64 without its spills) where
# they ran one block per SM (m3). (1) correctness: the GPU tests of the rewritten builds (Adam, LAMB
# and their fixed-round variants, SGD) with the @big vectors, at one rank in the multi-rank forms
# (GPU_TESTS_MULTI_AT_ONE=1) or, with RANKS="2 4", at those ranks; (2) drivers, rewritten against
# not, with every block that fits (COCONET_DEV_BLOCKS=512) and without, N = 2^22, 2^24, 2^26.
# One GPU: the multi-rank forms at one rank (COCONET_MULTI_RANK_FORMS=1); more: RANKS="2 4".
# Bundle: bash tools/gpu-bundle.sh (the rewrite runs on the GPU machine, after unpacking)
# Run: [RANKS="2 4"] LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-next-v.sh (carry .gpu-bundle) -> $OUT/v.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin v "${LIMIT:-560}"
RANKS=${RANKS:-1}
G=.gpu-bundle/gen
builds="adam adam@chunks5 adam@split5 lamb lamb@chunks3 lamb@split3 lamb@chunks4 sgd"
for b in $builds; do
  python3 docs/benchmarks/gpu/2026-11-29-1xH200-session54/proto_v4.py $G/$b $G/${b}v4 >> "$R/proto.txt" 2>&1
done
# (gen/adam -> gen/adamv4: "adamv4" is a program name to run.sh; give it adam's vectors' name)
for b in adam lamb sgd; do mv $G/${b}v4 $G/$b@v4; done
only=$(for b in $builds; do case $b in *@*) echo -n "${b}v4 " ;; *) echo -n "$b@v4 " ;; esac; done)
step proto 0
if [ "$RANKS" = 1 ]; then M="COCONET_MULTI_RANK_FORMS=1"; else M=""; fi
job_tests 200 GPU_TESTS_RANKS="$RANKS" GPU_TESTS_MULTI_AT_ONE=1 SANITIZE=0 GPU_TESTS_SETS="adam@big lamb@big" GPU_TESTS_ONLY="$only"
for n in 4194304 16777216 67108864; do
  [ "$(left)" -gt 60 ] || break
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks "$RANKS" --iters 200 --warmup 50 --reps 3 \
    --env "$M;$M COCONET_DEV_BLOCKS=512" -D N=$n -D t=10 $G/adam $G/adam@v4 $G/lamb $G/lamb@v4 >> "$R/ab.txt" 2>&1
  step "drivers N=$n" $?
done
cat "$R/proto.txt" "$R/ab.txt"
job_end
