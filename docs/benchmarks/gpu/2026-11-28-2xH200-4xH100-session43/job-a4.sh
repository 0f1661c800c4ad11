#!/usr/bin/env bash
# Session 43, call for 4 GPUs: one-ended tapers (tune(G, taper_ends = ...)) for LAMB, after the
# taper became the kernels' arguments and chunkLo lost its division per edge (83233cc: `moments`
# at one block per SM without spills, as untapered). GPU tests of lamb, lamb@taper,
# lamb@taperends at 4 ranks (lamb@many's 192 workers included; the C interface in one batch);
# then the LAMB bench at 2^24 and 2^26 (4 GPUs), rows taking turns: the default, t2 (taper 2 at
# both ends), e2 / e3 / e5 (taper 2 / 3 / 5: `moments`' last chunks, `apply`'s first), m3 / a3 (e3
# on one group only), c8e3 (e3 in 8 rounds), the bare all-reduce.
# Bundle first: GPU_BUNDLE_ONLY="lamb allreduces pipeline a2a_bcast a2a_ew a2a_ffn all_to_all sends
# dlrm_embedding embedding_bag moe_gemm norm_clip scalar_chain reduce_chains fold_local
# batched_slices ops_mix run_args gemvs" bash tools/gpu-bundle.sh. -> $OUT/s43a4
set -uo pipefail
source tools/bench/gpu/job.sh
job_begin s43a4 "${LIMIT:-560}"
job_tests 120 GPU_TESTS_ONLY="lamb lamb@taper lamb@taperends" GPU_TESTS_RANKS="4"
rows='t2=tune(moments, taper = 2); tune(apply, taper = 2);'
for k in 2 3 5; do
  rows+="|e$k=tune(moments, taper = $k, taper_ends = last); tune(apply, taper = $k, taper_ends = first);"
done
rows+='|m3=tune(moments, taper = 3, taper_ends = last);'
rows+='|a3=tune(apply, taper = 3, taper_ends = first);'
rows+='|c8e3=tune(moments, chunks = 8, taper = 3, taper_ends = last); tune(apply, chunks = 8, taper = 3, taper_ends = first);'
names="t2 e2 e3 e5 m3 a3 c8e3"
job_bench lamb4 4 lamb $(( $(left) - 10 )) BENCH_SCHED_ROWS="$rows" \
  BUILD_ARGS="--programs lamb$(for n in $names; do printf ',lamb_x_%s' $n; done)" \
  BENCH_ARGS="--configs N=2^24,N=2^26 --rows coconetc$(for n in $names; do printf ',coconetc_%s' $n; done),nccl_allreduce --interleave 10"
job_end
