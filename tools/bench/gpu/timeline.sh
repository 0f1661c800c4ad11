#!/usr/bin/env bash
# Event timelines of one call of a generated program, per rank: where its stages, copy-engine
# rounds and overlap chunks start and end on each stream (`coconetc compile --timeline`). Run on
# a GPU machine from the repository root after tools/gpu-bundle.sh (it uses the bundled
# coconetc). Writes $OUT/timeline-NAME.txt (or ./timeline-NAME.txt): a header naming the GPU,
# the date and the command, the driver's --bench line (median of the timed calls, where the
# timeline's call is one of them) and the timeline lines of every rank.
#
# Usage: bash tools/bench/gpu/timeline.sh NAME PROGRAM.cnet SCHEDULE|- KNOBS RANKS [NAME=VALUE ...]
#   NAME      the output's name
#   SCHEDULE  the schedule (- for none); KNOBS: lines appended to it ("" for none)
#   RANKS     processes (one GPU each)
#   NAME=VALUE  the program's sizes and scalars (-D of the driver)
# COCONET_TIMELINE_CALL picks the call (default 10: the driver's 5 warm-up calls, then the 5th
# timed one). TIMELINE_WARMUP=K makes the driver warm up for K calls instead of 5 (and the
# default call K + 5), so that the timeline shows the clocks a sustained load settles to (a few
# hundred calls of a millisecond or more).
# TIMELINE_WORK=DIR keeps the build in DIR (reused when DIR holds a built driver) and
# TIMELINE_BUILD_ONLY=1 stops after the build: several timelines can build at once, then run
# one after another.
# Example: bash tools/bench/gpu/timeline.sh adam_ce samples/adam/adam.cnet samples/adam/adam.sched \
#            'tune(f, algorithm = copy_engines);' 4 N=268435456 t=1
set -euo pipefail
[ $# -ge 5 ] || { sed -n '9,17p' "$0"; exit 2; }
name=$1 prog=$2 sched=$3 knobs=$4 ranks=$5
shift 5
b=.gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -n 1 || true)
export NCCL_ROOT="${NCCL_ROOT:-$NC}"
if [ -n "${TIMELINE_WORK:-}" ]; then
  work=$TIMELINE_WORK; mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
s="$work/prog.sched"
if [ "$sched" = - ]; then : > "$s"; else cp "$sched" "$s"; fi
[ -z "$knobs" ] || printf '\n%s\n' "$knobs" >> "$s"
flags=(--schedule "$s")
[ -s "$s" ] || flags=(--schedule none)
if ! ls "$work"/gen/build/*_main > /dev/null 2>&1; then
  LD_LIBRARY_PATH="$b/lib" "$b/bin/coconetc" compile "$prog" "${flags[@]}" --timeline -o "$work/gen" > /dev/null
  { cmake -S "$work/gen" -B "$work/gen/build" -DNCCL_ROOT="$NCCL_ROOT" && cmake --build "$work/gen/build" -j 8; } > "$work/build.log" 2>&1 ||
    { echo "build FAILED:"; tail -n 30 "$work/build.log"; exit 1; }
fi
exe=$(ls "$work"/gen/build/*_main)
[ -z "${TIMELINE_BUILD_ONLY:-}" ] || exit 0
defs=()
for kv in "$@"; do defs+=(-D "$kv"); done
res="${OUT:-.}/timeline-$name.txt"
warm=${TIMELINE_WARMUP:-5}
export COCONET_TIMELINE_CALL="${COCONET_TIMELINE_CALL:-$((warm + 5))}"
{
  echo "# timeline $name: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) x$ranks, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# command: bash tools/bench/gpu/timeline.sh $name $prog $sched '$knobs' $ranks $*"
  echo "# (compiled with the bundled coconetc --timeline; call $COCONET_TIMELINE_CALL after $warm warm-up calls; times from the call's start on each rank)"
} > "$res"
timeout 300 "$exe" --spawn "$ranks" --bench --warmup "$warm" --timeout 240 ${defs[@]+"${defs[@]}"} > "$work/run.out" 2> "$work/run.err" ||
  { echo "run FAILED:" >> "$res"; tail -n 20 "$work/run.out" "$work/run.err" >> "$res"; cat "$res"; exit 1; }
cat "$work/run.out" >> "$res"
grep '^timeline ' "$work/run.err" | sort -t' ' -k4,4n -s >> "$res" ||
  echo "no timeline lines: the driver ran $((warm + 20)) calls ($warm warm-up, 20 timed); COCONET_TIMELINE_CALL must be at most that" >> "$res"
cat "$res"
