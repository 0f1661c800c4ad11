#!/usr/bin/env bash
# Builds tests/lit/hostile/Inputs/delete.cnet (names that are C++ keywords, macros and CUDA
# names: the generated sources must build) and runs tests/runtime/capi_args.cu against its C
# interface: argument checks everywhere, live-handle checks on a GPU; with two GPUs,
# tests/runtime/capi_ranks.cu (ranks that pass different sizes are refused). Exits 77 (skipped)
# where nvcc is absent. Usage: tests/runtime/capi_args.sh [COCONETC] [OUT]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cc="${1:-$root/build/coconetc}"
out="${2:-$root/build/capi-args}"
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ ! -x "$nvcc" ]; then echo "capi_args: no nvcc at $nvcc; skipping"; exit 77; fi
cuda="$(cd "$(dirname "$nvcc")/.." && pwd)"
rm -rf "$out" && mkdir -p "$out"
"$cc" compile "$root/tests/lit/hostile/Inputs/delete.cnet" -o "$out/gen" > /dev/null
env -u CUDAARCHS cmake -S "$out/gen" -B "$out/gen/build" -DCMAKE_CUDA_COMPILER="$nvcc" > "$out/cmake.log" 2>&1 ||
  { cat "$out/cmake.log"; exit 1; }
cmake --build "$out/gen/build" -j "${JOBS:-2}" > "$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; exit 1; }
lib="$out/gen/build"
"$nvcc" -std=c++17 -I"$out/gen" "$root/tests/runtime/capi_args.cu" -o "$out/capi_args" -L"$lib" -lcoconet_delete_program \
  -Xlinker -rpath -Xlinker "$lib"
"$out/capi_args"
# Two ranks (two GPUs): ranks that pass different sizes are refused, then run with equal ones.
"$nvcc" -std=c++17 -I"$out/gen" "$root/tests/runtime/capi_ranks.cu" -o "$out/capi_ranks" -L"$lib" -lcoconet_delete_program \
  -Xlinker -rpath -Xlinker "$lib"
rc=0
"$out/capi_ranks" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ]
