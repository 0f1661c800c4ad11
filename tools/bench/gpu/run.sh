#!/usr/bin/env bash
# GPU benchmarks of coconetc against its peers (tools/bench/gpu/README.md). Run on the GPU
# machine from the repository root:
#
#   bash tools/bench/gpu/run.sh --headline [--workloads LIST] [--deadline SECONDS]
#   bash tools/bench/gpu/run.sh [--gpus 2,4] [--workloads adam,lamb,...] [--quick]
#
#   --headline        the headline: every workload at every GPU count present (1, 2, 4), each
#                     config's program, every peer and floor (nothing can leave one out),
#                     BENCH_REPS (default 3) independent runs (one worker process each), into
#                     OUT (default docs/benchmarks/runs/DATE-NxGPU; run again with the same OUT
#                     to finish what a run left: finished runs are kept); then
#                     docs/benchmarks/README.md and docs/benchmarks/plots/ (headline.py)
#   --deadline S      start no worker after S seconds and stop a running one then (its config
#                     runs again next time); the report is still written
#   --gpus LIST       world sizes (default: 2 and 4 where there are that many GPUs; 1 on a
#                     machine with one; with --headline 1, 2 and 4 where present)
#   --workloads LIST  workload modules (default: every tools/bench/gpu/workloads/*.py)
#   --quick           small sizes and few iterations (a smoke run; its timings are not results)
#
# Environment: OUT (results folder, default docs/benchmarks/runs/DATE-NxGPU), COCONETC (else
# .gpu-bundle/bin/coconetc, else build/coconetc), NCCL_ROOT (default: PyTorch's NCCL),
# WORK (sources, generated code and builds; default /tmp/coconet-bench), BENCH_TIMEOUT
# (seconds one worker may run, default 14400), ROW_TIMEOUT (seconds one row may take, default
# 900), BUILD_ARGS / BENCH_ARGS (extra options of build.py / bench.py), BENCH_ROUNDS (Adam's and
# LAMB's `coconetc_chunksK` rows, default 4; "4,8,16" sweeps the rounds in one run),
# BENCH_SCHED_ROWS (Adam's and LAMB's schedule variants as rows `coconetc_NAME`:
# "NAME=STATEMENTS|..." added to the sample's schedule), BENCH_COMPILER_ROWS (Adam's and LAMB's
# rows `coconetc_NAME` compiled by another coconetc: "NAME=PATH|...", an A/B of the compiler),
# BENCH_TUNING_ROWS (Adam's and LAMB's rows `coconetc_NAME` compiled with a tuning file:
# "NAME=FILE|...", FILE as `coconetc tune` writes it, for an A/B of tuning-table entries such
# as push_tile_units, pull_tile_units, tail_flags or pdl),
# MEGATRON_DECODE_TOKENS / ALLREDUCE_SIZES (developer options: other decode token counts, other
# all-reduce sizes; the results' command names them).
#
# Steps: build.py compiles and builds every program the workloads declare; then per world size
# torchrun starts bench.py, which writes OUT/raw/WORKLOAD-pP.json; report.py writes
# OUT/results.md and OUT/plots/*.png. A workload that fails is recorded as failed and the
# others go on: when a worker dies or hangs, the workloads it had not reached run in a new one,
# and the one it died in goes on there from the config after the one it died in.
# Logs: OUT/logs/ (with gpu-clocks.csv: nvidia-smi's clocks, power and clock-event reasons every 250 ms).
set -uo pipefail
cmdline="bash tools/bench/gpu/run.sh${*:+ $*}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root" || exit 2
here=tools/bench/gpu

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; }
gpus_opt="" workloads="" quick="" headline="" deadline=""
while [ $# -gt 0 ]; do
  case "$1" in
    --headline) headline="--headline"; shift ;;
    --deadline) deadline="${2:?--deadline needs seconds}"; shift 2 ;;
    --deadline=*) deadline="${1#*=}"; shift ;;
    --gpus) gpus_opt="${2:?--gpus needs a list}"; shift 2 ;;
    --gpus=*) gpus_opt="${1#*=}"; shift ;;
    --workloads) workloads="${2:?--workloads needs a list}"; shift 2 ;;
    --workloads=*) workloads="${1#*=}"; shift ;;
    --quick) quick="--quick"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

# NVLink multicast stays off on these machines (docs: shared notes, toolchain).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The command as recorded in the results: with the environment that changes what runs.
envs=""
for v in BENCH_ARGS BUILD_ARGS BENCH_ROUNDS BENCH_SCHED_ROWS BENCH_COMPILER_ROWS BENCH_TUNING_ROWS MEGATRON_DECODE_TOKENS ALLREDUCE_SIZES; do
  if [ -n "${!v:-}" ]; then envs+="$v='${!v}' "; fi
