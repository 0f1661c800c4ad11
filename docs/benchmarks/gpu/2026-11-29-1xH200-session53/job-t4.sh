#!/usr/bin/env bash
# Call t4 (1 H200): (1) is LAMB's kernel boundary (`apply`'s block 0 past its PDL wait 3.2-3.7 us
# after `moments`' last block, against pdl-micro's 0.7) the same measure as the micro's? The micro
# takes the earliest of all its secondary's blocks past the wait; stamps.py took block 0's. With
# stamps.py's new spreads (8a18633: every block's time past the wait, 52/53, and latest entry, 55),
# stamps of LAMB's multi-rank kernels at one rank (proto_p1.py, p1st) and of the one-rank form
# (solost), N = 2^22, call 200 of 250, two runs each; pdl-micro's regs form once beside them.
# (2) racecheck at one rank (SANITIZE_TOOLS=racecheck, 5a854b6) of programs whose kernels are
# launched dependent and that t3 did not racecheck, as time allows.
# Bundle: GPU_BUNDLE_ONLY="lamb allreduces decode_gemv fold_local megatron_row norm_clip
#   scalar_chain" bash tools/gpu-bundle.sh; in .gpu-bundle/ab: build/coconetc compile
#   samples/lamb/lamb.cnet -o solo; proto_p1.py solo p1 (session 52's); stamps.py p1 p1st;
#   stamps.py solo solost.
# Run: LIMIT=330 bash docs/benchmarks/gpu/2026-11-29-1xH200-session53/job-t4.sh (carry .gpu-bundle) -> $OUT/t4.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin t4 "${LIMIT:-330}"
bash tools/gpu-unpack.sh
A=.gpu-bundle/ab
job_stamps --ranks 1 --reps 2 p1st 90 $A/p1st 4194304
job_stamps --ranks 1 --reps 2 solost 70 $A/solost 4194304
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
{ echo "== nvcc -O3 -std=c++17 -arch=sm_90a -I\$NC/include tools/bench/gpu/pdl-micro.cu -L\$NC/lib -l:libnccl.so.2 -o /tmp/pdl-micro"
  LD_LIBRARY_PATH="$NC/lib:${LD_LIBRARY_PATH:-}" /usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a -I"$NC/include" \
    tools/bench/gpu/pdl-micro.cu -L"$NC/lib" -l:libnccl.so.2 -o /tmp/pdl-micro 2>&1
  echo "== /tmp/pdl-micro 32 10 60 50 0 0 1"; LD_LIBRARY_PATH="$NC/lib:${LD_LIBRARY_PATH:-}" timeout 30 /tmp/pdl-micro 32 10 60 50 0 0 1; } > "$R/pdl-micro.txt" 2>&1
step "pdl-micro" $?
job_tests $(( $(left) - 10 )) GPU_TESTS_ONLY="allreduces decode_gemv fold_local megatron_row norm_clip scalar_chain" \
  GPU_TESTS_RANKS=1 GPU_TESTS_DRIVERS=0 SANITIZE=1 SANITIZE_TOOLS=racecheck
cat "$R/ab.txt" "$R/pdl-micro.txt"
grep -h "kernel [01] block 0" "$R/stamps.txt"
job_end
