#!/usr/bin/env bash
# Session 60 call b (1x H200), after d600f04 (softmax's maximum from the packs as stored, f16's exp
# the bare ex2.approx.ftz): the GPU tests of the row programs at one rank with every set, the new
# rowwise_half (f16 / bf16 softmax, also of rows spread 60x wider; f16 layer norm, bf16 RMSNorm:
# @r1k, @r192, @long) among them; memcheck on rowwise_half's sets; then the Triton kernels
# torch.compile makes for the norms (tc_code.py: source, autotuned configuration, time).
# Bundle: bash tools/gpu-bundle.sh
# Run: LIMIT=300 bash docs/benchmarks/gpu/2026-11-30-1xH200-session60/job-b.sh (carry .gpu-bundle) -> $OUT/b.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin b "${LIMIT:-300}"
job_tests $(( $(left) - 70 )) GPU_TESTS_RANKS="1" GPU_TESTS_ONLY="rowwise_half rowwise_types ops_mix keepdim_norms" \
  SANITIZE=1 SANITIZE_TOOLS=memcheck GPU_TESTS_SANITIZE_SETS="rowwise_half rowwise_half@r1k rowwise_half@r192 rowwise_half@long"
S=docs/benchmarks/gpu/2026-11-30-1xH200-session60
TRITON_PRINT_AUTOTUNING=1 TORCH_LOGS=output_code timeout $(( $(left) - 5 )) python3 $S/tc_code.py \
  > "$R/tc_times.txt" 2> "$R/tc_code.txt"
step tc_code $?
cat "$R/tc_times.txt"
grep -i "best config\|triton_heuristics\.\|def triton_\|num_warps\|XBLOCK\b\|R0_BLOCK\|RBLOCK" "$R/tc_code.txt" | head -60
job_end