done
export COCONET_BENCH_COMMAND="$envs$cmdline"
t_start=$SECONDS
if [ -n "$headline" ] && [[ " ${BENCH_ARGS:-} " == *" --rows "* || " ${BENCH_ARGS:-} " == *" --configs "* ]]; then
  echo "run.sh --headline runs every headline row and config: BENCH_ARGS may not filter them" >&2
  exit 2
fi
# The commit the results name (BENCH_COMMIT where the tree is no git checkout).
if [ -z "${BENCH_COMMIT:-}" ] && git rev-parse HEAD > /dev/null 2>&1; then
  BENCH_COMMIT=$(git rev-parse HEAD)
  [ -z "$(git status --porcelain -- src stdlib samples tools 2> /dev/null)" ] || BENCH_COMMIT+="+changes"
fi
export BENCH_COMMIT="${BENCH_COMMIT:-}"
ngpu0=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ -n "$headline" ] && [ -z "${OUT:-}" ]; then
  gname=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | sed 's/NVIDIA //; s/ .*//')
  OUT="docs/benchmarks/runs/$(date -u +%F)-${ngpu0:-0}x${gname:-cpu}"
fi
out="${OUT:-docs/benchmarks/runs/$(date -u +%F)-dev}"
work="${WORK:-/tmp/coconet-bench}"
mkdir -p "$out/logs" "$out/raw" "$work"
out="$(cd "$out" && pwd)"
export OUT="$out"

# The compiler (from the bundle, unpacked first if tools/gpu-bundle.sh packed it).
bash tools/gpu-unpack.sh
cc=""
if [ -n "${COCONETC:-}" ]; then
  cc="$COCONETC"
elif [ -x .gpu-bundle/bin/coconetc ]; then
  cc="$root/.gpu-bundle/bin/coconetc"
  export LD_LIBRARY_PATH="$root/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif [ -x build/coconetc ]; then
  cc="$root/build/coconetc"
fi
# A relocated coconetc finds its stdlib here.
export COCONETC_STDLIB="${COCONETC_STDLIB:-$root/stdlib}"
# shellcheck disable=SC2012  # the glob names one folder per Python version
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -n 1)
export NCCL_ROOT="${NCCL_ROOT:-$NC}"

# World sizes. BENCH_ARGS: extra bench.py options (developers: "--device cpu --skip-coconetc"
# runs the peer rows with gloo on a machine without a GPU, as if it had BENCH_CPU_RANKS GPUs).
read -r -a bench_args <<< "${BENCH_ARGS:-}"
read -r -a build_args <<< "${BUILD_ARGS:-}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$ngpu" -gt 0 ] 2>/dev/null || ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
[[ " ${BENCH_ARGS:-} " == *" --device cpu "* ]] && ngpu="${BENCH_CPU_RANKS:-2}"
if [ -z "$gpus_opt" ] && [ -n "$headline" ]; then
  gpus_opt=1
  [ "$ngpu" -lt 2 ] || gpus_opt+=",2"
  [ "$ngpu" -lt 4 ] || gpus_opt+=",4"
elif [ -z "$gpus_opt" ]; then
  if [ "$ngpu" -ge 4 ]; then gpus_opt="2,4"; elif [ "$ngpu" -ge 2 ]; then gpus_opt="2"; else gpus_opt="1"; fi
fi
reps=1
if [ -n "$headline" ]; then
  reps="${BENCH_REPS:-3}"
