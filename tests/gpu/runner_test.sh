#!/usr/bin/env bash
# tests/gpu/run.sh's own logic, without a GPU: a fake bundle (three builds of two programs, a
# size set, one rank count without vectors), fake drivers that print the GPUs they see and fail
# where told, and fake nvidia-smi (4 GPUs), cmake, nvcc and compute-sanitizer on PATH. Checks the
# result file's lines and counts, that runs of one world size ran side by side on disjoint GPUs,
# that GPU_TESTS_LANES=1 gives the same result file, that GPU_TESTS_MEMCHECK_FIRST=1 runs the
# multi-GPU memchecks first, that GPU_TESTS_DRIVERS=0 runs no driver check, that GPU_TESTS_SANITIZE_SETS sanitizes named sets, that COCONET_ knobs set around a run are recorded, that the
# C-interface checks run in one batch and alone where it did not end ok, and that a run stopped by a signal (a device
# job's timeout) keeps the lines of the runs that finished. Usage: tests/gpu/runner_test.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
t="$(mktemp -d)"
trap 'rm -rf "$t"' EXIT
fail() { echo "runner_test: $*" >&2; exit 1; }
# (set -e stops at a failing command that no check above names: say which)
trap '[[ $- != *e* ]] || echo "runner_test: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

mkdir -p "$t/bin" "$t/repo/tests/gpu"
cat > "$t/bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$1" in -L) printf 'GPU 0\nGPU 1\nGPU 2\nGPU 3\n' ;; *) echo "FAKE, 1, 1 W" ;; esac
EOF
printf '#!/bin/sh\necho "Cuda compilation tools, release 0.0, fake"\necho\n' > "$t/bin/nvcc"
printf '#!/bin/sh\nexit 0\n' > "$t/bin/cmake"
cat > "$t/bin/compute-sanitizer" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ]; do case "$1" in --tool|--report-api-errors|--error-exitcode) shift 2 ;; *) break ;; esac; done
"$@" > /dev/null && exit 0
echo "========= Invalid __global__ write of size 4 bytes"
echo "=========     at k_fake(int)+0x10"
exit 9
EOF
chmod +x "$t/bin/"*
cp "$root/tests/gpu/run.sh" "$t/repo/tests/gpu/"
mkdir -p "$t/repo/tools" && cp "$root/tools/gpu-unpack.sh" "$t/repo/tools/"
printf '#!/bin/sh\nexit 0\n' > "$t/repo/tests/gpu/make-vectors.sh"
cd "$t/repo"
b=.gpu-bundle
for n in alpha beta beta@v; do
  p=${n%@*}
  mkdir -p "$b/gen/$n/build"
  # a driver: records when it ran and the GPUs it sees, takes a moment, fails on beta's 4-rank vectors
  cat > "$b/gen/$n/build/${p}_main" <<EOF
#!/bin/bash
start=\$(date +%s.%N)
sleep 0.5
[ "\${SLOW_BUILD:-}" = "$n" ] && { touch "$t/slow-started"; sleep 20; }
echo "\$start \$(date +%s.%N) \$CUDA_VISIBLE_DEVICES \$2 \${COCONET_MULTI_RANK_FORMS:-0}" >> "$t/seen"
case "\$*" in *beta/ranks4*) echo "mismatch"; exit 3 ;; esac
echo "y: ok (relative error 0)"
EOF
  chmod +x "$b/gen/$n/build/${p}_main"
done
# alpha's code has a device group with a one-rank form (GPU_TESTS_MULTI_AT_ONE)
echo 'auto* const k_k = coconet_rt::soloRanks(P_) ? &k<true> : &k<false>;' > "$b/gen/alpha/alpha.cu"
for p in alpha beta; do for r in 1 2 4; do mkdir -p "$b/dumps/$p/ranks$r" && touch "$b/dumps/$p/ranks$r/manifest.txt"; done; done
rm "$b/dumps/alpha/ranks4/manifest.txt"
mkdir -p "$b/dumps/alpha@s/ranks2" && touch "$b/dumps/alpha@s/ranks2/manifest.txt"

