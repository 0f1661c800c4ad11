#!/usr/bin/env bash
# GPU tests, run on the GPU machine from the repository root after tools/gpu-bundle.sh:
# makes the `coconetc verify --dump` vectors (tests/gpu/make-vectors.sh, with the bundled
# coconetc), builds every generated sample with nvcc, runs it on 1, 2 and 4 GPUs against them,
# runs compute-sanitizer (memcheck and racecheck) on the 1-GPU runs, and runs the programs with
# device-API collectives with each process as its own NCCL host. Writes a summary
# to $OUT/gpu-results.txt (or ./gpu-results.txt) and the logs as gpu-logs.tgz beside it.
# Stopped by TERM or INT (a device job's `timeout`), it keeps the lines of the runs that finished
# and the logs, and exits 124.
set -uo pipefail
mkdir -p "${OUT:-.}" || exit 1   # (a missing OUT folder once lost a whole run's results)
res="${OUT:-.}/gpu-results.txt"
out="$(mktemp -d)"   # logs; packed into gpu-logs.tgz beside the results at the end
b=.gpu-bundle
bash tools/gpu-unpack.sh   # a bundle tools/gpu-bundle.sh packed
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -n 1)
export NCCL_ROOT="${NCCL_ROOT:-$NC}"
gpus=$(nvidia-smi -L | wc -l)
{
  echo "# coconetc GPU tests"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "gpus: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')"
  echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); nvcc: $(nvcc --version | tail -n 2 | head -n 1)"
  echo "nccl: $NCCL_ROOT"
  echo "command: bash tests/gpu/run.sh (after tools/gpu-bundle.sh)${GPU_TESTS_ONLY:+; GPU_TESTS_ONLY=\"$GPU_TESTS_ONLY\"}${GPU_TESTS_SETS:+; GPU_TESTS_SETS=\"$GPU_TESTS_SETS\"}${GPU_TESTS_RANKS:+; GPU_TESTS_RANKS=\"$GPU_TESTS_RANKS\"}${SANITIZE:+; SANITIZE=$SANITIZE}${SANITIZE_TOOLS:+; SANITIZE_TOOLS=\"$SANITIZE_TOOLS\"}${GPU_TESTS_SANITIZE_SETS:+; GPU_TESTS_SANITIZE_SETS=\"$GPU_TESTS_SANITIZE_SETS\"}${GPU_TESTS_MULTI_AT_ONE:+; GPU_TESTS_MULTI_AT_ONE=$GPU_TESTS_MULTI_AT_ONE}${MEMCHECK_P2:+; MEMCHECK_P2=\"$MEMCHECK_P2\"}${MEMCHECK_P4:+; MEMCHECK_P4=\"$MEMCHECK_P4\"}${GPU_TESTS_MEMCHECK_FIRST:+; GPU_TESTS_MEMCHECK_FIRST=$GPU_TESTS_MEMCHECK_FIRST}${GPU_TESTS_LANES:+; GPU_TESTS_LANES=$GPU_TESTS_LANES}${GPU_TESTS_SHARE:+; GPU_TESTS_SHARE=$GPU_TESTS_SHARE}${GPU_TESTS_DRIVERS:+; GPU_TESTS_DRIVERS=$GPU_TESTS_DRIVERS}"
  # the generated programs' test and debug switches set around the tests (coconet_env.h lists them:
  # COCONET_MULTI_RANK_FORMS, COCONET_TIMELINE_CALL; the performance choices are tuning-table entries)
  knobs=$(env | grep '^COCONET_' | sort | tr '\n' ' ')
  [ -z "$knobs" ] || echo "knobs: ${knobs% }"
} > "$res"
pass=0; fail=0
# The vectors: made here (the bundle does not carry them).
if ! bash tests/gpu/make-vectors.sh "$b/dumps" > "$out/make-vectors.log" 2>&1; then
  echo "make-vectors FAILED:" >> "$res"; tail -n 5 "$out/make-vectors.log" | sed 's/^/    /' >> "$res"; fail=$((fail+1))
