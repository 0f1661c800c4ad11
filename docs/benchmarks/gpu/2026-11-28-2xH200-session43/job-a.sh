#!/usr/bin/env bash
# Session 43, call a (4 GPUs): one-ended tapers (tune(G, taper_ends = ...), d8cc271) for LAMB.
# GPU tests of lamb, lamb@taper, lamb@taperends, lamb@chunks8 at 2 and 4 ranks (the C interface in
# one batch, its first run on GPUs); then the LAMB bench at 2^24 and 2^26 (4 GPUs), rows taking
# turns: the default, t2 (taper 2 at both ends), e2 / e3 (taper 2 / 3: `moments`' last chunks,
# `apply`'s first), m3 / a3 (e3 on one group only), c8e3 (e3 in 8 rounds), the bare all-reduce.
# Bundle first: GPU_BUNDLE_ONLY="lamb allreduces pipeline a2a_bcast a2a_ew a2a_ffn all_to_all sends
# dlrm_embedding embedding_bag moe_gemm norm_clip scalar_chain reduce_chains fold_local
# batched_slices ops_mix run_args gemvs" bash tools/gpu-bundle.sh. -> $OUT/s43a
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s43a "${LIMIT:-560}"
job_tests 110 GPU_TESTS_ONLY="lamb lamb@taper lamb@taperends lamb@chunks8" GPU_TESTS_RANKS="2 4"
rows='t2=tune(moments, taper = 2); tune(apply, taper = 2);'
rows+='|e2=tune(moments, taper = 2, taper_ends = last); tune(apply, taper = 2, taper_ends = first);'
rows+='|e3=tune(moments, taper = 3, taper_ends = last); tune(apply, taper = 3, taper_ends = first);'
rows+='|m3=tune(moments, taper = 3, taper_ends = last);'
rows+='|a3=tune(apply, taper = 3, taper_ends = first);'
rows+='|c8e3=tune(moments, chunks = 8, taper = 3, taper_ends = last); tune(apply, chunks = 8, taper = 3, taper_ends = first);'
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb,lamb_x_t2,lamb_x_e2,lamb_x_e3,lamb_x_m3,lamb_x_a3,lamb_x_c8e3" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc,coconetc_t2,coconetc_e2,coconetc_e3,coconetc_m3,coconetc_a3,coconetc_c8e3,nccl_allreduce --interleave 10"
job_end
