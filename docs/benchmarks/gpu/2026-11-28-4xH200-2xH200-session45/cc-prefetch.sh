#!/usr/bin/env bash
# A compiler for the bench's rows (BENCH_COMPILER_ROWS="NAME=PATH-OF-THIS"): the bundle's coconetc
# (PF_BASE_CC to use another), then a prototype's patcher on what it wrote for LAMB, chosen by
# PROTO: prefetch (the default) runs session 44's proto_prefetch.py (`apply` asks L2 for its first
# chunk's w and u at entry), ownprefetch this folder's proto_ownprefetch.py (cc-ownprefetch.sh
# sets it). Other programs pass unchanged.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
case "${PROTO:-prefetch}" in
  prefetch) patch="$here/../2026-11-28-4xH200-session44/proto_prefetch.py" ;;
  ownprefetch) patch="$here/proto_ownprefetch.py" ;;
  *) echo "$0: no prototype '$PROTO'" >&2; exit 2 ;;
esac
"${PF_BASE_CC:-.gpu-bundle/bin/coconetc}" "$@" || exit $?
out="" prev=""
for a in "$@"; do [ "$prev" != -o ] || out="$a"; prev="$a"; done
if [ "${1:-}" = compile ] && [ -n "$out" ] && [ -f "$out/lamb.cu" ]; then
  python3 "$patch" "$out" || exit $?
fi
