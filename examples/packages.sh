#!/usr/bin/env bash
# Builds and installs the PyTorch packages the examples use, in parallel: for each NAME (a sample;
# NAME_backward is the sample's backward program), compiles samples/NAME with --target torch into
# PKGS/NAME unless there (COCONET_PKGS: a folder that holds them built, NAME/setup.py), then
# pip-installs it into OUT/site/NAME. A NAME listed with NAME_backward is the forward that saves
# what the backward reads (--saving, in PKGS/NAME.saving). Prints the PYTHONPATH that holds them; exits 1 (with the
# failing pip log's end) when one does not import.
#   export PYTHONPATH=$(bash examples/packages.sh OUT adam megatron_mlp megatron_mlp_backward)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: packages.sh OUT NAME...}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
pkgs=${COCONET_PKGS:-$out/pkgs}
cc=${COCONETC:-$root/build/coconetc}
names=" $* "
build() {
  local n=$1 prog=${1%_backward} flags=() pkg=$1
  [ "$n" = "$prog" ] || flags=(--backward)
  [[ "$n" != "$prog" || "$names" != *" ${n}_backward "* ]] || flags=(--saving) pkg=$n.saving
  [ -f "$pkgs/$pkg/setup.py" ] || "$cc" compile "$root/samples/$prog/$prog.cnet" "${flags[@]}" --target torch -o "$pkgs/$pkg" > /dev/null
  python3 -m pip install --no-build-isolation --no-deps --target "$out/site/$n" "$pkgs/$pkg" > "$out/pip-$n.log" 2>&1
}
for n in "$@"; do build "$n" & done
wait
path=""
for n in "$@"; do
  python3 -c "import sys; sys.path.insert(0, '$out/site/$n'); import coconet_$n" 2>/dev/null || { tail -20 "$out/pip-$n.log" >&2; exit 1; }
  path="$out/site/$n${path:+:$path}"
done
echo "$path${PYTHONPATH:+:$PYTHONPATH}"
