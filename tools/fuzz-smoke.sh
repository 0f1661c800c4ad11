#!/usr/bin/env bash
# Runs the fuzz target (parse, check; with a schedule also apply, verify and emit CUDA) for a
# bounded time, seeded with every sample, stdlib
# module and test input, and every program with a schedule beside it (samples, GPU tests, benchmarks). Exit 77 (skipped) when the fuzz build is absent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build-fuzz/tests/fuzz/fuzz_check"
seconds=${FUZZ_SECONDS:-60}
if [ ! -x "$bin" ]; then
  echo "fuzz-smoke: $bin not built (tools/build.sh --fuzz); skipping"
  exit 77
fi
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
find "$root/samples" "$root/stdlib" "$root/tests/lit" -name '*.cnet' -size -64k -not -path '*/Output/*' \
  -exec cp {} "$corpus/" \; 2>/dev/null || true
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet "$root"/tools/bench/programs/*.cnet; do  # with their schedules, joined by %%
  sched="${prog%.cnet}.sched"
  [ -f "$sched" ] && { cat "$prog"; printf '\n%%%%\n'; cat "$sched"; } > "$corpus/$(basename "$prog" .cnet)-sched.cnet"
done
cd "$corpus"
"$bin" "$corpus" -dict="$root/tests/fuzz/cnet.dict" -max_total_time="$seconds" -max_len=8192 \
  -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 2>&1 | grep -E "^(stat::|Done|==|SUMMARY|INFO: Seed)|ERROR|internal" || true
exit "${PIPESTATUS[0]}"
