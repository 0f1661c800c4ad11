#!/usr/bin/env bash
# A compiler for the bench's rows (BENCH_COMPILER_ROWS="op=PATH-OF-THIS"): the bundle's coconetc,
# then this folder's proto_ownprefetch.py on what it wrote for LAMB. Other programs pass unchanged.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
.gpu-bundle/bin/coconetc "$@" || exit $?
out="" prev=""
for a in "$@"; do [ "$prev" != -o ] || out="$a"; prev="$a"; done
if [ "${1:-}" = compile ] && [ -n "$out" ] && [ -f "$out/lamb.cu" ]; then
  python3 "$here/proto_ownprefetch.py" "$out" || exit $?
fi