run() {  # OUTDIR VAR=VALUE...
  local o=$1; shift
  : > "$t/seen"
  env PATH="$t/bin:$PATH" MEMCHECK_P2="alpha" MEMCHECK_P4="beta@v" OUT="$o" "$@" bash tests/gpu/run.sh > "$o.log" 2>&1 ||
    fail "run.sh exited $? ($o.log)"
  cp "$t/seen" "$o.seen"
}
run "$t/lanes" GPU_TESTS_SHARE=1
run "$t/one" GPU_TESTS_LANES=1
run "$t/share"   # (GPU_TESTS_SHARE defaults to 2)

# the driver checks' lines, and the multi-GPU memchecks' (MEMCHECK_P2 / MEMCHECK_P4 of run())
checks="alpha P=1: ok
alpha P=2: ok
alpha P=4: no vectors
beta P=1: ok
beta P=2: ok
beta P=4: FAILED (exit 3)
beta@v P=1: ok
beta@v P=2: ok
beta@v P=4: FAILED (exit 3)
alpha@s (gen/alpha) P=2: ok
checks: 7 passed, 2 failed"
memchecks="compute-sanitizer memcheck alpha P=2: clean
compute-sanitizer memcheck beta@v P=4: exit 9: Invalid __global__ write of size 4 bytes in k_fake"
want="$checks
compute-sanitizer memcheck alpha: clean
compute-sanitizer memcheck beta: clean
compute-sanitizer memcheck beta@v: clean
compute-sanitizer racecheck alpha: clean
compute-sanitizer racecheck beta: clean
compute-sanitizer racecheck beta@v: clean
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/lanes/gpu-results.txt" | sed -E 's/: ok \(.*/: ok/; s/: no vectors .*/: no vectors/')
[ "$got" = "$want" ] || fail "result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
# the same file one run at a time (but the date line)
diff <(sed 2d "$t/lanes/gpu-results.txt" | sed 's/; GPU_TESTS_SHARE=1//') <(sed 2d "$t/one/gpu-results.txt" | sed 's/; GPU_TESTS_LANES=1//') > /dev/null ||
  fail "GPU_TESTS_LANES=1 gives another result file"
# side by side: 1-GPU runs on four different GPUs, 2-GPU runs on 0,1 and 2,3; one at a time: all four
[ "$(awk '$4 == 1 {print $3}' "$t/lanes.seen" | sort -u | tr '\n' ' ')" = "0 1 2 3 " ] || fail "1-GPU runs did not spread over the GPUs"
[ "$(awk '$4 == 2 {print $3}' "$t/lanes.seen" | sort -u | tr '\n' ' ')" = "0,1 2,3 " ] || fail "2-GPU runs did not take disjoint pairs"
[ "$(awk '{print $3}' "$t/one.seen" | sort -u | tr '\n' ' ')" = "0 0,1 0,1,2,3 " ] || fail "GPU_TESTS_LANES=1 did not run one at a time"
# GPU_TESTS_SHARE=2 (the default): two lanes on each set of GPUs, the same result file; the 4-GPU runs (one
# set) run two at a time: some of them overlap in time
diff <(sed 2d "$t/lanes/gpu-results.txt" | sed 's/; GPU_TESTS_SHARE=1//') <(sed 2d "$t/share/gpu-results.txt") > /dev/null ||
  fail "GPU_TESTS_SHARE=2 gives another result file"
[ "$(awk '$4 == 2 {print $3}' "$t/share.seen" | sort -u | tr '\n' ' ')" = "0,1 2,3 " ] || fail "GPU_TESTS_SHARE=2: 2-GPU runs did not keep to disjoint pairs"
together() {  # SEEN: whether two 4-GPU runs overlapped in time (each fake run takes 0.5 s or more)
  awk '$4 == 4 {print $1, $2}' "$1" | sort -g | awk 'NR > 1 && $1 < end {hit = 1} NR == 1 || $2 > end {end = $2} END {exit !hit}'
}
together "$t/share.seen" || fail "GPU_TESTS_SHARE=2: no two 4-GPU runs at once: $(awk '$4 == 4' "$t/share.seen")"
together "$t/lanes.seen" && fail "4-GPU runs at once with GPU_TESTS_SHARE=1: $(awk '$4 == 4' "$t/lanes.seen")"
# GPU_TESTS_MEMCHECK_FIRST=1: the multi-GPU memcheck runs come first (their own queue, before the
# checks), the rest as before.
run "$t/first" GPU_TESTS_MEMCHECK_FIRST=1 SANITIZE=0
want="$memchecks
$checks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/first/gpu-results.txt" | sed -E 's/: ok \(.*/: ok/; s/: no vectors .*/: no vectors/')
[ "$got" = "$want" ] || fail "GPU_TESTS_MEMCHECK_FIRST=1: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
# GPU_TESTS_DRIVERS=0: no driver checks (no "no vectors" line either); the multi-GPU memchecks
# still run, and they are the only driver runs.
run "$t/nodrivers" GPU_TESTS_DRIVERS=0 SANITIZE=0 COCONET_TIMELINE_CALL=3 COCONET_MULTI_RANK_FORMS=0
# the generated programs' switches set around a run are recorded, sorted; none, no line
[ "$(grep '^knobs:' "$t/nodrivers/gpu-results.txt")" = "knobs: COCONET_MULTI_RANK_FORMS=0 COCONET_TIMELINE_CALL=3" ] ||
  fail "the knobs' line: $(grep '^knobs:' "$t/nodrivers/gpu-results.txt" || echo none)"
