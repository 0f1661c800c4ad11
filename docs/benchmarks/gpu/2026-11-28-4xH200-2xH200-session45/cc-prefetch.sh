#!/usr/bin/env bash
# A compiler for the bench's rows (BENCH_COMPILER_ROWS="NAME=PATH-OF-THIS"): the bundle's coconetc
# (PF_BASE_CC to use another), then a prototype's patcher on what it wrote for LAMB, chosen by this
# file's name: cc-prefetch.sh runs session 44's proto_prefetch.py (`apply` asks L2 for its first
# chunk's w and u at entry), cc-ownprefetch.sh (a link to this file) this folder's
# proto_ownprefetch.py. Other programs pass unchanged.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
case "$(basename "$0")" in
  cc-prefetch.sh) patch="$here/../2026-11-28-4xH200-session44/proto_prefetch.py" ;;
  cc-ownprefetch.sh) patch="$here/proto_ownprefetch.py" ;;
  *) echo "$0: no prototype of this name" >&2; exit 2 ;;
esac
"${PF_BASE_CC:-.gpu-bundle/bin/coconetc}" "$@" || exit $?
out="" prev=""
for a in "$@"; do [ "$prev" != -o ] || out="$a"; prev="$a"; done
if [ "${1:-}" = compile ] && [ -n "$out" ] && [ -f "$out/lamb.cu" ]; then
  python3 "$patch" "$out" || exit $?
fi
