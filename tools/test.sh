#!/usr/bin/env bash
# The whole test suite: builds coconetc, the fuzz target and a sanitized coconetc, then runs every
# test through ctest (labels: unit, golden, error, fuzz). Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh --fuzz
cd build
ctest --output-on-failure "$@"
