#!/usr/bin/env sh
# Compiles and links the micro-benchmarks that need no generated program (README.md beside this),
# into OUT (default .): the build check of CTest's bench_tools_build. Exits 77 without nvcc.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=${1:-.}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || exit 77
rt="-I$root/src/backend/runtime"
"$nvcc" -O3 -std=c++17 -arch=sm_90a $rt "$here/gemv-micro.cu" -lcublas -o "$out/gemv-micro"
"$nvcc" -O3 -std=c++17 -arch=sm_90a "$here/ce-allreduce-micro.cu" -lnccl -o "$out/ce-allreduce-micro"
"$nvcc" -O3 -std=c++17 -arch=sm_90a "$here/sm-transfer-micro.cu" -lnccl -o "$out/sm-transfer-micro"
"$nvcc" -O3 -std=c++17 -arch=sm_90a $rt "$here/optim-micro.cu" -o "$out/optim-micro"
