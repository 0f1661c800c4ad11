#!/usr/bin/env bash
# Compiles every sample (with its schedule) and every GPU test program to CUDA and builds the
# output with nvcc: the CI check that generated code compiles and links against CUDA, cuBLAS
# and NCCL. Collectives compile to NCCL device-API kernels by default; two programs are built a
# second time with --no-device-collectives (NAME@nccl), the NCCL-only path: adam (a fused group),
# megatron_row (an overlap's chunked collectives) and moe_gemm (an all_to_all pipeline); the
# samples' other schedules (samples/NAME/*.sched but NAME.sched and NAME.backward.sched) are built too (NAME@SCHED, e.g.
# moe_gemm@moe_gemm_capacity); megatron_row (an overlap's chunks) and the GPU tests' allreduces
# (copy-engine rounds) are built with --timeline too (NAME@timeline); the backward programs of
# megatron_row, megatron_mlp, moe_gemm, dlrm_embedding, decode_gemv, pipeline and the GPU tests' seq_parallel, combines and embeds with
# --backward (NAME@backward), and seq_parallel's differentiated as its schedule leaves it
# (--backward --from-schedule, NAME@backward-sp). Each build must compile for
# the architecture coconetc wrote into its CMakeLists.txt (compute_90a by default; nvcc's own default,
# sm_75, would run on H100/H200 from PTX without programmatic dependent launch). Exits 77
# (skipped) where nvcc is absent.
# With --emit-only it only writes the sources (no nvcc needed): `diff -r` of two such trees shows
# what a compiler change did to the generated code.
# Usage: tools/cuda-build-samples.sh [--emit-only] [OUT_ROOT] [PROGRAM.cnet[@nccl|@timeline|@backward|@backward-sp] | PROGRAM.cnet:SCHEDULE.sched ...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
emit_only=0
if [ "${1:-}" = --emit-only ]; then emit_only=1; shift; fi
out="${1:-$root/build/cuda-samples}"
shift || true
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ "$emit_only" = 0 ] && [ ! -x "$nvcc" ]; then echo "cuda-build-samples: no nvcc at $nvcc; skipping"; exit 77; fi
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  programs=("$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet
            "$root"/samples/adam/adam.cnet@nccl "$root"/samples/megatron_row/megatron_row.cnet@nccl
            "$root"/samples/moe_gemm/moe_gemm.cnet@nccl
            "$root"/samples/megatron_row/megatron_row.cnet@timeline "$root"/tests/gpu/programs/allreduces.cnet@timeline
            "$root"/samples/megatron_row/megatron_row.cnet@backward "$root"/samples/megatron_mlp/megatron_mlp.cnet@backward
            "$root"/samples/moe_gemm/moe_gemm.cnet@backward "$root"/samples/dlrm_embedding/dlrm_embedding.cnet@backward
            "$root"/samples/pipeline/pipeline.cnet@backward "$root"/tests/gpu/programs/seq_parallel.cnet@backward
            "$root"/tests/gpu/programs/seq_parallel.cnet@backward-sp
            "$root"/tests/gpu/programs/combines.cnet@backward "$root"/tests/gpu/programs/embeds.cnet@backward
            "$root"/samples/decode_gemv/decode_gemv.cnet@backward)
  for sched in "$root"/samples/*/*.sched; do
    d=$(dirname "$sched"); n=$(basename "$d")
    case "$(basename "$sched")" in "$n.sched" | *.backward.sched) ;; *) programs+=("$d/$n.cnet:$sched") ;; esac
  done
fi
fails=0
for item in "${programs[@]}"; do
  prog=${item%%:*}
  prog=${prog%@nccl}
  prog=${prog%@timeline}
  prog=${prog%@backward}
  prog=${prog%@backward-sp}
  flags=()
  n=$(basename "$prog" .cnet)
  obj=$n
  dir="$out/$n"
  if [ "${item%@backward}" != "$item" ]; then
    flags=(--backward); dir="$out/$n@backward"; obj=${n}_backward
  elif [ "${item%@backward-sp}" != "$item" ]; then  # (differentiated as its schedule leaves it)
    flags=(--backward --from-schedule); dir="$out/$n@backward-sp"; obj=${n}_backward
  elif [ "${item%@nccl}" != "$item" ]; then
    flags=(--no-device-collectives); dir="$out/$n@nccl"
  elif [ "${item%@timeline}" != "$item" ]; then
    flags=(--timeline); dir="$out/$n@timeline"
  elif [ "${item#*:}" != "$item" ]; then
    flags=(--schedule "${item#*:}"); dir="$out/$n@$(basename "${item#*:}" .sched)"
  fi
  rm -rf "$dir"
  if ! "${COCONETC:-$root/build/coconetc}" compile "$prog" "${flags[@]}" -o "$dir" >/dev/null; then
    echo "FAILED to compile $item"; fails=$((fails + 1)); continue
  fi
  [ "$emit_only" = 1 ] && continue
  start=$(date +%s)
  # (CUDAARCHS from the environment would override the manifest's architecture: not here)
  if env -u CUDAARCHS cmake -S "$dir" -B "$dir/build" -DCMAKE_CUDA_COMPILER="$nvcc" >"$dir/cmake.log" 2>&1 &&
     cmake --build "$dir/build" -j "${JOBS:-2}" >"$dir/build.log" 2>&1; then
    arch=$(sed -n 's/^  set(CMAKE_CUDA_ARCHITECTURES \([0-9a-z]*\))$/\1/p' "$dir/CMakeLists.txt")
    if [ -z "$arch" ] || ! grep -q -- "arch=compute_$arch" "$dir/build/CMakeFiles/${obj}_objects.dir/flags.make"; then
      echo "FAILED: $n built for another architecture than its CMakeLists.txt's ${arch:-(none found)}:"
      grep -h "CUDA_FLAGS" "$dir/build/CMakeFiles/${obj}_objects.dir/flags.make" || true; fails=$((fails + 1)); continue
    fi
    echo "built $n in $(( $(date +%s) - start )) s for compute_$arch: $dir/build/${obj}_main"
  else
    echo "FAILED to build $n:"; tail -n 30 "$dir/cmake.log" "$dir/build.log"; fails=$((fails + 1))
  fi
done
if [ "$emit_only" = 1 ]; then echo "cuda-build-samples: emitted ${#programs[@]} programs, $fails failed"
else echo "cuda-build-samples: $(( ${#programs[@]} - fails )) passed, $fails failed"; fi
[ "$fails" = 0 ]
