#!/usr/bin/env bash
# Call m4 (1 H200): m3 found the multi-rank kernels' registers set their occupancy (Adam's `f` 108
# registers, one block per SM, 25% achieved occupancy against the one-rank form's 64 and 47.5%).
# With barrierBlocks a kernel asking two blocks per SM (tune(f, occupancy = 2)) can now also run
# twice the blocks without roles (COCONET_DEV_BLOCKS=512). Drivers at one rank in the multi-rank
# forms: Adam and Adam with occupancy 2 on `f`, LAMB and LAMB with occupancy 2 on both kernels,
# at 128 blocks (default) and every block that fits, N = 2^22 and 2^24, three reps interleaved;
# then Nsight Compute of the two occupancy-2 builds with every block.
# Bundle: bash tools/gpu-bundle.sh; .gpu-bundle/ab/adam@occ2 (adam.sched + tune(f, occupancy = 2)),
#   .gpu-bundle/ab/lamb@occ2both (lamb.sched without occupancy = auto + occupancy = 2 on both)
# Run: bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m4.sh (carry .gpu-bundle) -> $OUT/m4.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m4 "${LIMIT:-400}"
G=.gpu-bundle/gen A=.gpu-bundle/ab
M="COCONET_MULTI_RANK_FORMS=1"
for n in 4194304 16777216; do
  timeout 150 bash tools/bench/gpu/driver-ab.sh --ranks 1 --iters 200 --warmup 50 --reps 3 \
    --env "$M;$M COCONET_DEV_BLOCKS=512" -D N=$n -D t=10 $G/adam $A/adam@occ2 $G/lamb $A/lamb@occ2both >> "$R/ab.txt" 2>&1
  step "drivers N=$n" $?
done
NCU=/usr/local/cuda/bin/ncu
SECS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum"
for x in "adam@occ2 f_device 16777216 3 1" "lamb@occ2both moments_device|apply_device 4194304 6 2"; do
  set -- $x
  { echo "== env $M COCONET_DEV_BLOCKS=512 $NCU --clock-control none -k regex:$2 -s $4 -c $5 <sections> $A/$1/ab-build/*_main -D N=$3 -D t=10 --bench --iters 2 --warmup 3"
    timeout 100 env $M COCONET_DEV_BLOCKS=512 $NCU --clock-control none -k "regex:$2" -s "$4" -c "$5" $SECS $(ls $A/$1/ab-build/*_main) -D N=$3 -D t=10 --bench --iters 2 --warmup 3; } > "$R/ncu-$1.txt" 2>&1
  step "ncu $1" $?
done
cat "$R/ab.txt"
for f in "$R"/ncu-*.txt; do echo "=== ${f##*/}"; grep -E "^  k_|Duration|Registers Per|Grid Size|Achieved Occupancy|dram__bytes|smsp__inst_executed.sum|Local Memory Spilling Requests  " "$f" | head -40; done
job_end
