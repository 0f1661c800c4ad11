#!/usr/bin/env bash
# session 31 job 4 (4 GPUs; LIMIT seconds in all, default 420): all_to_all outside pipelines as one
# device kernel (d859da2). GPU tests of all_to_all and all_to_all@nccl at 2 and 4 GPUs (memcheck at
# 2); driver A/B of the two builds at three sizes (whole program: three all_to_alls); the MoE and
# embedding benches at 4 GPUs with the unscheduled rows both ways, taking turns. -> $OUT/s31d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-420}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s31d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
timeout 150 env GPU_TESTS_ONLY="all_to_all all_to_all@nccl" GPU_TESTS_RANKS="2 4" SANITIZE=0 MEMCHECK_P2="all_to_all" OUT=$R/gpu-tests bash tests/gpu/run.sh > $R/tests.log 2>&1
step tests $?
for sz in "B=64 D=64" "B=1024 D=1024" "B=8192 D=1024"; do
  set -- $sz
  timeout 60 bash tools/bench/gpu/driver-ab.sh --ranks "2 4" --iters 200 --warmup 20 --reps 2 -D $1 -D $2 .gpu-bundle/gen/all_to_all .gpu-bundle/gen/all_to_all@nccl >> $R/driver-ab.txt 2>&1
  step "driver-ab $sz" $?
done
for w in moe embedding; do
  s=$(( $(left) - 20 )); [ $s -gt 150 ] && s=150; [ $s -gt 30 ] || break
  timeout $s env OUT=$R/$w WORK=/tmp/bw-$w BENCH_TIMEOUT=$(( s - 10 )) BENCH_ARGS='--interleave 10 --iters 50 --rows coconetc_unscheduled,coconetc_unscheduled_nccl' bash tools/bench/gpu/run.sh --gpus 4 --workloads $w > $R/$w.log 2>&1
  step "bench $w" $?
done
cat $R/header.txt; tail -12 $R/gpu-tests/gpu-results.txt; grep -E "median_us|P=" $R/driver-ab.txt | tail -30
for w in moe embedding; do grep -A5 "Median time" $R/$w/results.md 2>/dev/null | head -7; done
cd $OUT && tar czf s31d.tgz s31d && rm -rf s31d
