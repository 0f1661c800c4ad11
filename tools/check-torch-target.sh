#!/usr/bin/env bash
# Compiles (syntax only, -Wall) every sample's and GPU test program's `--target torch` operator
# (and the backward programs' and saving forwards' of the samples that have them)
# source against PyTorch's headers, on a machine without torch or a GPU: the check that the
# generated NAME_torch.cpp fits torch's C++ API before a GPU run builds it with pip. The headers
# come from a torch wheel's torch/include (unzip it; no install needed), e.g.:
#   pip download "torch==2.11.*" --no-deps --only-binary=:all: --python-version 3.12 \
#       --platform manylinux_2_28_x86_64 -d /tmp/whl && (cd /tmp/whl && unzip -q torch-*.whl 'torch/include/*')
# Usage: tools/check-torch-target.sh TORCH_INCLUDE_DIR   (CUDA's headers from /usr/local/cuda/include)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
inc="${1:?usage: tools/check-torch-target.sh TORCH_INCLUDE_DIR}"
[ -f "$inc/torch/library.h" ] || { echo "check-torch-target: $inc/torch/library.h not found" >&2; exit 2; }
cc="${COCONETC:-$root/build/coconetc}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0 n=0
# every program's operator; then the backward programs' and their forwards that save (NAME.saving)
items=("$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet)
for s in megatron_row megatron_mlp decode_gemv moe_gemm dlrm_embedding; do
  items+=("$root/samples/$s/$s.cnet@backward" "$root/samples/$s/$s.cnet@saving")
done
for item in "${items[@]}"; do
  prog=${item%@*} flags=() out=$(basename "${item%@*}" .cnet)
  name=$out
  case "$item" in
    *@backward) flags=(--backward) name=${out}_backward out=${out}_backward ;;
    *@saving) flags=(--saving) out=$out.saving ;;
  esac
  if ! "$cc" compile "$prog" "${flags[@]}" --target torch -o "$tmp/$out" > /dev/null 2>"$tmp/$out.log"; then
    echo "FAIL: $out: compile --target torch: $(head -1 "$tmp/$out.log")"; bad=$((bad + 1)); continue
  fi
  if g++ -std=c++17 -fsyntax-only -Wall -Werror -D_GLIBCXX_USE_CXX11_ABI=1 -I"$inc" -I"$inc/torch/csrc/api/include" \
      -I/usr/local/cuda/include "$tmp/$out/${name}_torch.cpp" > "$tmp/$out.gxx" 2>&1 &&
     python3 -m py_compile "$tmp/$out/coconet_$name.py"; then
    n=$((n + 1))
  else
    echo "FAIL: $out: $(grep -m1 -E 'error' "$tmp/$out.gxx")"; bad=$((bad + 1))
  fi
done
echo "check-torch-target: $n operators compile against $inc, $bad failed"
[ "$bad" = 0 ]
