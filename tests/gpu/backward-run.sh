#!/usr/bin/env bash
# Backward programs on the GPU machine: each .gpu-bundle/backward/NAME (samples/NAME/NAME.cnet or
# tests/gpu/programs/NAME.cnet compiled with --backward by tools/gpu-bundle.sh) built there, its
# vectors made there by the bundled coconetc (verify --backward --dump at one rank), and its
# driver run against them. Results in $OUT/backward-results.txt, the logs in
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
for n in "${names[@]}"; do
  # (NAME@sp: NAME differentiated as its schedule leaves it, --from-schedule)
  (dir="$b/backward/$n"; dump=$(mktemp -d); base=${n%@sp}; flags=(--backward)
   [ "$base" = "$n" ] || flags+=(--from-schedule)
   prog="$root/samples/$base/$base.cnet"
   [ -f "$prog" ] || prog="$root/tests/gpu/programs/$base.cnet"
   COCONETC_STDLIB="$root/stdlib" LD_LIBRARY_PATH="$b/lib" "$b/bin/coconetc" verify "$prog" "${flags[@]}" --ranks 1 --dump "$dump" > "$logs/verify-$n.log" 2>&1 &&
   cmake -S "$dir" -B "$dir/build" ${nccl:+-DNCCL_ROOT="$nccl"} > "$logs/build-$n.log" 2>&1 &&
   cmake --build "$dir/build" -j 8 >> "$logs/build-$n.log" 2>&1 &&
   timeout 120 "$dir/build/${base}_backward_main" --spawn 1 --check "$dump/ranks1" --timeout 60 > "$logs/run-$n.log" 2>&1
   rc=$?
   if [ $rc = 0 ]; then
     echo "ok: ${n}_backward P=1: $(grep -c ': ok' "$logs/run-$n.log") tensor checks; worst $(grep -o 'relative error [0-9.e+-]*' "$logs/run-$n.log" | sort -g -k3 | tail -n 1)"
   else
     echo "FAIL: ${n}_backward P=1 (exit $rc): $(tail -n 3 "$logs/run-$n.log" "$logs/build-$n.log" "$logs/verify-$n.log" 2>/dev/null | grep -v '^$' | tail -n 3 | tr '\n' ' ')"
   fi > "$logs/line-$n") &
done
wait
for n in "${names[@]}"; do cat "$logs/line-$n" >> "$res"; done
tar -czf "$out/backward-logs.tgz" -C "$logs" .
cat "$res"
! grep -q '^FAIL' "$res"
