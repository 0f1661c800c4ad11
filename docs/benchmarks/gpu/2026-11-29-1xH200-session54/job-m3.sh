#!/usr/bin/env bash
# Call m3 (1 H200): why the device groups' multi-rank kernels run slower than their one-rank forms
# over the same elements at one rank (m2: Adam 2^24 186 vs 130 us, LAMB 2^22 82-83 vs 62-65;
# every block that fits gained LAMB 4-5 us, Adam 0-3): Nsight Compute (clocks as run) of Adam's
# `f` at N = 2^24 and LAMB's `moments` and `apply` at 2^22, the one-rank form, the multi-rank form
# over a team of one (COCONET_MULTI_RANK_FORMS=1) and that with every block that fits
# (COCONET_DEV_BLOCKS=512), with DRAM bytes and instructions.
# Bundle: bash tools/gpu-bundle.sh (working tree of this session: barrierBlocks)
# Run: bash docs/benchmarks/gpu/2026-11-29-1xH200-session54/job-m3.sh (carry .gpu-bundle) -> $OUT/m3.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin m3 "${LIMIT:-400}"
NCU=/usr/local/cuda/bin/ncu
NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
$NCU --version | tail -1 >> "$R/header.txt"
for d in adam lamb; do
  ( cmake -S .gpu-bundle/gen/$d -B /tmp/b-$d -DNCCL_ROOT=$NCCL > /tmp/b-$d.log 2>&1 && cmake --build /tmp/b-$d -j 8 >> /tmp/b-$d.log 2>&1 ) || echo "build $d failed" >> "$R/header.txt" &
done
wait
step built 0
SECS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,lts__t_bytes.sum,smsp__cycles_active.avg"
prof() {  # NAME ENV KERNELS SKIP COUNT EXE ARGS...
  local name=$1 e=$2 k=$3 s=$4 c=$5; shift 5
  # shellcheck disable=SC2086
  { echo "== env $e $NCU --clock-control none -k regex:$k -s $s -c $c <sections> $*"
    timeout 100 env $e $NCU --clock-control none -k "regex:$k" -s "$s" -c "$c" $SECS "$@"; } > "$R/ncu-$name.txt" 2>&1
  step "ncu $name" $?
}
A="/tmp/b-adam/adam_main -D N=16777216 -D t=10 --bench --iters 2 --warmup 3"
L="/tmp/b-lamb/lamb_main -D N=4194304 -D t=10 --bench --iters 2 --warmup 3"
prof adam-solo "X=0" f_device 3 1 $A
prof adam-multi "COCONET_MULTI_RANK_FORMS=1" f_device 3 1 $A
prof adam-multi512 "COCONET_MULTI_RANK_FORMS=1 COCONET_DEV_BLOCKS=512" f_device 3 1 $A
prof lamb-solo "X=0" "moments_device|apply_device" 6 2 $L
prof lamb-multi "COCONET_MULTI_RANK_FORMS=1" "moments_device|apply_device" 6 2 $L
prof lamb-multi512 "COCONET_MULTI_RANK_FORMS=1 COCONET_DEV_BLOCKS=512" "moments_device|apply_device" 6 2 $L
for f in "$R"/ncu-*.txt; do echo "=== ${f##*/}"; grep -E "^  k_|Duration|DRAM Throughput|Registers Per|Grid Size|Achieved Occupancy|Issue Slots Busy|dram__bytes|smsp__inst_executed.sum|lts__t_bytes|Local" "$f" | head -40; done
job_end
