#!/usr/bin/env bash
# Compiles every sample (with its schedule) and every GPU test program to CUDA and builds the
# output with nvcc: the CI check that generated code compiles and links against CUDA, cuBLAS
# and NCCL. Three programs are built a second time with --device-collectives (NAME@dev): adam (a
# fused group as one device-API kernel), allreduces (the one-shot and two-shot allreduce
# kernels in f16, f32 and bf16) and megatron_row (the device kernel per chunk of an overlap). Exits 77 (skipped) where nvcc is absent.
# Usage: tools/cuda-build-samples.sh [OUT_ROOT] [PROGRAM.cnet[@dev]...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/cuda-samples}"
shift || true
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ ! -x "$nvcc" ]; then echo "cuda-build-samples: no nvcc at $nvcc; skipping"; exit 77; fi
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=("$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet
                                       "$root"/samples/adam/adam.cnet@dev "$root"/tests/gpu/programs/allreduces.cnet@dev
                                       "$root"/samples/megatron_row/megatron_row.cnet@dev)
fails=0
for item in "${programs[@]}"; do
  prog=${item%@dev}
  flags=()
  [ "$prog" = "$item" ] || flags=(--device-collectives)
  n=$(basename "$prog" .cnet)
  dir="$out/$(basename "$item" .cnet)"
  [ "$prog" = "$item" ] || dir="$out/$n@dev"
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
