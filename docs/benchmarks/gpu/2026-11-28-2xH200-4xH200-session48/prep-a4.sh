#!/usr/bin/env bash
# Makes call a4's bundle on the build machine (coconetc built at main's commit that made the tiles'
# units the kernel's `claimed`; 6f4a202's build of the sample in /tmp/def; 50eb01d's stripped
# coconetc in /tmp/coconetc-main).
set -euo pipefail
GPU_BUNDLE_ONLY="lamb" bash tools/gpu-bundle.sh > /dev/null
ab=.gpu-bundle/ab
mkdir -p $ab && cp /tmp/coconetc-main $ab/ && cp -r /tmp/def $ab/def
build/coconetc compile samples/lamb/lamb.cnet -o $ab/cur > /dev/null
python3 tools/bench/gpu/stamps.py $ab/cur $ab/curst > /dev/null
knobs() {  # NAME MOMENTS_CHUNKS APPLY_CHUNKS
  { cat samples/lamb/lamb.sched
    printf 'tune(moments, chunks = %s, roles = auto);\ntune(apply, chunks = %s, roles = auto);\n' "$2" "$3"; } > /tmp/lamb-$1.sched
  build/coconetc compile samples/lamb/lamb.cnet --schedule /tmp/lamb-$1.sched -o $ab/$1 > /dev/null
}
knobs m8a4 8 4
knobs m4a8 4 8
knobs m8a8 8 8