fi
if [ -z "$workloads" ]; then
  for f in "$here"/workloads/*.py; do
    n=$(basename "$f" .py)
    [[ "$n" == _* ]] || workloads="${workloads:+$workloads,}$n"
  done
fi

echo "coconetc GPU benchmarks: $cmdline"
echo "  GPUs: $ngpu ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' ' | paste -sd';' -))"
echo "  world sizes: $gpus_opt; workloads: $workloads${quick:+ (quick)}${headline:+ (headline, $reps runs)}"
echo "  coconetc: ${cc:-none found}; NCCL_ROOT: ${NCCL_ROOT:-unset}; results: $out; work: $work"

status=0
# 1. Compile and build the programs.
rm -f "$out/build.json"
[ -z "$headline" ] || build_args+=(--headline --sample-repeats 0)
if [ -n "$cc" ]; then
  python3 "$here/build.py" --coconetc "$cc" --work "$work" --out "$out/build.json" \
    --logs "$out/logs/build" --workloads "$workloads" --nccl-root "$NCCL_ROOT" "${build_args[@]}" \
    2>&1 | tee "$out/logs/build.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "build.py failed (see $out/logs/build.log)"; status=1; }
else
  echo "no coconetc found: the coconetc rows will fail, the peers still run" | tee "$out/logs/build.log"
  status=1
fi

# 2. One worker per world size (again for what a dead worker did not reach). The GPUs'
# clocks, power and the reasons for lowered clocks are sampled meanwhile into
# logs/gpu-clocks.csv (power capping slows GEMM-heavy rows).
smi_pid=
if command -v nvidia-smi > /dev/null && [ "$ngpu" -gt 0 ] && [[ " ${BENCH_ARGS:-} " != *" --device cpu "* ]]; then
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 250 > "$out/logs/gpu-clocks-$(date -u +%H%M%S).csv" 2>&1 &
  smi_pid=$!
  trap 'kill "$smi_pid" 2> /dev/null' EXIT
fi
# A worker runs in the background and this script waits for it, so that a TERM or INT (a
# timeout around run.sh, Ctrl-C) stops it at once: bash runs a trap only after its foreground
# command ends, and a worker in the foreground kept a timed-out run.sh alive until BENCH_TIMEOUT.
worker=
trap '[ -z "$worker" ] || kill -TERM "$worker" 2> /dev/null; exit 143' TERM INT
tmo="${BENCH_TIMEOUT:-14400}"
left() {   # seconds left before the deadline (a large number without one)
  if [ -n "$deadline" ]; then echo $((deadline - (SECONDS - t_start))); else echo 999999; fi
}
for P in ${gpus_opt//,/ }; do
  if [ "$P" -gt "$ngpu" ]; then
    echo "P=$P: skipped, this machine has $ngpu GPUs" | tee -a "$out/logs/skipped.log"
    continue
  fi
  for ((rep = 1; rep <= reps; rep++)); do
    repargs=()
    if [ -n "$headline" ]; then
      repargs=(--headline --rep "$rep")
    else
      for w in ${workloads//,/ }; do rm -f "$out/raw/$w-p$P.json"; done
    fi
    attempt=0
    while :; do
      todo=$(python3 "$here/bench.py" --pending --out "$out" --world "$P" --workloads "$workloads" "${repargs[@]}")
      [ -n "$todo" ] || break
      budget=$(left)
      if [ "$budget" -lt 30 ]; then
        echo "P=$P${headline:+ run $rep}: $todo not run: the deadline (${deadline} s) has passed" | tee -a "$out/logs/skipped.log"
        status=1
        break
      fi
      attempt=$((attempt + 1))
      log="$out/logs/bench-p$P${headline:+-r$rep}-$(date -u +%H%M%S)-$attempt.log"
      before=$(cat "$out"/raw/*-p"$P"*.json 2> /dev/null | cksum)
      echo "P=$P${headline:+ run $rep}: $todo (log: $log)"
      wt=$tmo
      [ "$budget" -ge "$wt" ] || wt=$budget
      timeout --kill-after=30 "$wt" python3 -m torch.distributed.run --standalone \
        --nproc-per-node "$P" "$here/bench.py" --build "$out/build.json" --out "$out" \
        --workloads "$todo" --row-timeout "${ROW_TIMEOUT:-900}" $quick "${repargs[@]}" "${bench_args[@]}" > "$log" 2>&1 &
      worker=$!
      wait "$worker"
      rc=$?
      worker=
      grep '^bench: ' "$log" | sed 's/^bench: /  /' | tail -n 400 || true
      [ $rc = 0 ] && continue
      status=1
      progress=no   # did it write any result (a config started counts)?
      [ "$(cat "$out"/raw/*-p"$P"*.json 2> /dev/null | cksum)" = "$before" ] || progress=yes
      reason="the worker exited with status $rc"
      again=()
      if [ $rc = 124 ] && [ "$wt" -lt "$tmo" ]; then
        reason="the deadline (${deadline} s) stopped the worker"
        again=(--again)   # the config it was in runs again next time
      elif [ $rc = 124 ]; then
        reason="the worker ran past BENCH_TIMEOUT ($tmo s) and was stopped"
      fi
      python3 "$here/bench.py" --mark-failed --out "$out" --world "$P" --workloads "$todo" \
        --reason "$reason" --log "$log" "${repargs[@]}" "${again[@]}"
      [ ${#again[@]} = 0 ] || break
      # A workload it died in goes on in the next worker from its next config (bench.py
      # --mark-failed: "interrupted"); one it never reached runs there too.
      if [ $progress = no ]; then   # it died before writing anything: do not loop
        python3 "$here/bench.py" --mark-failed --absent --out "$out" --world "$P" \
          --workloads "$todo" --reason "$reason before starting" --log "$log" "${repargs[@]}"
      fi
    done
  done
done

[ -z "$smi_pid" ] || kill "$smi_pid" 2> /dev/null

# 3. The report (a headline run's: results.md without plots, then the headline page).
python3 "$here/report.py" --results "$out" ${headline:+--no-plots} 2>&1 | tee "$out/logs/report.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ -n "$headline" ]; then
  python3 "$here/headline.py" --runs "$(dirname "$out")" --out "$(dirname "$(dirname "$out")")/README.md" 2>&1 | tee -a "$out/logs/report.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
echo "results: $out/results.md (raw: $out/raw/, logs: $out/logs/)${headline:+; headline: docs/benchmarks/README.md}"
exit $status
