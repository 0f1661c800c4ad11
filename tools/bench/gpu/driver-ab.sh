#!/usr/bin/env bash
# A/B timings of generated programs by their own drivers (no PyTorch): builds each generated
# folder with nvcc, then runs `NAME_main --spawn P SIZES --bench --iters K` for every world size
# and every environment setting, and prints one line per run. For quick comparisons of schedule
# or backend variants on the GPU machine; the figures a target is judged by come from run.sh,
# which times the peers in the same processes.
#
#   bash tools/bench/gpu/driver-ab.sh [--ranks "2 4"] [--iters 40] [--warmup W] [--reps R] [--raw DIR]
#                                     [--env "A=1;B=2"] [-D N=V ...] DIR...
#
#   DIR       a folder `coconetc compile` wrote (e.g. .gpu-bundle/gen/moe_gemm@ranks)
#   --ranks   world sizes (default "2 4")
#   --iters   timed iterations per run (default 40)
#   --warmup  untimed iterations before them (default: the driver's)
#   --reps    repetitions of the whole set, the folders interleaved in each (default 1)
#   --raw     a folder for each run's whole output (run-NAME-pP-rREP.txt, NAME the folder's name)
#   --env     settings separated by ';', each "" (none) or NAME=VALUE[ NAME=VALUE...] (default: none)
#   -D        program sizes and scalars, passed to the driver (every size and every scalar without
#             a default: Adam's and LAMB's step, e.g. -D t=10, or the driver refuses to run)
#
# Output lines: `ENV P=P DIR [rep R]: median_us MEDIAN min MIN max MAX` (the driver's JSON, the
# slowest rank per iteration). NCCL_ROOT: the NCCL to build against (default: PyTorch's).
set -uo pipefail
ranks="2 4" iters=40 warmup=() reps=1 raw="" envs="" defs=() dirs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="${2:?}"; shift 2 ;;
    --iters) iters="${2:?}"; shift 2 ;;
    --warmup) warmup=(--warmup "${2:?}"); shift 2 ;;
    --reps) reps="${2:?}"; shift 2 ;;
    --raw) raw="${2:?}"; shift 2 ;;
    --env) envs="${2?}"; shift 2 ;;
    -D) defs+=(-D "${2:?}"); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || { echo "driver-ab: no folder given (--help)" >&2; exit 2; }
[ -z "$raw" ] || mkdir -p "$raw"
nccl="${NCCL_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
export LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in "${dirs[@]}"; do
  # a failed build leaves a marker, so that an older executable in ab-build is not timed
  rm -f "$d/ab-build.failed"
  ( cmake -S "$d" -B "$d/ab-build" -DNCCL_ROOT="$nccl" > "$d/ab-build.log" 2>&1 &&
    cmake --build "$d/ab-build" -j 8 >> "$d/ab-build.log" 2>&1 ) ||
    { echo "driver-ab: build of $d failed (see $d/ab-build.log)" >&2; touch "$d/ab-build.failed"; } &
done
wait
IFS=';' read -r -a settings <<< "${envs:-}"
[ ${#settings[@]} -gt 0 ] || settings=("")
for rep in $(seq 1 "$reps"); do
  tag=""
  [ "$reps" -eq 1 ] || tag=" rep $rep"
  for setting in "${settings[@]}"; do
    for P in $ranks; do
      for d in "${dirs[@]}"; do
        exe=$(ls "$d"/ab-build/*_main 2>/dev/null | head -n 1)
        [ -x "$exe" ] && [ ! -e "$d/ab-build.failed" ] || { echo "${setting:-none} P=$P $d$tag: not built"; continue; }
        # shellcheck disable=SC2086
        out=$(env $setting timeout 120 "$exe" --spawn "$P" "${defs[@]}" --bench --iters "$iters" "${warmup[@]}" 2>&1)
        [ -z "$raw" ] || printf '%s\n' "$out" > "$raw/run-$(basename "$d")-p$P-r$rep.txt"
        json=$(printf '%s\n' "$out" | grep '"median_us"' | tail -n 1)
        if [ -z "$json" ]; then echo "${setting:-none} P=$P $d$tag: FAILED"; continue; fi
        echo "${setting:-none} P=$P $d$tag: $(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("median_us %.1f min %.1f max %.1f" % (j["median_us"], j["min_us"], j["max_us"]))' "$json")"
      done
    done
  done
done
