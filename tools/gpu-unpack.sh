#!/usr/bin/env bash
# Unpacks in place a bundle that tools/gpu-bundle.sh packed (.gpu-bundle/bundle.tgz); does nothing
# for an unpacked one. Run from the repository root on the GPU machine, by tests/gpu/run.sh and
# tools/bench/gpu/run.sh before they read the bundle.
f=.gpu-bundle/bundle.tgz
[ ! -f "$f" ] || { tar xzf "$f" -C .gpu-bundle && rm "$f"; }