fi
# GPU_TESTS_ONLY="a b@x c@*": only these builds, each a name or a shell pattern (a program's name
# keeps its default build alone; "c@*" every variant of c); GPU_TESTS_SETS="a@x b@y": of the vector sets beside
# the defaults (make-vectors.sh), only these (the default vectors still run; a set runs with each
# of its program's builds that GPU_TESTS_ONLY keeps); SANITIZE=0: no compute-sanitizer runs;
# GPU_TESTS_RANKS="2 4": the driver runs at these world sizes only (default 1 2 4; the C interface
# and fake-host runs need 2 among them, compute-sanitizer 1), to split a run over device calls.
# GPU_TESTS_LANES=K: at most K driver runs of one world size at once (default: as many as the GPUs
# hold; 1: one at a time). GPU_TESTS_SHARE=K: K runs at once on each set of GPUs (default 2; a
# check's ~1-2 s are mostly CUDA and NCCL setup and teardown, in which its GPUs idle).
# GPU_TESTS_DRIVERS=0: no driver checks (builds, then the C interface, error paths, sanitizers and
# fake-host runs only), to finish those for builds whose driver checks an earlier call ran.
# GPU_TESTS_MEMCHECK_FIRST=1: the memcheck runs of MEMCHECK_P2 / MEMCHECK_P4 (below) before the
# checks rather than after them.
# SANITIZE_TOOLS="racecheck": the compute-sanitizer tools of the 1-GPU runs (default "memcheck
# racecheck"), to finish in a call what an earlier one did not reach.
# GPU_TESTS_SANITIZE_SETS="a@x b@y": those tools also on these vector sets' one-rank runs (the
# default vectors alone otherwise), with each of the set's program's builds that GPU_TESTS_ONLY keeps.
# GPU_TESTS_MULTI_AT_ONE=1: every build with device groups also checked at one rank with
# COCONET_MULTI_RANK_FORMS=1 (their multi-rank kernels over a team of one: rounds, roles, barriers,
# exchanges, PDL; not the peers' transfers), lines "NAME (multi-rank forms) P=1", with the size
# variants' one-rank vectors too ("SET (gen/BUILD, multi-rank forms) P=1"), and under each
# compute-sanitizer tool of the 1-GPU runs.
only="${GPU_TESTS_ONLY:-}"
sets="${GPU_TESTS_SETS:-}"
ranks="${GPU_TESTS_RANKS:-1 2 4}"
drivers="${GPU_TESTS_DRIVERS:-1}"
hasRank() { [[ " $ranks " == *" $1 "* ]]; }
keep() {  # BUILD: whether GPU_TESTS_ONLY names it or has a pattern it matches
  [ -z "$only" ] && return 0
  local pat pats
  read -r -a pats <<< "$only"  # (split without expanding the patterns against files)
  for pat in "${pats[@]}"; do
    # shellcheck disable=SC2053
    [[ "$1" == $pat ]] && return 0
  done
  return 1
}
# multiAtOne CU: whether GPU_TESTS_MULTI_AT_ONE=1 and the generated file CU has device groups with a
# one-rank form (whose multi-rank forms then run at one rank too, COCONET_MULTI_RANK_FORMS=1)
multiAtOne() { [ "${GPU_TESTS_MULTI_AT_ONE:-0}" = 1 ] && grep -qs 'soloRanks(P_)' "$1"; }
# check_run LABEL EXE P DUMPDIR RESULT: one driver run on P GPUs against verify vectors; its line
# goes to the file RESULT (run_queue gathers them in order and counts them).
check_run() {  # LABEL EXE P DUMPDIR RESULT [VAR=VALUE: set around the run]
  local log="$out/run-$(printf '%s' "$1" | tr -c 'A-Za-z0-9@._-' '_')-$3.log" e=()
  [ -z "${6:-}" ] || e=(env "$6")
  # (the log's last line: the run's wall time, beside each rank's phases that the driver prints)
  local t0 rc
  t0=$(date +%s%N)
  "${e[@]}" timeout 120 "$2" --spawn "$3" --check "$4" --timeout 60 > "$log" 2>&1
  rc=$?
  echo "wall (ms): $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$log"
  if [ $rc = 0 ]; then
    echo "$1 P=$3: ok ($(grep -c ': ok' "$log") tensor checks; worst $(grep -o 'relative error [0-9.e+-]*' "$log" | sort -g -k3 | tail -n 1))" > "$5"
  else
    { echo "$1 P=$3: FAILED (exit $rc)"; grep -v -E '^(wall \(ms\)|rank [0-9]+: time \(ms\)):' "$log" | tail -n 5 | sed 's/^/    /'; } > "$5"
  fi
}
# The driver runs, queued (queue_run LABEL EXE P DUMPDIR; queue_sanitizer TOOL LABEL EXE P
# DUMPDIR for a compute-sanitizer run; queue_line TEXT for a line with no run) and then run by
# run_queue: runs of P GPUs side by side on disjoint GPU sets where the machine has room for more
# than one (GPU_TESTS_LANES=1: one at a time), each seeing only its own GPUs
# (CUDA_VISIBLE_DEVICES); the result file lists them in queued order either way.
Q_FN=() Q_LABEL=() Q_EXE=() Q_P=() Q_DIR=() Q_X=() QN=0
queue_run() { Q_FN+=(check_run); Q_LABEL+=("$1"); Q_EXE+=("$2"); Q_P+=("$3"); Q_DIR+=("$4"); Q_X+=(""); }
queue_sanitizer() { queue_run "$2" "$3" "$4" "$5"; Q_FN[-1]=sanitize_run; Q_X[-1]=$1; }
queue_line() { queue_run "$1" "" 0 ""; }
# sanitize_run LABEL EXE P DUMPDIR RESULT "TOOL [VAR=VALUE]": compute-sanitizer TOOL on one driver
# run (VAR=VALUE set around it); its line (clean, or the first finding) goes to RESULT, counted
# neither as passed nor as failed.
sanitize_run() {
  local tool var e=() extra=() rc
  read -r tool var <<< "$6"
  [ -z "$var" ] || e=(env "$var")
  local log="$out/sanitizer-$tool-$([ "$3" -gt 1 ] && echo "p$3-")$(printf '%s' "$1" | tr -c 'A-Za-z0-9@._-' '_').log"
  [ "$3" -gt 1 ] && extra=(--timeout 240)
  # NCCL probes kernels with cudaFuncGetAttributes and handles the errors itself: not ours to report.
  "${e[@]}" timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 "$2" --spawn "$3" --check "$4" "${extra[@]}" > "$log" 2>&1
  rc=$?
  echo "compute-sanitizer $tool $1$([ "$3" -gt 1 ] && echo " P=$3"): $( [ $rc = 0 ] && echo clean || echo "exit $rc: $(sanitizerWhy "$log")")" > "$5"
}
# The first thing a compute-sanitizer log reports: its first finding with the kernel it was in
# (the kernel's name cut at its argument list), else the first error line (a failing run's own).
sanitizerWhy() {
  local f=$1 hit
  hit=$(grep -m1 -n -E '^========= +(Invalid|Uninitialized|Race|Error: Race|Misaligned|Out-of-range|Barrier error|Program hit)' "$f")
  if [ -n "$hit" ]; then
    local line=${hit%%:*} at
    at=$(sed -n "$((line + 1)),$((line + 3))p" "$f" | grep -m1 -E '^========= +at ' | sed -E 's/^=+ +at +//; s/\(.*//')
    echo "${hit#*:}${at:+ in $at}" | sed -E 's/^=+ +//'
  else
    grep -m1 -E 'ERROR|Error|error' "$f"
  fi
}
read -r -a gpu_ids <<< "$(echo "${CUDA_VISIBLE_DEVICES:-$(seq -s ' ' 0 $((gpus - 1)))}" | tr ',' ' ')"
run_queue() {
  QN=$((QN + 1))
  local qd="$out/queue$QN" i P lanes lane gsets
  mkdir -p "$qd"
  QA=1  # (stopped: the handler below gathers this queue's finished runs)
  for i in "${!Q_P[@]}"; do
    [ "${Q_P[$i]}" = 0 ] && printf '%s\n' "${Q_LABEL[$i]}" > "$qd/$i"
  done
  for P in 1 2 4 8; do
    gsets=$(( ${#gpu_ids[@]} / P )); [ "$gsets" -ge 1 ] || gsets=1  # (fewer visible than P: they share them)
    lanes=$(( gsets * ${GPU_TESTS_SHARE:-2} ))  # (GPU_TESTS_SHARE=K: K lanes on each set of P GPUs)
    [ "${GPU_TESTS_LANES:-0}" -ge 1 ] && [ "$lanes" -gt "${GPU_TESTS_LANES}" ] && lanes=$GPU_TESTS_LANES
    local -a mine=()
    for i in "${!Q_P[@]}"; do [ "${Q_P[$i]}" = "$P" ] && mine+=("$i"); done
    [ ${#mine[@]} -gt 0 ] || continue
    for ((lane = 0; lane < lanes; ++lane)); do
      (
        devs=$(printf '%s,' "${gpu_ids[@]:$(((lane % gsets) * P)):$P}"); devs=${devs%,}
        [ ${#gpu_ids[@]} -ge "$P" ] || devs=$(printf '%s,' "${gpu_ids[@]}"); devs=${devs%,}
        for ((k = lane; k < ${#mine[@]}; k += lanes)); do
          j=${mine[$k]}
          CUDA_VISIBLE_DEVICES=$devs "${Q_FN[$j]}" "${Q_LABEL[$j]}" "${Q_EXE[$j]}" "$P" "${Q_DIR[$j]}" "$qd/$j" "${Q_X[$j]}"
        done
      ) &
    done
    wait
  done
  for i in "${!Q_P[@]}"; do
    [ -f "$qd/$i" ] || echo "${Q_LABEL[$i]} P=${Q_P[$i]}: FAILED (not run)" > "$qd/$i"
    cat "$qd/$i" >> "$res"
    if grep -q "^.* P=[0-9]*: ok (" "$qd/$i"; then pass=$((pass+1)); elif grep -q ": FAILED" "$qd/$i"; then fail=$((fail+1)); fi
  done
  QA=0
  Q_FN=() Q_LABEL=() Q_EXE=() Q_P=() Q_DIR=() Q_X=()
}
# Stopped by a signal (a device job's `timeout` sends TERM to the whole process group): keep what
# finished. The queue under way writes its finished runs' lines in queued order and the others
# as "not run (stopped)" (a queue writes its lines only once all its runs are done, so a stop
# would otherwise lose them all), and likewise the C-interface checks, then the counts so far and
# the logs; exit status 124.
QA=0 CA=0 batch="$out/capi-batch.log" CPID=""
: > "$batch"
# stoppable SECONDS CMD...: CMD under `timeout` in the background and waited for, so that a stop
# reaches the handler at once (a foreground command would hold it until it ends: `timeout` puts
# CMD in a process group of its own, which the job's TERM to its group does not reach) and the
# handler ends CMD's group.
stoppable() {
  local rc
  timeout "$@" &
  CPID=$!
  wait "$CPID"; rc=$?
  CPID=""
  return "$rc"
}
stopped() {
  trap - TERM INT
  local i k qd="$out/queue$QN"
  [ -n "$CPID" ] && kill -TERM -- "-$CPID" 2> /dev/null
  if [ "$CA" = 1 ]; then  # the C-interface checks under way: those the batch ended ok so far
    for ((k = CK; k < ${#C_LABEL[@]}; ++k)); do
      capi_batch_ok "$k" || echo "${C_TEXT[$k]}: not run (stopped)" >> "$res"
    done
  fi
  if [ "$QA" = 1 ]; then
    for i in "${!Q_P[@]}"; do
      if [ -s "$qd/$i" ]; then
        cat "$qd/$i" >> "$res"
        if grep -q "^.* P=[0-9]*: ok (" "$qd/$i"; then pass=$((pass+1)); elif grep -q ": FAILED" "$qd/$i"; then fail=$((fail+1)); fi
      else
        echo "${Q_LABEL[$i]} P=${Q_P[$i]}: not run (stopped)" >> "$res"
      fi
    done
  fi
  echo "stopped by a signal; checks until then: $pass passed, $fail failed" >> "$res"
  tar czf "${OUT:-.}/gpu-logs.tgz" -C "$out" . 2>/dev/null
  exit 124
}
trap stopped TERM INT
# memcheck of MEMCHECK_P2 / MEMCHECK_P4's builds on 2 / 4 GPUs, queued (run after the checks, or
# before them with GPU_TESTS_MEMCHECK_FIRST=1: a device call whose checks fill its time would
# otherwise never reach them).
queue_memcheck_ranks() {
  local P v n p exe d
  for P in 2 4; do
    v="MEMCHECK_P$P"
    for n in ${!v:-}; do
      p=${n%@*}
      exe="$b/gen/$n/build/${p}_main"; d="$b/dumps/$p/ranks$P"
      [ "$gpus" -ge "$P" ] && [ -x "$exe" ] && [ -f "$d/manifest.txt" ] || continue
      queue_sanitizer memcheck "$n" "$exe" "$P" "$d"
    done
  done
}
# Builds: a program per 2 cores at a time (at least four), two compiler jobs each: a build is one
# heavy translation unit (NAME.cu) and a light one (the driver); one program per 4 cores was
# slower.
running=0
par=$(( $(nproc) / 2 )); [ "$par" -ge 4 ] || par=4
for dir in "$b"/gen/*/; do
  n=$(basename "$dir")
  keep "$n" || continue
  { ( cmake -S "$dir" -B "$dir/build" -DNCCL_ROOT="$NCCL_ROOT" > "$out/build-$n.log" 2>&1 &&
      cmake --build "$dir/build" -j 2 >> "$out/build-$n.log" 2>&1 ) || echo "BUILD FAILED $n" >> "$res"; } &
  running=$((running + 1))
  [ "$running" -lt "$par" ] || { wait -n; running=$((running - 1)); }
done
wait
if [ "${GPU_TESTS_MEMCHECK_FIRST:-0}" = 1 ]; then queue_memcheck_ranks; run_queue; fi
for dir in "$b"/gen/*/; do
  n=$(basename "$dir")
  keep "$n" || continue
  p=${n%@*}   # NAME@VARIANT: NAME compiled another way, checked with NAME's vectors
  exe="$dir/build/${p}_main"
  [ -x "$exe" ] || { queue_line "$n: not built"; fail=$((fail+1)); continue; }
  [ "$drivers" = 0 ] && continue
  for P in $ranks; do
    [ "$P" -le "$gpus" ] || continue
    d="$b/dumps/$p/ranks$P"
    [ -f "$d/manifest.txt" ] || { queue_line "$n P=$P: no vectors (verify skipped this rank count)"; continue; }
    queue_run "$n" "$exe" "$P" "$d"
    # GPU_TESTS_MULTI_AT_ONE=1: at one rank also with the device groups in their multi-rank forms
    # (COCONET_MULTI_RANK_FORMS=1, coconet_env.h), for builds that have such groups
    if [ "$P" = 1 ] && multiAtOne "$dir/$p.cu"; then
      queue_run "$n (multi-rank forms)" "$exe" 1 "$d"; Q_X[-1]=COCONET_MULTI_RANK_FORMS=1
    fi
  done
done
# Variants (tools/gpu-bundle.sh): other sizes of a program, run with each of its builds.
for d0 in "$b"/dumps/*@*/; do
  [ -d "$d0" ] && [ "$drivers" != 0 ] || continue
  v=$(basename "$d0"); n=${v%@*}
  [ -z "$sets" ] || [[ " $sets " == *" $v "* ]] || continue
  for bdir in "$b/gen/$n" "$b"/gen/"$n"@*; do
    build=$(basename "$bdir")
    keep "$build" || continue
    # a set with a file `builds` (globs) runs with those builds only
    if [ -f "$d0/builds" ]; then
      ok="" globs=()
      read -r -a globs < "$d0/builds"
      for g in "${globs[@]}"; do
        # shellcheck disable=SC2254
        case "$build" in $g) ok=1 ;; esac
      done
      [ -n "$ok" ] || continue
    fi
    exe="$b/gen/$build/build/${n}_main"
    [ -x "$exe" ] || continue
    for P in $ranks; do
      [ "$P" -le "$gpus" ] && [ -f "$d0/ranks$P/manifest.txt" ] || continue
      queue_run "$v (gen/$build)" "$exe" "$P" "$d0/ranks$P"
      if [ "$P" = 1 ] && multiAtOne "$bdir/$n.cu"; then
        queue_run "$v (gen/$build, multi-rank forms)" "$exe" 1 "$d0/ranks1"; Q_X[-1]=COCONET_MULTI_RANK_FORMS=1
      fi
    done
  done
done
run_queue
# The C interface from Python (ctypes, PyTorch's tensors and stream), every program on 2 GPUs:
# queued (capi_queue LABEL TEXT BUILD_DIR DUMP...), then run in one batch of capi_check.py
# (one process per rank for all of them; GPU_TESTS_CAPI_BATCH=0: none) and every check the batch
# did not end ok run again alone, whose result then stands. TEXT: the result line's start.
C_LABEL=() C_TEXT=() C_ARGS=()
capi_queue() { C_LABEL+=("$1"); C_TEXT+=("$2"); shift 2; C_ARGS+=("$*"); }
capi_log() { echo "$out/capi-$(printf '%s' "${C_LABEL[$1]}" | tr ':' '-').log"; }
# capi_batch_ok K: if the batch ended check K ok, its tensor lines to its log and its line to the
# results (else status 1).
capi_batch_ok() {
  local l=${C_LABEL[$1]} log
  log=$(capi_log "$1")
  grep -qxF "== $l: ok" "$batch" || return 1
  awk -v p="$l: " 'index($0, p) == 1' "$batch" > "$log"
  capi_passed "$1" "$log"
}
# capi_passed K LOG: check K's line, ok with the tensor checks its log counts.
capi_passed() { echo "${C_TEXT[$1]}: ok ($(grep -c 'relative error .*: ok$' "$2") tensor checks)" >> "$res"; pass=$((pass+1)); }
if hasRank 2 && python3 -c "import torch" 2>/dev/null && [ "$gpus" -ge 2 ]; then
  for dir in "$b"/gen/*/; do
    n=$(basename "$dir")
    keep "$n" || continue
    p=${n%@*}
    d="$b/dumps/$p/ranks2"
    [ -f "$dir/build/libcoconet_$p.so" ] && [ -f "$d/manifest.txt" ] || continue
    capi_queue "$n" "capi $n P=2" "$dir/build" "$d"
  done
  # One handle, sizes the schedule runs and sizes only the program without it runs (its
  # NAME_unscheduled fallback), in turn: the schedule, the fallback, the schedule again.
  for n in megatron_row megatron_mlp dlrm_embedding; do
    keep "$n" || continue
    dir="$b/gen/$n"; v=$(ls -d "$b/dumps/$n"@decode "$b/dumps/$n"@fallback 2>/dev/null | head -n 1)
    d="$b/dumps/$n/ranks2"
    [ -f "$dir/build/libcoconet_$n.so" ] && [ -f "$d/manifest.txt" ] && [ -f "$v/ranks2/manifest.txt" ] || continue
    capi_queue "turns:$n" "capi $n P=2, $(basename "$v") between two runs of the default sizes" "$dir/build" "$d" "$v/ranks2" "$d"
  done
fi
CA=1 CK=0  # (stopped: the handler writes the lines of checks CK.. from the batch's log)
if [ "${#C_LABEL[@]}" -gt 1 ] && [ "${GPU_TESTS_CAPI_BATCH:-1}" != 0 ]; then
  for k in "${!C_LABEL[@]}"; do echo "${C_LABEL[$k]} ${C_ARGS[$k]}"; done > "$out/capi-batch.txt"
  stoppable $(( 120 + 30 * ${#C_LABEL[@]} )) python3 tests/gpu/capi_check.py --batch "$out/capi-batch.txt" > "$batch" 2>&1
fi
for k in "${!C_LABEL[@]}"; do
  log=$(capi_log "$k")
  if capi_batch_ok "$k"; then
    :
  # shellcheck disable=SC2086
  elif stoppable 300 python3 tests/gpu/capi_check.py ${C_ARGS[$k]} > "$log" 2>&1; then
    capi_passed "$k" "$log"
  else
    echo "${C_TEXT[$k]}: FAILED" >> "$res"; tail -n 5 "$log" | sed 's/^/    /' >> "$res"; fail=$((fail+1))
  fi
  CK=$((k + 1))
done
CA=0
# Run-time error paths: each run is refused before any launch with this exact message.
# error_path LABEL EXE WANT ARGS...: a 1-GPU driver run that must fail with rank 0 printing WANT.
error_path() {
  local label=$1 exe=$2 want="rank 0: error: $3" log="$out/error-$(printf '%s' "$1" | tr -c 'A-Za-z0-9@._-' '_').log"
  shift 3
  if ! stoppable 60 "$exe" --spawn 1 "$@" > "$log" 2>&1 && grep -qxF "$want" "$log"; then
    echo "error path $label: refused as expected" >> "$res"; pass=$((pass+1))
  else
    echo "error path $label: FAILED (wanted: $want)" >> "$res"; tail -n 3 "$log" | sed 's/^/    /' >> "$res"; fail=$((fail+1))
  fi
}
# An i32 scalar past its type's range, naming the parameter (coconet_rt::checkIntegerScalar).
if keep run_args && [ -x "$b/gen/run_args/build/run_args_main" ]; then
  error_path "run_args -D root=2147483648" "$b/gen/run_args/build/run_args_main" \
    "run_args: scalar parameter 'root' (i32) is 2147483648; it must lie from -2147483648 to 2147483647" -D R=4 -D root=2147483648
fi
# A size bound at compile time passed with another value; a run-time eps that is not positive;
# a root (with a default, read at run time) outside the world; a dropout probability of 1, and
# one computed from a parameter (1 - keep) below 0.
if keep run_args && [ -x "$b/gen/run_args/build/run_args_main" ]; then
  e="$b/gen/run_args/build/run_args_main"
  error_path "run_args -D C=32" "$e" "run_args: size C is 32, but the program was compiled for C = 96" -D R=4 -D C=32
  error_path "run_args -D e=0" "$e" "run_args: stage 'y.x.y': eps (scalar parameter 'e') is 0; it must be positive" -D R=4 -D e=0
  error_path "run_args -D root=1" "$e" "run_args: stage 'y.x.x.y': root 1 is not a rank of group 'world'" -D R=4 -D root=1
  error_path "run_args -D p=1" "$e" "run_args: stage 'y.y': dropout probability (scalar parameter 'p') is 1; it must lie in [0, 1)" -D R=4 -D p=1
  error_path "run_args -D keep=1.5" "$e" "run_args: stage 'z': dropout probability 1 - keep is -0.5 with this run's parameters; it must lie in [0, 1)" -D R=4 -D keep=1.5
fi
echo "checks: $pass passed, $fail failed" >> "$res"
# compute-sanitizer on the 1-GPU runs, then (MEMCHECK_P2="a b" / MEMCHECK_P4="a b") memcheck of
# these builds on 2 / 4 GPUs (device-API kernels only take their device path with more than one
# rank; some forms, LL128's among them, differ by rank count; queued before the checks instead
# with GPU_TESTS_MEMCHECK_FIRST=1); side by side as the checks.
for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
  [ "${SANITIZE:-1}" = 1 ] && hasRank 1 || break
  for dir in "$b"/gen/*/; do
    n=$(basename "$dir")
    keep "$n" || continue
    p=${n%@*}
    exe="$dir/build/${p}_main"; d="$b/dumps/$p/ranks1"
    [ -x "$exe" ] && [ -f "$d/manifest.txt" ] || continue
    queue_sanitizer "$tool" "$n" "$exe" 1 "$d"
    # (GPU_TESTS_MULTI_AT_ONE=1: the multi-rank forms at one rank too)
    if multiAtOne "$dir/$p.cu"; then
      queue_sanitizer "$tool COCONET_MULTI_RANK_FORMS=1" "$n (multi-rank forms)" "$exe" 1 "$d"
    fi
  done
  # (GPU_TESTS_SANITIZE_SETS="a@x": these vector sets' one-rank runs too, with each build kept)
  for v in ${GPU_TESTS_SANITIZE_SETS:-}; do
    p=${v%@*}; d="$b/dumps/$v/ranks1"
    [ -f "$d/manifest.txt" ] || continue
    for dir in "$b/gen/$p" "$b"/gen/"$p"@*; do
      n=$(basename "$dir")
      exe="$dir/build/${p}_main"
      keep "$n" && [ -x "$exe" ] || continue
      queue_sanitizer "$tool" "$v (gen/$n)" "$exe" 1 "$d"
    done
  done
done
[ "${GPU_TESTS_MEMCHECK_FIRST:-0}" = 1 ] || queue_memcheck_ranks
run_queue
# Multi-node path: each process its own NCCL host (sockets instead of NVLink / shared memory).
# Their default builds hold device-API collectives (moe_gemm, a2a_ffn: copy-engine pipelines), which
# must take the NCCL fallback there.
for n in megatron_row adam lamb norm_clip scalar_chain pipeline sends moe_gemm a2a_ffn; do
  keep "$n" && hasRank 2 && [ "$gpus" -ge 2 ] && [ -x "$b/gen/$n/build/${n}_main" ] || continue
  if stoppable 180 "$b/gen/$n/build/${n}_main" --spawn 2 --fake-hosts --check "$b/dumps/$n/ranks2" --timeout 120 > "$out/fakehosts-$n.log" 2>&1; then
    echo "fake-hosts $n P=2: ok" >> "$res"
  else
    echo "fake-hosts $n P=2: FAILED" >> "$res"; tail -n 5 "$out/fakehosts-$n.log" | sed 's/^/    /' >> "$res"
  fi
done
tar czf "${OUT:-.}/gpu-logs.tgz" -C "$out" . 2>/dev/null
cat "$res"
