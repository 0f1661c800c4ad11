#!/usr/bin/env bash
# The tuning jobs behind the tuning table's entries and the samples' knobs (docs/tuning.md). Run
# on the GPU machine from the repository root, with the coconetc that tools/gpu-bundle.sh put in
# .gpu-bundle/bin (the GPU machine has no ANTLR to build one):
#   bash tools/tune/jobs.sh single OUT [NAME...]   one GPU: the row kernels' and the GEMV's table entries
#   bash tools/tune/jobs.sh multi OUT [NAME...]    2 and 4 GPUs: the knobs the samples' schedules set
# NAME...: only those runs (softmax, layernorm, rows, rmsnorm, gemv; adam, lamb, megatron_row), e.g. one per
# device call.
# Each tuning run's results (tuning-db.json, best.sched, tuning.json, report.md; with --shapes,
# each shape's in its folder) are packed into
# OUT/tune-NAME.tgz (the device returns few files); its builds stay in WORK (default /tmp/tune).
# BUDGET: minutes per run (default 8).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
set_=${1:?usage: jobs.sh single|multi OUT}
out=${2:?usage: jobs.sh single|multi OUT}
shift 2
only=" $* "
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${WORK:-/tmp/tune}
cc=${COCONETC:-$root/.gpu-bundle/bin/coconetc}
[ -d "$root/.gpu-bundle/lib" ] && export LD_LIBRARY_PATH="$root/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# NVLink multicast stays off on these machines; the candidates build against PyTorch's NCCL (2.28.9,
# with the device API) where NCCL_ROOT names none: the system's 2.28.3 comes first otherwise.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nc=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl 2>/dev/null | head -n 1)
[ -n "${NCCL_ROOT:-$nc}" ] && export NCCL_ROOT="${NCCL_ROOT:-$nc}"
rc=0
# job NAME PROGRAM ARGS...: one tuning run into WORK/NAME, packed into OUT/tune-NAME.tgz
job() {
  local name=$1 prog=$2
  shift 2
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  echo "== $name: coconetc tune $prog $*"
  "$cc" tune "$root/$prog" -o "$work/$name" --budget "${BUDGET:-8}" --jobs "${JOBS:-8}" "$@" 2>&1 | tee "$work/$name.log" | tail -4
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  cp "$work/$name.log" "$work/$name/tune.log" 2>/dev/null
  # (with --shapes, each shape's folder too)
  tar -czf "$out/tune-$name.tgz" -C "$work/$name" $(cd "$work/$name" && ls -d tuning-db.json best.sched tuning.json report.md tune.log \
    */tuning-db.json */best.sched */tuning.json */report.md 2>/dev/null)
}
mkdir -p "$work"
case "$set_" in
  single)
    # softmax over a vocabulary at 8 and 64 rows (tools/tune/shapes/softmax.txt; the table's
    # row-split values were measured at T=1), then layer norm over long rows, a shape no value was
    # measured at
    job softmax tools/bench/programs/softmax.cnet -D H=131072 --shapes "$root/tools/tune/shapes/softmax.txt" \
      --only row_split_min,row_split_blocks --schedules 0
    job layernorm tools/bench/programs/layernorm.cnet -D T=8 -D H=65536 --only row_split_min,row_split_blocks --schedules 0
    # every row entry together at three shapes none was measured at (tools/tune/shapes/layernorm.txt)
    job rows tools/bench/programs/layernorm.cnet --shapes "$root/tools/tune/shapes/layernorm.txt" \
      --only row_split_min,row_split_blocks,row_max_packs,row_stream,row_long --schedules 0
    # rows in registers: the packs a thread and streaming, at the shape row_stream was measured at
    job rmsnorm tools/bench/programs/rmsnorm.cnet -D T=8192 -D H=4096 --only row_max_packs,row_stream --schedules 0
    # the decode GEMVs with as many rows as gemv_min_rows, and 8x more (tools/tune/shapes/gemv.txt):
    # the warp-per-row kernel or cuBLAS
    job gemv samples/decode_gemv/decode_gemv.cnet -D H=4096 --shapes "$root/tools/tune/shapes/gemv.txt" --only gemv_min_rows \
      --schedules 0
    ;;
  multi)
    # the knobs the samples' schedules set (samples/*/*.sched), at the sizes of the benchmark's rows
    job adam samples/adam/adam.cnet -D N=67108864 -D t=10 --gpus 2,4 --only f.algorithm,f.rounds,f.roles,f.occupancy --schedules 0
    job lamb samples/lamb/lamb.cnet -D N=67108864 -D t=10 --gpus 2,4 \
      --only moments.roles,apply.roles,moments.movers,moments.occupancy --schedules 0
    job megatron_row samples/megatron_row/megatron_row.cnet -D B=8 -D S=1024 -D H=8192 -D seed=1 --gpus 2,4 \
      --only f.algorithm,f.gather,f.merge,f.tail --schedules 2
    ;;
  *) echo "jobs.sh: unknown set '$set_' (single or multi)" >&2; exit 2 ;;
esac
exit $rc
