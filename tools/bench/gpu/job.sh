# Sourced by a session's device-job script (docs/benchmarks/gpu/<date>-<gpus>-sessionNN/jobN.sh):
# the parts every such script repeats. On the GPU machine, from the repository root:
#
#   source tools/bench/gpu/job.sh
#   job_begin s39a 570              # $OUT/s39a, a time budget of 570 s from now
#   job_tests 260 GPU_TESTS_ONLY="..." GPU_TESTS_RANKS="4"    # tests/gpu/run.sh into $R/gpu-tests
#   job_tests --as knob 200 COCONET_X=1 GPU_TESTS_ONLY="..."  # again, into $R/gpu-tests-knob
#   job_stamps fixed 60 .gpu-bundle/ab/curst 16777216 COCONET_X=0   # stamps.py's driver, $R/stamps.txt
#   job_stamps --ranks 1 --reps 3 p1 60 .gpu-bundle/ab/p1st 4194304   # (4 ranks, one run by default)
#   job_bench megatron4 4 megatron $(( $(left) - 10 )) MEGATRON_DECODE_TOKENS=... BUILD_ARGS=... BENCH_ARGS=...
#   job_end                         # prints the header, the tests' non-ok lines and the tables; packs $R
#
# The header ($R/header.txt) names the date, the GPUs and the bundle's commit (.gpu-bundle/commit.txt,
# written by tools/gpu-bundle.sh: `git describe --dirty`); each step appends
# its exit code and the seconds since job_begin.
bash tools/gpu-unpack.sh   # a bundle tools/gpu-bundle.sh packed
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# the bundle's libraries (tools/gpu-bundle.sh) for the drivers and the bench's builds
export LD_LIBRARY_PATH="$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

job_begin() {  # NAME LIMIT
  JOB_NAME=$1; JOB_LIMIT=$2; JOB_T0=$(date +%s)
  R=$OUT/$JOB_NAME; mkdir -p "$R"
  { echo "== date $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c
    cat .gpu-bundle/commit.txt 2>/dev/null; } > "$R/header.txt"
  JOB_BENCHES=()
}

left() { echo $(( JOB_LIMIT - ($(date +%s) - JOB_T0) )); }

step() { echo "$1 rc=$2 at +$(( $(date +%s) - JOB_T0 )) s" >> "$R/header.txt"; }

job_tests() {  # [--as NAME] SECONDS VAR=VALUE...: tests/gpu/run.sh with these settings (SANITIZE=0
  # unless given) into $R/gpu-tests (with --as, $R/gpu-tests-NAME: a second run in the same job)
  local as=""
  if [ "$1" = --as ]; then as="-$2"; shift 2; fi
  local s=$1; shift
  timeout "$s" env SANITIZE=0 "$@" OUT="$R/gpu-tests$as" bash tests/gpu/run.sh > "$R/tests$as.log" 2>&1
  step "tests$as" $?
}

job_stamps() {  # [--ranks P] [--reps K] NAME SECONDS DRIVER N [VAR=VALUE ...]: K stamped driver runs
  # (default 1) at P ranks (default 4; call 200 of 250; DRIVER built by tools/bench/gpu/stamps.py)
  # with these COCONET_* settings: raw files in $R/raw-NAME, their ST lines sorted by rank, block and
  # stamp appended to $R/stamps.txt
  local ranks=4 reps=1
  while [ "${1#--}" != "$1" ]; do
    case "$1" in --ranks) ranks=$2 ;; --reps) reps=$2 ;; *) echo "job_stamps: $1?" >&2; return 2 ;; esac
    shift 2
  done
  local name=$1 s=$2 drv=$3 n=$4; shift 4
  timeout "$s" bash tools/bench/gpu/driver-ab.sh --ranks "$ranks" --iters 200 --warmup 50 --reps "$reps" \
    --raw "$R/raw-$name" --env "$*" -D N="$n" -D t=10 "$drv" >> "$R/ab.txt" 2>&1
  step "stamps $name" $?
  local f
  for f in "$R/raw-$name"/*.txt; do echo "== $name $f"; grep -h "^ST" "$f" | sort -k3,3n -k5,5n -k7,7n; done >> "$R/stamps.txt"
}

job_bench() {  # DIR GPUS WORKLOADS SECONDS VAR=VALUE...: tools/bench/gpu/run.sh into $R/DIR, skipped under 40 s
  local dir=$1 gpus=$2 wl=$3 s=$4; shift 4
  [ "$s" -gt 40 ] || { step "bench $dir skipped" -; return; }
  timeout "$s" env OUT="$R/$dir" WORK="/tmp/bw-$dir" BENCH_TIMEOUT=$(( s - 5 )) "$@" \
    bash tools/bench/gpu/run.sh --gpus "$gpus" --workloads "$wl" > "$R/$dir.log" 2>&1
  step "bench $dir" $?
  JOB_BENCHES+=("$dir")
}

job_end() {
  cat "$R/header.txt"
  local d
  for d in "$R"/gpu-tests "$R"/gpu-tests-*; do
    [ -f "$d/gpu-results.txt" ] || continue
    grep -v ": ok" "$d/gpu-results.txt" | tail -n 25
    echo "${d##*/} ok lines: $(grep -c ': ok' "$d/gpu-results.txt")"
  done
  for d in "${JOB_BENCHES[@]}"; do
    grep -B2 -A12 "GPU time" "$R/$d/results.md" 2>/dev/null | grep "^|"
    echo "$d: $(grep -c "fail (" "$R/$d/results.md" 2>/dev/null) failed checks"
  done
  (cd "$OUT" && tar czf "$JOB_NAME.tgz" "$JOB_NAME" && rm -rf "$JOB_NAME")
}