! grep -q '^knobs:' "$t/lanes/gpu-results.txt" || fail "a knobs line without knobs set"
want="checks: 0 passed, 0 failed
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/nodrivers/gpu-results.txt")
[ "$got" = "$want" ] || fail "GPU_TESTS_DRIVERS=0: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
[ "$(wc -l < "$t/nodrivers.seen")" = 2 ] || fail "GPU_TESTS_DRIVERS=0 ran $(wc -l < "$t/nodrivers.seen") drivers, not the 2 memchecks"
# SANITIZE_TOOLS: only those tools on the 1-GPU runs (the multi-GPU memchecks as before)
run "$t/tools" GPU_TESTS_DRIVERS=0 SANITIZE_TOOLS=racecheck
want="checks: 0 passed, 0 failed
compute-sanitizer racecheck alpha: clean
compute-sanitizer racecheck beta: clean
compute-sanitizer racecheck beta@v: clean
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/tools/gpu-results.txt")
[ "$got" = "$want" ] || fail "SANITIZE_TOOLS=racecheck: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
grep -q '^command: .*; SANITIZE_TOOLS="racecheck"' "$t/tools/gpu-results.txt" || fail "SANITIZE_TOOLS not in the command line"
# GPU_TESTS_MULTI_AT_ONE=1: builds with device groups (alpha) checked at one rank a second time,
# with COCONET_MULTI_RANK_FORMS=1 set around that run only
# (a size variant's one-rank vectors too, for this run only)
mkdir -p "$b/dumps/alpha@s/ranks1" && touch "$b/dumps/alpha@s/ranks1/manifest.txt"
run "$t/multi" GPU_TESTS_MULTI_AT_ONE=1 GPU_TESTS_RANKS=1 SANITIZE=0
rm -r "$b/dumps/alpha@s/ranks1"
want="alpha P=1: ok
alpha (multi-rank forms) P=1: ok
beta P=1: ok
beta@v P=1: ok
alpha@s (gen/alpha) P=1: ok
alpha@s (gen/alpha, multi-rank forms) P=1: ok
checks: 6 passed, 0 failed
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/multi/gpu-results.txt" | sed -E 's/: ok \(.*/: ok/')
[ "$got" = "$want" ] || fail "GPU_TESTS_MULTI_AT_ONE=1: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
# (the other six: four checks, the two multi-GPU memchecks)
[ "$(awk '$5 == 1' "$t/multi.seen" | wc -l)" = 2 ] && [ "$(awk '$5 == 0' "$t/multi.seen" | wc -l)" = 6 ] ||
  fail "COCONET_MULTI_RANK_FORMS=1 not around exactly the one run: $(cat "$t/multi.seen")"
# ... and under the sanitizers, alpha's multi-rank forms run again with the variable around them
run "$t/multisan" GPU_TESTS_MULTI_AT_ONE=1 GPU_TESTS_RANKS=1 GPU_TESTS_DRIVERS=0 SANITIZE_TOOLS=memcheck
want="checks: 0 passed, 0 failed
compute-sanitizer memcheck alpha: clean
compute-sanitizer memcheck alpha (multi-rank forms): clean
compute-sanitizer memcheck beta: clean
compute-sanitizer memcheck beta@v: clean
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/multisan/gpu-results.txt")
[ "$got" = "$want" ] || fail "GPU_TESTS_MULTI_AT_ONE=1 with sanitizers: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
[ "$(awk '$5 == 1' "$t/multisan.seen" | wc -l)" = 1 ] ||
  fail "COCONET_MULTI_RANK_FORMS=1 not around exactly the one sanitizer run: $(cat "$t/multisan.seen")"
