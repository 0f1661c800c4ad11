#!/usr/bin/env bash
# Installs what coconetc needs to build and test on a Debian 12 machine (idempotent).
# Everything comes from Debian's packages; CUDA 13 + NCCL 2.28 are expected in /usr/local/cuda
# (used only by the CUDA backend's build tests; their absence is reported, not fatal).
set -euo pipefail

pkgs=(antlr4 libantlr4-runtime-dev libcli11-dev nlohmann-json3-dev catch2 cmake g++ ninja-build
      llvm-14-tools clang-14 clang-format-14 libclang-rt-14-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi
if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: nvcc found: $(/usr/local/cuda/bin/nvcc --version | tail -n 2 | head -n 1)"
else
  echo "install-deps: note: /usr/local/cuda/bin/nvcc not found; CUDA build tests will be skipped"
fi
