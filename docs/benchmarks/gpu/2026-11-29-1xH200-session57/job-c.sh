#!/usr/bin/env bash
# Session 57, call C (one H200): cache hints for the row kernels' streams, A/B. Call B's Nsight
# Compute had the generated layer norm kernel (64 registers) at 67.7 us against torch.compile's 69.4
# at T = H = 8192 alone (caches flushed), yet 82.4 against 71.5 back to back in the bench, where
# the previous run's output is still dirty in L2. Inductor's kernel loads x with evict_last, then
# again with evict_first. Variants of the generated drivers (f16, T = 8192; `--bench --iters 200`,
# back to back), the runtime header edited in each copy:
#   base    as generated (x by plain 16-byte loads, y by __stwb)
#   stcs    y stored with __stcs (st.global.cs: streaming, evict first)
#   ldcs    x loaded with __ldcs (ld.global.cs)
#   both    both
#   ldlu    x loaded with __ldlu (ld.global.lu: last use)
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-29-1xH200-session57/job-c.sh (carry .gpu-bundle) -> $OUT/c.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin c "${LIMIT:-300}"
COCONETC=.gpu-bundle/bin/coconetc
NCCL=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -1)
VARS="base stcs ldcs both ldlu"
for p in layernorm rmsnorm softmax; do
  g=/tmp/hc/$p; rm -rf $g; $COCONETC compile tools/bench/programs/$p.cnet -o $g/base > /dev/null
  for v in $VARS; do
    [ $v = base ] || cp -r $g/base $g/$v
    h=$g/$v/coconet_runtime.cuh
    case $v in stcs|both) sed -i 's/__stwb(/__stcs(/g' $h ;; esac
    case $v in ldcs|both|ldlu)
      f=__ldcs; [ $v = ldlu ] && f=__ldlu
      # the row's loads only (gamma and beta keep loadPack)
      python3 - $h $g/$v/$p.cu $f <<'PY'
import sys
h, cu, f = sys.argv[1:]
s = open(h).read()
anchor = "template <int V, class T> __device__ __forceinline__ void storePack("
add = ("template <int V, class T> __device__ __forceinline__ Pack<T, V> loadPackStream(const T* p) {\n"
       "  using W = typename Word<sizeof(Pack<T, V>)>::type;\n  union { W w; Pack<T, V> v; } u;\n"
       f"  u.w = {f}(reinterpret_cast<const W*>(p));\n  return u.v;\n}}\n")
assert anchor in s
open(h, "w").write(s.replace(anchor, add + anchor, 1))
c = open(cu).read()
old = "v[k] = coconet_rt::loadPack<V>(xr"
assert old in c
open(cu, "w").write(c.replace(old, "v[k] = coconet_rt::loadPackStream<V>(xr"))
PY
      ;;
    esac
    ( cmake -S $g/$v -B $g/$v/build -DNCCL_ROOT=$NCCL > $g/$v/build.log 2>&1 &&
      cmake --build $g/$v/build -j 2 >> $g/$v/build.log 2>&1 ) || echo "build $p $v failed" >> $R/header.txt &
  done
done
wait
step builds 0
for rep in 1 2; do
  for p in layernorm rmsnorm softmax; do
    for H in 4096 8192 12288; do
      for v in $VARS; do
        r=$(timeout 30 /tmp/hc/$p/$v/build/${p}_main -D T=8192 -D H=$H --bench --iters 200 --warmup 50 2>&1 | tail -1 | sed 's/.*"median_us": \([0-9.]*\), "min_us": \([0-9.]*\).*/median \1 min \2/')
        echo "rep$rep $p H=$H $v $r" >> $R/hints.txt
      done
    done
  done
done
step runs 0
cat $R/hints.txt
job_end
