#!/usr/bin/env bash
# Session 56: the row-wise kernels against PyTorch on one GPU (workload norms, new): layer norm,
# RMSNorm and softmax over 8192 rows of H = 1024..12288 (f16; bf16 at 4096), rows eager
# (F.layer_norm, F.rms_norm, torch.softmax), torch.compile, coconetc (rows in registers, 23a385a)
# and coconetc_long (the same build with COCONET_ROWWISE=long: the one-block-a-row kernel every row
# took before), each checked against eager, then timed.
# Bundle: bash tools/gpu-bundle.sh
# Run: [NAME=b] LIMIT=560 bash docs/benchmarks/gpu/2026-11-29-2xH200-session56/job-b.sh (carry .gpu-bundle) -> $OUT/b.tgz
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin "${NAME:-b}" "${LIMIT:-560}"
job_bench norms 1 norms $(( $(left) - 10 ))
job_end
