#!/usr/bin/env bash
# Backward programs on the GPU machine: each .gpu-bundle/backward/NAME (samples/NAME/NAME.cnet or
# tests/gpu/programs/NAME.cnet compiled with --backward by tools/gpu-bundle.sh) built there, its
# vectors made there by the bundled coconetc (verify --backward --dump at one rank: verify's own
# draw of sizes, and the sizes of `sizes` below), and its driver run against each set. Results in $OUT/backward-results.txt, the logs in
# $OUT/backward-logs.tgz. Usage: OUT=DIR bash tests/gpu/backward-run.sh [NAME ...]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
b="$root/.gpu-bundle"
out="${OUT:-$root/backward-out}"
mkdir -p "$out"
names=("$@")
[ ${#names[@]} -gt 0 ] || for d in "$b"/backward/*/; do names+=("$(basename "$d")"); done
nccl=${NCCL_ROOT:-$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)}
res="$out/backward-results.txt"
logs=$(mktemp -d)
{
  echo "date: $(date -u +%F)"
  echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "command: bash tests/gpu/backward-run.sh ${names[*]}"
} > "$res"
# Sizes of a second vector set per program, beside verify's own draw (a few elements a dimension,
# where a transposed operand is often one wide and reads as its transpose): every matrix of the
# products several rows and columns wide.
sizes() {
  case "$1" in
    megatron_row) echo "-D B=2 -D S=8 -D H=48" ;;
    megatron_mlp) echo "-D B=2 -D S=8 -D H=32 -D F=48" ;;
    moe_gemm) echo "-D X=2 -D C=8 -D H=24 -D F=40" ;;
    decode_gemv) echo "-D H=64 -D F=96" ;;
    dlrm_embedding) echo "-D B=4 -D T=2 -D L=3 -D R=50 -D D=16" ;;
    pipeline) echo "-D B=2 -D S=8 -D H=32 -D P=1" ;;
    seq_parallel) echo "-D B=2 -D S=8 -D H=32" ;;
    combines) echo "-D N=1000" ;;
    embeds) echo "-D N=64 -D R=40 -D D=24" ;;
  esac
}
for n in "${names[@]}"; do
  # (NAME@sp: NAME differentiated as its schedule leaves it, --from-schedule)
  (dir="$b/backward/$n"; base=${n%@sp}; flags=(--backward)
   [ "$base" = "$n" ] || flags+=(--from-schedule)
   prog="$root/samples/$base/$base.cnet"
   [ -f "$prog" ] || prog="$root/tests/gpu/programs/$base.cnet"
   cmake -S "$dir" -B "$dir/build" ${nccl:+-DNCCL_ROOT="$nccl"} > "$logs/build-$n.log" 2>&1 &&
     cmake --build "$dir/build" -j 8 >> "$logs/build-$n.log" 2>&1
   built=$?
   for set in drawn sized; do
     dump=$(mktemp -d); at=""; sized=()
     [ $set = drawn ] || { read -r -a sized <<< "$(sizes "$base")"; at=" at ${sized[*]}"; }
     [ $set = drawn ] || [ ${#sized[@]} -gt 0 ] || continue
     log="$logs/run-$n-$set.log"
     [ $built = 0 ] &&
       COCONETC_STDLIB="$root/stdlib" LD_LIBRARY_PATH="$b/lib" "$b/bin/coconetc" verify "$prog" "${flags[@]}" "${sized[@]}" --ranks 1 \
         --dump "$dump" > "$logs/verify-$n-$set.log" 2>&1 &&
       timeout 120 "$dir/build/${base}_backward_main" --spawn 1 --check "$dump/ranks1" --timeout 60 > "$log" 2>&1
     rc=$?
     if [ $rc = 0 ]; then
       echo "ok: ${n}_backward P=1$at: $(grep -c ': ok' "$log") tensor checks; worst $(grep -o 'relative error [0-9.e+-]*' "$log" | sort -g -k3 | tail -n 1)"
     else
       echo "FAIL: ${n}_backward P=1$at (exit $rc): $(tail -n 3 "$log" "$logs/build-$n.log" "$logs/verify-$n-$set.log" 2>/dev/null | grep -v '^$' | tail -n 3 | tr '\n' ' ')"
     fi
   done > "$logs/line-$n") &
done
wait
for n in "${names[@]}"; do cat "$logs/line-$n" >> "$res"; done
tar -czf "$out/backward-logs.tgz" -C "$logs" .
cat "$res"
! grep -q '^FAIL' "$res"
