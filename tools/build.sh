#!/usr/bin/env bash
# Configures and builds coconetc in build/ (Release-with-debug-info, Ninja).
# With --fuzz it also builds, in build-fuzz/ with clang, the libFuzzer target and an ASan + UBSan
# coconetc (CTest lit_sanitized runs the lit suite on it).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$jobs"
if [ "${1:-}" = "--fuzz" ]; then
  [ -f build-fuzz/build.ninja ] || cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCOCONETC_FUZZ=ON -DCOCONETC_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz_check coconetc
fi
