#!/usr/bin/env bash
# Compiles every sample (with its schedule) and every GPU test program to CUDA and builds the
# output with nvcc: the CI check that generated code compiles and links against CUDA, cuBLAS
# and NCCL. Collectives compile to NCCL device-API kernels by default; two programs are built a
# second time with --no-device-collectives (NAME@nccl), the NCCL-only path: adam (a fused group)
# and megatron_row (an overlap's chunked collectives). Exits 77 (skipped) where nvcc is absent.
# Usage: tools/cuda-build-samples.sh [OUT_ROOT] [PROGRAM.cnet[@nccl]...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/cuda-samples}"
shift || true
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ ! -x "$nvcc" ]; then echo "cuda-build-samples: no nvcc at $nvcc; skipping"; exit 77; fi
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=("$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet
                                       "$root"/samples/adam/adam.cnet@nccl "$root"/samples/megatron_row/megatron_row.cnet@nccl)
fails=0
for item in "${programs[@]}"; do
  prog=${item%@nccl}
  flags=()
  [ "$prog" = "$item" ] || flags=(--no-device-collectives)
  n=$(basename "$prog" .cnet)
  dir="$out/$(basename "$item" .cnet)"
  [ "$prog" = "$item" ] || dir="$out/$n@nccl"
  rm -rf "$dir"
  "$root/build/coconetc" compile "$prog" "${flags[@]}" -o "$dir" >/dev/null
  start=$(date +%s)
  if cmake -S "$dir" -B "$dir/build" -DCMAKE_CUDA_COMPILER="$nvcc" >"$dir/cmake.log" 2>&1 &&
     cmake --build "$dir/build" -j "${JOBS:-2}" >"$dir/build.log" 2>&1; then
    echo "built $n in $(( $(date +%s) - start )) s: $dir/build/${n}_main"
  else
    echo "FAILED to build $n:"; tail -n 30 "$dir/cmake.log" "$dir/build.log"; fails=$((fails + 1))
  fi
done
echo "cuda-build-samples: $(( ${#programs[@]} - fails )) passed, $fails failed"
[ "$fails" = 0 ]
