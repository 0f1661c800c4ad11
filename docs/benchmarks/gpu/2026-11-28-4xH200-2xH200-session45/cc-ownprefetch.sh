#!/usr/bin/env bash
# A compiler for the bench's rows: cc-prefetch.sh with this folder's proto_ownprefetch.py.
PROTO=ownprefetch exec "$(dirname "$0")/cc-prefetch.sh" "$@"
