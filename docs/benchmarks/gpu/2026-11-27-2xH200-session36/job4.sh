#!/usr/bin/env bash
# session 36 job 4 (LIMIT seconds in all, default 400), 2 GPUs: where Megatron's decode step at T =
# 32 (B = 1, S = 32, H = 4096, f16: 256 KiB of partial sums) spends its time in the group's three
# one-shot forms (tools/bench/gpu/timeline.sh: event timelines of one call after 300 warm-up
# calls; tune(f, algorithm = one_shot | ll | ll128)); then the allreduce's new default (LL128 from
# 256 KiB to 2 MiB on 2 ranks) beside NCCL at 256 KiB .. 4 MiB. -> $OUT/s36d
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); LIMIT=${LIMIT:-400}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
R=$OUT/s36d; mkdir -p $R
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | sort | uniq -c; cat .gpu-bundle/commit.txt 2>/dev/null; } > $R/header.txt
step() { echo "$1 rc=$2 at +$(( $(date +%s) - T0 )) s" >> $R/header.txt; }
for a in one_shot ll ll128; do
  TIMELINE_WORK=/tmp/tl-$a TIMELINE_BUILD_ONLY=1 bash tools/bench/gpu/timeline.sh mr32_$a samples/megatron_row/megatron_row.cnet \
    samples/megatron_row/megatron_row.sched "tune(f, algorithm = $a);" 2 B=1 S=32 H=4096 seed=1 > $R/build-$a.log 2>&1 &
done
wait
step builds 0
for a in one_shot ll ll128; do
  OUT=$R TIMELINE_WORK=/tmp/tl-$a TIMELINE_WARMUP=300 timeout 60 bash tools/bench/gpu/timeline.sh mr32_$a samples/megatron_row/megatron_row.cnet \
    samples/megatron_row/megatron_row.sched "tune(f, algorithm = $a);" 2 B=1 S=32 H=4096 seed=1 > /dev/null 2>&1
  step "timeline $a" $?
done
s=$(( $(left) - 15 ))
if [ $s -gt 60 ]; then
  timeout $s env OUT=$R/allreduce WORK=/tmp/bw-ar BENCH_TIMEOUT=$(( s - 10 )) ALLREDUCE_SIZES=256K,512K,1M,2M,4M \
    BUILD_ARGS='--programs allreduce,allreduce_one_shot' BENCH_ARGS="--rows nccl_allreduce,coconetc,coconetc_one_shot" \
    bash tools/bench/gpu/run.sh --gpus 2 --workloads allreduce > $R/allreduce.log 2>&1
  step "bench allreduce" $?
fi
cat $R/header.txt; for a in one_shot ll ll128; do grep -v "^# command" $R/timeline-mr32_$a.txt | head -30; done
grep -B2 -A10 "GPU time per step" $R/allreduce/results.md 2>/dev/null | grep "^|"; grep -c "fail (" $R/allreduce/results.md
cd $OUT && tar czf s36d.tgz s36d && rm -rf s36d
