#!/usr/bin/env bash
# The LL forms' stress test on a GPU machine (tests/gpu/ll_stress.py: many back-to-back calls of
# the allreduce, every output checked bit for bit against NCCL's). Builds the allreduce bench
# program with the schedules asked for (tools/bench/gpu/build.py, keys of workloads/allreduce.py),
# then runs the check at each world size.
#   bash tests/gpu/ll-stress.sh [--gpus 2,4] [--programs allreduce,allreduce_ll,allreduce_ll128] [-- ll_stress.py options]
# Env: OUT (results folder, default /tmp/ll-stress), WORK (build folder), COCONETC.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
gpus=2 programs=allreduce,allreduce_ll,allreduce_ll128
while [ $# -gt 0 ]; do
  case "$1" in
    --gpus) gpus=$2; shift 2 ;;
    --programs) programs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "ll-stress: unknown option $1" >&2; exit 2 ;;
  esac
done
out=${OUT:-/tmp/ll-stress} work=${WORK:-/tmp/ll-stress-work}
mkdir -p "$out"
cc=${COCONETC:-}
if [ -z "$cc" ] && [ -x "$root/.gpu-bundle/bin/coconetc" ]; then
  cc="$root/.gpu-bundle/bin/coconetc"
  export LD_LIBRARY_PATH="$root/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
[ -n "$cc" ] || cc="$root/build/coconetc"
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -n 1)
export NCCL_ROOT="${NCCL_ROOT:-$NC}" NCCL_NVLS_ENABLE=0
cd "$root"
python3 tools/bench/gpu/build.py --coconetc "$cc" --work "$work" --out "$out/build.json" --logs "$out/logs" \
  --workloads allreduce --programs "$programs" --sample-repeats 0 > "$out/build.log" 2>&1 || { echo "ll-stress: build failed (see $out/build.log)"; exit 1; }
echo "# ll-stress: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' ' | paste -sd';' -), $(date -u +%Y-%m-%dT%H:%MZ), $(cat .gpu-bundle/commit.txt 2>/dev/null | head -n 1)"
echo "# command: bash tests/gpu/ll-stress.sh --gpus $gpus --programs $programs${*:+ -- $*}"
status=0
for P in ${gpus//,/ }; do
  python3 -m torch.distributed.run --standalone --nproc-per-node "$P" tests/gpu/ll_stress.py \
    --build "$out/build.json" --programs "$programs" "$@" > "$out/p$P.log" 2>&1 || status=1
  grep "^ll_stress:" "$out/p$P.log" || tail -20 "$out/p$P.log"
done
exit $status
