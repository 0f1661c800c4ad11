#!/usr/bin/env bash
# A compiler for the bench's rows (BENCH_COMPILER_ROWS="pf=PATH-OF-THIS"): the bundle's coconetc
# (PF_BASE_CC to use another), then session 44's proto_prefetch.py on what it wrote for LAMB
# (`apply` asks L2 for its first chunk's w and u at entry). Other programs pass unchanged.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"${PF_BASE_CC:-.gpu-bundle/bin/coconetc}" "$@" || exit $?
out="" prev=""
for a in "$@"; do [ "$prev" != -o ] || out="$a"; prev="$a"; done
if [ "${1:-}" = compile ] && [ -n "$out" ] && [ -f "$out/lamb.cu" ]; then
  python3 "$here/../2026-11-28-4xH200-session44/proto_prefetch.py" "$out" || exit $?
fi
