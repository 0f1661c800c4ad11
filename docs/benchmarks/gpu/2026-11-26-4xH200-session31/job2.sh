#!/usr/bin/env bash
# session 31 job 2 (a 4-GPU host; LIMIT seconds in all, default 570): the MoE bench at 4 GPUs with
# the rows taking turns again (a second run of job 1's), then at 2 GPUs (of the same host) with the
# rows taking turns and one after another, GEMV + all-reduce at 2 GPUs both ways, and the LAMB bench
# at 4 GPUs with the rows taking turns. Every bench: 100 timed steps; the turns 10 rounds of 10.
# Results under $OUT/s31b.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s31b; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
# bench NAME GPUS WORKLOAD SECONDS [BENCH_ARGS...]
bench() {
  local name=$1 gpus=$2 w=$3 s=$4; shift 4
  [ "$(left)" -gt 40 ] || { step "$name skipped" -; return; }
  (( s > $(left) - 10 )) && s=$(( $(left) - 10 ))
  timeout $s env OUT=$R/$name WORK=/tmp/bw-$name BENCH_TIMEOUT=$(( s - 10 )) BENCH_ARGS="$*" bash tools/bench/gpu/run.sh --gpus "$gpus" --workloads "$w" > $R/$name.log 2>&1
  step "$name" $?
}
bench moe4-interleaved 4 moe 130 --interleave 10 --iters 100
bench moe2-interleaved 2 moe 110 --interleave 10 --iters 100
bench moe2-sequential 2 moe 110 --iters 100
bench gemv2-interleaved 2 gemv 80 --interleave 10 --iters 100
bench gemv2-sequential 2 gemv 80 --iters 100
bench lamb4-interleaved 4 lamb 150 --interleave 10 --iters 100 --rows eager,coconetc,nccl_allreduce
cat $R/header.txt
for b in moe4-interleaved moe2-interleaved moe2-sequential gemv2-interleaved gemv2-sequential; do echo "== $b"; grep -A6 "^| config | unfused" $R/$b/results.md 2>/dev/null | head -6; done
echo "== lamb"; grep -A9 "Median time" $R/lamb4-interleaved/results.md 2>/dev/null | head -12
cd $OUT && tar czf s31b.tgz s31b && rm -rf s31b
