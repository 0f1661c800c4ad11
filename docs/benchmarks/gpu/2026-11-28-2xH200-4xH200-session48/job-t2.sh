#!/usr/bin/env bash
# Session 48, call t2 (2 H200): GPU tests of the claimed pushes with the tile's units from the
# environment (edccdb7: the kernel's `claimed` carries them), forced on 2 ranks: LAMB's movers
# builds with COCONET_CLAIMED_PUSH=3 (tiles of 3 units: not a power of two) and =1, lamb's vectors
# and C interfaces, and the @many set (192 workers) with =3.
# Bundle: bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/prep-a4.sh (its gen/ is used).
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-28-2xH200-4xH200-session48/job-t2.sh (kind
# nvidia-h200-x2, carry .gpu-bundle).  -> $OUT/t2
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t2 "${LIMIT:-300}"
only="lamb lamb@chunks8 lamb@split3 lamb@split16 lamb@taper lamb@taperends lamb@occ2"
job_tests $(( $(left) / 2 )) COCONET_CLAIMED_PUSH=3 GPU_TESTS_RANKS="2" GPU_TESTS_SETS="lamb@many" GPU_TESTS_ONLY="$only"
mv "$R/gpu-tests" "$R/gpu-tests-u3"; mv "$R/tests.log" "$R/tests-u3.log"
job_tests $(( $(left) - 8 )) COCONET_CLAIMED_PUSH=1 GPU_TESTS_RANKS="2" GPU_TESTS_SETS="none" GPU_TESTS_ONLY="$only"
mv "$R/gpu-tests" "$R/gpu-tests-u1"; mv "$R/tests.log" "$R/tests-u1.log"
for u in 3 1; do echo "units $u:"; grep -v ": ok" "$R/gpu-tests-u$u/gpu-results.txt" | tail -n 12; grep -c ": ok" "$R/gpu-tests-u$u/gpu-results.txt"; done
job_end