# GPU_TESTS_SANITIZE_SETS: the sanitizers on a named set's one-rank vectors too, with each of its
# program's builds (a set without one-rank vectors, beta@v here, is passed over)
mkdir -p "$b/dumps/alpha@s/ranks1" && touch "$b/dumps/alpha@s/ranks1/manifest.txt"
run "$t/sansets" GPU_TESTS_RANKS=1 GPU_TESTS_DRIVERS=0 SANITIZE_TOOLS=memcheck GPU_TESTS_SANITIZE_SETS="alpha@s beta@v"
rm -r "$b/dumps/alpha@s/ranks1"
want="checks: 0 passed, 0 failed
compute-sanitizer memcheck alpha: clean
compute-sanitizer memcheck beta: clean
compute-sanitizer memcheck beta@v: clean
compute-sanitizer memcheck alpha@s (gen/alpha): clean
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/sansets/gpu-results.txt")
[ "$got" = "$want" ] || fail "GPU_TESTS_SANITIZE_SETS: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
grep -q '^command: .*; GPU_TESTS_SANITIZE_SETS="alpha@s beta@v"' "$t/sansets/gpu-results.txt" ||
  fail "GPU_TESTS_SANITIZE_SETS not in the command line"
# GPU_TESTS_ONLY: names and shell patterns ("beta@*": beta's variants, not beta itself; a "*"
# in the folder must not expand to its files).
touch "beta@file"
run "$t/only" GPU_TESTS_ONLY="alpha beta@*" SANITIZE=0
rm "beta@file"
want="alpha P=1: ok
alpha P=2: ok
alpha P=4: no vectors
beta@v P=1: ok
beta@v P=2: ok
beta@v P=4: FAILED (exit 3)
alpha@s (gen/alpha) P=2: ok
checks: 5 passed, 1 failed
$memchecks"
got=$(grep -E '^(alpha|beta|checks|compute-sanitizer)' "$t/only/gpu-results.txt" | sed -E 's/: ok \(.*/: ok/; s/: no vectors .*/: no vectors/')
[ "$got" = "$want" ] || fail "GPU_TESTS_ONLY with a pattern: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
# The C interface: one batch of capi_check.py for every check (a fake python3 with "torch"), then
# alone whatever the batch did not end ok: alpha ok in the batch (not rerun), beta stops the batch
# (ok alone), beta@v not run by it (WRONG alone). GPU_TESTS_CAPI_BATCH=0: each alone.
mkdir -p "$t/pybin"
cat > "$t/pybin/python3" <<EOF
#!/bin/bash
[ "\$1" = -c ] && exit 0   # import torch
shift                      # tests/gpu/capi_check.py
if [ "\$1" = --batch ]; then
  echo "batch \$(wc -l < "\$2")" >> "$t/capi-calls"
  stop=""
  while read -r label rest; do
    if [ -n "\$stop" ]; then echo "== \$label: not run"; continue; fi
    case "\$label" in
      beta) echo "== \$label: FAILED (1 of 2 ranks did not report in 180 s; the batch stops)"; stop=1 ;;
      *) for r in 0 1; do echo "\$label: rank \$r: 'y' (f32): relative error 0 (limit 0.0001): ok"; done; echo "== \$label: ok" ;;
    esac
    [ -n "\${FAKE_BATCH_SLEEP:-}" ] && { touch "$t/batch-sleeps"; sleep 30; }
  done < "\$2"
  exit 1
fi
echo "alone \$1" | sed "s#//#/#g" >> "$t/capi-calls"
case "\$1" in *beta@v*) echo "rank 0: 'y' (f32): relative error 0.5 (limit 0.0001): WRONG"; exit 1 ;; esac
for r in 0 1; do echo "rank \$r: 'y' (f32): relative error 0 (limit 0.0001): ok"; done
echo "beta P=2 through the C interface: ok"
EOF
chmod +x "$t/pybin/python3"
for n in alpha beta beta@v; do touch "$b/gen/$n/build/libcoconet_${n%@*}.so"; done
for mode in 1 0; do
  : > "$t/capi-calls"
  env PATH="$t/pybin:$t/bin:$PATH" GPU_TESTS_CAPI_BATCH=$mode GPU_TESTS_DRIVERS=0 SANITIZE=0 OUT="$t/capi$mode" \
    bash tests/gpu/run.sh > "$t/capi$mode.log" 2>&1 || fail "run.sh exited $? ($t/capi$mode.log)"
  want="capi alpha P=2: ok (2 tensor checks)
