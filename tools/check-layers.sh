#!/usr/bin/env bash
# The layering check (CTest layers): every symbol of namespace coconet that a layer's library
# (build/libcoconet_NAME.a) uses must be defined in that library or in a layer it names in
# CMakeLists.txt (coconet_layer(NAME DEPS ...), written to build/layers.txt), directly or through
# those layers' own. A use of an undeclared layer is a back-edge: this prints it and fails.
# Usage: tools/check-layers.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
layers="$build/layers.txt"
[ -f "$layers" ] || { echo "check-layers: $layers not found (configure first)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A deps
names=()
while IFS= read -r line; do
  case "$line" in "#"*|"") continue ;; esac
  name=${line%%:*}
  deps[$name]=${line#*: }
  names+=("$name")
  lib="$build/libcoconet_$name.a"
  [ -f "$lib" ] || { echo "check-layers: $lib not built"; exit 2; }
  # Mangled names of coconet's symbols (_ZN7coconet...): defined, and used but not defined here.
  nm --defined-only "$lib" 2>/dev/null | awk 'NF >= 3 {print $3}' | grep '^_ZN7coconet\|^_ZNK7coconet' | sort -u > "$tmp/$name.def" || true
  nm --undefined-only "$lib" 2>/dev/null | awk '{print $NF}' | grep '^_ZN7coconet\|^_ZNK7coconet' | sort -u > "$tmp/$name.use" || true
done < "$layers"
# A layer's reach: itself and every layer its declarations lead to.
reach() {
  local seen=" $1 " todo=("$1") n d
  while ((${#todo[@]})); do
    n=${todo[0]}
    todo=("${todo[@]:1}")
    for d in ${deps[$n]}; do
      [[ "$seen" == *" $d "* ]] || { seen+="$d "; todo+=("$d"); }
    done
  done
  echo "$seen"
}
bad=0
for name in "${names[@]}"; do
  allowed=$(reach "$name")
  cat $(for n in $allowed; do echo "$tmp/$n.def"; done) | sort -u > "$tmp/allowed"
  comm -23 "$tmp/$name.use" "$tmp/allowed" > "$tmp/missing"
  [ -s "$tmp/missing" ] || continue
  while read -r sym; do
    owner=""
    for n in "${names[@]}"; do grep -qxF "$sym" "$tmp/$n.def" && owner=$n && break; done
    echo "check-layers: $name uses $(echo "$sym" | c++filt) from ${owner:-nowhere} (it names: ${deps[$name]:- none})"
    bad=1
  done < "$tmp/missing"
done
[ $bad = 0 ] && echo "check-layers: ${#names[@]} layers, no back-edge"
exit $bad
