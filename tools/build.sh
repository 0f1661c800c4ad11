#!/usr/bin/env bash
# Configures and builds coconetc in build/ (Release-with-debug-info, Ninja).
# With --fuzz it also builds, in build-fuzz/ with clang, the libFuzzer target and, on the same ASan +
# UBSan core, coconetc and the unit tests (CTests lit_sanitized, unit_sanitized).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
[ -f build/build.ninja ] || cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j "$jobs"
if [ "${1:-}" = "--fuzz" ]; then
  [ -f build-fuzz/build.ninja ] || cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCOCONETC_FUZZ=ON -DCOCONETC_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz_check coconetc coconetc_unit_sanitized
fi