capi beta P=2: ok (2 tensor checks)
capi beta@v P=2: FAILED
checks: 2 passed, 1 failed"
  got=$(grep -E '^(capi|checks)' "$t/capi$mode/gpu-results.txt")
  [ "$got" = "$want" ] || fail "GPU_TESTS_CAPI_BATCH=$mode: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
  calls="alone .gpu-bundle/gen/beta/build
alone .gpu-bundle/gen/beta@v/build"
  [ $mode = 1 ] && calls="batch 3
$calls" || calls="alone .gpu-bundle/gen/alpha/build
$calls"
  [ "$(cat "$t/capi-calls")" = "$calls" ] || fail "GPU_TESTS_CAPI_BATCH=$mode: capi_check.py ran as
$(cat "$t/capi-calls"), not as
$calls"
done
# Stopped in the batch (TERM to the process group once it ended alpha ok): alpha's line, the others
# not run.
set +e
stopWhen() {  # MARKER COMMAND...: COMMAND in a process group of its own, TERM to it once MARKER is made
  rm -f "$1"
  setsid "${@:2}" &
  local pid=$!
  for _ in $(seq 1200); do [ -e "$1" ] && break; sleep 0.1; done
  kill -TERM -- "-$pid"
  wait "$pid"
}
stopWhen "$t/batch-sleeps" env PATH="$t/pybin:$t/bin:$PATH" FAKE_BATCH_SLEEP=1 GPU_TESTS_DRIVERS=0 SANITIZE=0 OUT="$t/capistop" \
  bash tests/gpu/run.sh > "$t/capistop.log" 2>&1
rc=$?
set -e
[ "$rc" = 124 ] || fail "a run stopped in the C-interface batch exited $rc, not 124 ($t/capistop.log)"
want="capi alpha P=2: ok (2 tensor checks)
capi beta P=2: not run (stopped)
capi beta@v P=2: not run (stopped)
stopped by a signal; checks until then: 1 passed, 0 failed"
got=$(grep -E '^(capi|checks|stopped)' "$t/capistop/gpu-results.txt")
[ "$got" = "$want" ] || fail "a run stopped in the C-interface batch: result lines differ:
$(diff <(echo "$want") <(echo "$got"))"
rm -f "$b"/gen/*/build/libcoconet_*.so
# Stopped midway, as a device job's `timeout` stops it (TERM to the process group): the runs that
# finished keep their lines, in queued order, the others say so, and the counts so far follow. The
# TERM comes once beta@v's one-rank run started (one run at a time: after alpha's and beta's),
# however long the runs before it took.
set +e
stopWhen "$t/slow-started" env PATH="$t/bin:$PATH" SLOW_BUILD=beta@v GPU_TESTS_LANES=1 SANITIZE=0 OUT="$t/stop" bash tests/gpu/run.sh \
  > "$t/stop.log" 2>&1
rc=$?
set -e
[ "$rc" = 124 ] || fail "a stopped run exited $rc, not 124 ($t/stop.log)"
want="alpha P=1: ok
alpha P=2: not run (stopped)
alpha P=4: no vectors
beta P=1: ok
beta P=2: not run (stopped)
beta P=4: not run (stopped)
beta@v P=1: not run (stopped)
beta@v P=2: not run (stopped)
beta@v P=4: not run (stopped)
alpha@s (gen/alpha) P=2: not run (stopped)
stopped by a signal; checks until then: 2 passed, 0 failed"
got=$(grep -E '^(alpha|beta|stopped|checks)' "$t/stop/gpu-results.txt" | sed -E 's/: ok \(.*/: ok/; s/: no vectors .*/: no vectors/')
[ "$got" = "$want" ] || fail "a stopped run's lines differ:
$(diff <(echo "$want") <(echo "$got"))"
[ -f "$t/stop/gpu-logs.tgz" ] || fail "a stopped run packed no logs"
echo "runner_test: ok"
