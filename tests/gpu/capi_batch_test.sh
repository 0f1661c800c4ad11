#!/usr/bin/env bash
# tests/gpu/capi_check.py without a GPU: its stand-in torch (tests/gpu/fake/torch) and stand-in
# generated libraries (tests/gpu/fake/fakeprog.c: a right one, a wrong one, one whose rank 1
# never returns from create, one whose rank 1 aborts) with their dumps. Checks a check alone (right: exit 0; wrong:
# exit 1), and a batch: each check's tensor lines and end line, a wrong check followed by a right
# one in the same processes, a hung one stopping the batch after CAPI_CHECK_TIMEOUT and the
# checks after it not run, a crashed worker stopping it at once. Usage: tests/gpu/capi_batch_test.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
t="$(mktemp -d)"
trap 'rm -rf "$t"' EXIT
fail() { echo "capi_batch_test: $*" >&2; exit 1; }
command -v cc > /dev/null || { echo "capi_batch_test: no C compiler; skipping"; exit 77; }

for n in fake_ok fake_bad fake_hang fake_crash; do
  mkdir -p "$t/$n/build"
  cc -shared -fPIC -O1 -DNAME="$n" "$root/tests/gpu/fake/fakeprog.c" -o "$t/$n/build/libcoconet_$n.so"
  # the dump (verify --dump's layout): x = 1, 2, 3, 4 on every rank, y = 2 x + rank expected
  python3 - "$t/dumps/$n/ranks2" "$n" <<'EOF'
import os, struct, sys
d, name = sys.argv[1], sys.argv[2]
os.makedirs(d)
lines = [f"program {name}", "ranks 2", "seed 1", "size N 4"]
for r in range(2):
    x = [1.0, 2.0, 3.0, 4.0]
    for kind, tensor, vals in (("in", "x", x), ("out", "y", [2 * v + r for v in x])):
        open(os.path.join(d, f"{tensor}{r}.bin"), "wb").write(struct.pack("<4d", *vals))
        lines.append(f"tensor {kind} {tensor} f64 {r} {tensor}{r}.bin 4")
open(os.path.join(d, "manifest.txt"), "w").write("\n".join(lines) + "\n")
EOF
done
check() { env PYTHONPATH="$root/tests/gpu/fake" CAPI_CHECK_TIMEOUT=3 python3 "$root/tests/gpu/capi_check.py" "$@"; }

# alone
check "$t/fake_ok/build" "$t/dumps/fake_ok/ranks2" > "$t/ok.log" 2>&1 || fail "a right check alone failed ($(cat "$t/ok.log"))"
grep -qx "fake_ok P=2 through the C interface: ok" "$t/ok.log" || fail "a right check alone: $(cat "$t/ok.log")"
[ "$(grep -c "'y' (f64): relative error 0 (limit 1e-10): ok" "$t/ok.log")" = 2 ] || fail "a right check alone: not two tensor lines ok"
if check "$t/fake_bad/build" "$t/dumps/fake_bad/ranks2" > "$t/bad.log" 2>&1; then fail "a wrong check alone passed"; fi
grep -q "WRONG" "$t/bad.log" || fail "a wrong check alone says no WRONG: $(cat "$t/bad.log")"

# a batch
for c in "ok1 fake_ok" "bad fake_bad" "ok2 fake_ok" "hang fake_hang" "after fake_ok"; do
  set -- $c
  echo "$1 $t/$2/build $t/dumps/$2/ranks2"
done > "$t/list"
start=$(date +%s)
if check --batch "$t/list" > "$t/batch.log" 2>&1; then fail "a batch with a wrong check exited 0"; fi
[ $(( $(date +%s) - start )) -lt 60 ] || fail "the batch took more than 60 s"
# a worker that dies stops the batch at once (not after CAPI_CHECK_TIMEOUT)
printf 'ok3 %s %s\ncrash %s %s\nlast %s %s\n' "$t/fake_ok/build" "$t/dumps/fake_ok/ranks2" "$t/fake_crash/build" \
  "$t/dumps/fake_crash/ranks2" "$t/fake_ok/build" "$t/dumps/fake_ok/ranks2" > "$t/list2"
if check --batch "$t/list2" > "$t/crash.log" 2>&1; then fail "a batch with a crash exited 0"; fi
want2="== ok3: ok
== crash: FAILED (rank 1's process ended (exit -6); the batch stops)
== last: not run"
[ "$(grep '^== ' "$t/crash.log")" = "$want2" ] || fail "the crashed batch's end lines differ: $(cat "$t/crash.log")"
want="== ok1: ok
== bad: FAILED
== ok2: ok
== hang: FAILED (1 of 2 ranks did not report in 3 s; the batch stops)
== after: not run"
got=$(grep '^== ' "$t/batch.log")
[ "$got" = "$want" ] || fail "the batch's end lines differ:
$(diff <(echo "$want") <(echo "$got"))
$(cat "$t/batch.log")"
for l in ok1 ok2; do
  [ "$(grep -c "^$l: rank [01]: 'y' (f64): relative error 0 (limit 1e-10): ok$" "$t/batch.log")" = 2 ] || fail "$l: not two tensor lines ok"
done
[ "$(grep -c "^bad: rank [01]: 'y' (f64): .*: WRONG$" "$t/batch.log")" = 2 ] || fail "bad: not two WRONG tensor lines"
echo "capi_batch_test: ok"
