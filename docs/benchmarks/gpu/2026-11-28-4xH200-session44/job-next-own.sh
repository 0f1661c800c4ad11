#!/usr/bin/env bash
# Prepared in session 44 for the next session (not yet run; 4 GPUs, H200 for the targets): branch
# own-slice (dd5aaf7: a reduce-scatter's push leaves this rank's own slice in its input and the
# sums read it there, coconet_rt::OwnSlots; same sums in the same order, 2 bytes per element less
# written and read through HBM; every device-API reduce-scatter: Adam, LAMB, the allreduces,
# Megatron's groups). Before the call, on the branch:
#   git checkout own-slice && ninja -C build
#   GPU_BUNDLE_ONLY="adam lamb allreduces megatron_row sgd pipeline norm_clip" bash tools/gpu-bundle.sh
#   for p in lamb adam; do build/coconetc compile samples/$p/$p.cnet -o .gpu-bundle/ab/own-$p; done
# and from main's build (git checkout main && ninja -C build; then back):
#   for p in lamb adam; do build/coconetc compile samples/$p/$p.cnet -o .gpu-bundle/ab/main-$p; done
# (1) GPU tests of the branch's builds at 2 and 4 ranks, memcheck at 2 for the defaults;
# (2) drivers main-X against own-X at 2^24, 2^26, 2^28, 4 ranks. If (1) passes and (2) gains,
# merge the branch, then bench LAMB and Adam (run.sh) for the rows. -> $OUT/own
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin own "${LIMIT:-560}"
job_tests 330 GPU_TESTS_RANKS="2 4" MEMCHECK_P2="adam lamb allreduces megatron_row" \
  GPU_TESTS_ONLY="adam adam@* lamb lamb@chunks8 lamb@taper allreduces allreduces@* megatron_row megatron_row@two megatron_row@pipe sgd pipeline norm_clip"
for n in 16777216 67108864 268435456; do
  timeout $(( $(left) - 10 )) bash tools/bench/gpu/driver-ab.sh --ranks 4 --iters 200 --warmup 30 --reps 3 \
    --raw "$R/raw-$n" -D N=$n -D t=10 .gpu-bundle/ab/main-lamb .gpu-bundle/ab/own-lamb \
    .gpu-bundle/ab/main-adam .gpu-bundle/ab/own-adam > "$R/ab-$n.txt" 2>&1
  step "ab N=$n" $?
  cat "$R/ab-$n.txt"
done
job_end
