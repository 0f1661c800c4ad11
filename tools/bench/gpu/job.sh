# Sourced by a session's device-job script (docs/benchmarks/gpu/<date>-<gpus>-sessionNN/jobN.sh):
# the parts every such script repeats. On the GPU machine, from the repository root:
#
#   source tools/bench/gpu/job.sh
#   job_begin s39a 570              # $OUT/s39a, a time budget of 570 s from now
#   job_tests 260 GPU_TESTS_ONLY="..." GPU_TESTS_RANKS="4"    # tests/gpu/run.sh into $R/gpu-tests
#   job_bench megatron4 4 megatron $(( $(left) - 10 )) MEGATRON_DECODE_TOKENS=... BUILD_ARGS=... BENCH_ARGS=...
#   job_end                         # prints the header, the tests' non-ok lines and the tables; packs $R
#
# The header ($R/header.txt) names the date, the GPUs and the bundle's commit (.gpu-bundle/commit.txt,
# written by tools/gpu-bundle.sh: `git describe --dirty`); each step appends
# its exit code and the seconds since job_begin.
bash tools/gpu-unpack.sh   # a bundle tools/gpu-bundle.sh packed
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

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

job_tests() {  # SECONDS VAR=VALUE...: tests/gpu/run.sh with these settings (SANITIZE=0 unless given)
  local s=$1; shift
  timeout "$s" env SANITIZE=0 "$@" OUT="$R/gpu-tests" bash tests/gpu/run.sh > "$R/tests.log" 2>&1
  step tests $?
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
  if [ -f "$R/gpu-tests/gpu-results.txt" ]; then
    grep -v ": ok" "$R/gpu-tests/gpu-results.txt" | tail -n 25
    echo "ok lines: $(grep -c ': ok' "$R/gpu-tests/gpu-results.txt")"
  fi
  local d
  for d in "${JOB_BENCHES[@]}"; do
    grep -B2 -A12 "GPU time" "$R/$d/results.md" 2>/dev/null | grep "^|"
    echo "$d: $(grep -c "fail (" "$R/$d/results.md" 2>/dev/null) failed checks"
  done
  (cd "$OUT" && tar czf "$JOB_NAME.tgz" "$JOB_NAME" && rm -rf "$JOB_NAME")
}
