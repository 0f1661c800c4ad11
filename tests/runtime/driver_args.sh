#!/usr/bin/env bash
# The generated driver's command line (adam's, built by the cuda_build test): numbers are read
# whole, and a bad one stops the driver with exit code 2 and a message naming the option, before
# any CUDA call (so this runs on a machine without a GPU). Skipped (77) where the driver was not built.
set -uo pipefail
exe="${1:?usage: driver_args.sh ADAM_MAIN}"
[ -x "$exe" ] || { echo "driver_args: $exe not built; skipping"; exit 77; }
fails=0
expect() {  # expect MESSAGE ARGS...: exit code 2 and MESSAGE on stderr
  local want="$1"; shift
  local err rc
  err=$("$exe" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" != 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: adam_main $*: rc=$rc, stderr: $err (wanted rc=2 and: $want)"; fails=$((fails + 1))
  else
    echo "ok: adam_main $* -> $err"
  fi
}
expect "adam_main: -D N: '2^28x' is not an integer (digits, or a product such as 3*2^20)" -D N=2^28x
expect "adam_main: -D N: '2^x' is not an integer" -D N=2^x
expect "adam_main: -D N: '1.5' is not an integer" -D N=1.5
expect "adam_main: -D N: '-4' is not an integer" -D N=-4
expect "adam_main: -D N: 0 is less than 1" -D N=0
expect "adam_main: -D N: 2^70 is too large" -D N=2^70
expect "adam_main: -D N: 3*2^62 is too large" -D N='3*2^62'
expect "adam_main: -D N: expected NAME=VALUE" -D N
expect "adam_main: -D lr: 'abc' is not a finite number" -D lr=abc
expect "adam_main: -D lr: '1e-3x' is not a finite number" -D lr=1e-3x
expect "adam_main: -D lr: 'nan' is not a finite number" -D lr=nan
expect "adam_main: --spawn: 0 is less than 1" --spawn 0
expect "adam_main: --spawn: 'two' is not an integer" --spawn two
expect "adam_main: --spawn: 5000 is more than 4096" --spawn 5000
expect "adam_main: --iters: '2.5' is not an integer" --iters 2.5
expect "adam_main: --batch: 0 is less than 1" --batch 0
expect "adam_main: --timeout: seconds must be positive" --timeout 0
expect "adam_main: --warmup-seconds: seconds must be between 0 and 3600" --warmup-seconds -1
expect "adam_main: --warmup-seconds: 'soon' is not a finite number" --warmup-seconds soon
expect "adam_main: --spawn needs a value" --spawn
expect "adam_main: unknown option --frobnicate" --frobnicate
# Every size and every scalar without a default (Adam's step t) must be given:
expect "adam_main: scalar t has no default: pass -D t=VALUE (or --check DIR)" -D N=1024
expect "adam_main: size N is not given: pass -D N=VALUE (or --check DIR)" -D t=1
# A launcher's rank and world size are read the same way:
RANK=4 WORLD_SIZE=4 expect "adam_main: RANK: 4 is more than 3" -D N=8 -D t=1
RANK=0 WORLD_SIZE=four expect "adam_main: WORLD_SIZE: 'four' is not an integer" -D N=8 -D t=1
# Good values are read whole (the defines are applied in order, so the error names only Q):
expect "adam_main: -D Q: adam has no parameter 'Q'" -D N=3*2^20 -D t=2^3 -D lr=1e-3 --iters 2^4 -D Q=1
# --help: exit 0, every option, and every COCONET_* variable the runtime reads with its range
# (test and debug switches only: the performance choices are tuning-table entries):
help=$("$exe" --help 2>&1); rc=$?
for want in "usage: " "--check DIR" "--spawn N" "--batch K" "test and debug switches" \
            "COCONET_MULTI_RANK_FORMS (0 to 1)" "COCONET_TIMELINE_CALL (1 to 1099511627776)"; do
  if [ "$rc" != 0 ] || [[ "$help" != *"$want"* ]]; then
    echo "FAIL: adam_main --help: rc=$rc, no '$want' in: $help"; fails=$((fails + 1))
  fi
done
[ "$(grep -c '^  COCONET_' <<< "$help")" = 2 ] || { echo "FAIL: adam_main --help: not the two variables: $help"; fails=$((fails + 1)); }
[ "$rc" = 0 ] && echo "ok: adam_main --help lists the options and COCONET_* variables"
[ "$fails" = 0 ] && echo "driver_args: all passed" || { echo "driver_args: $fails failed"; exit 1; }
