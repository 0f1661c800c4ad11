#!/usr/bin/env bash
# Writes the GPU tests' vectors (`coconetc verify --dump`: inputs and expected results for 1, 2
# and 4 ranks) of every sample and tests/gpu/programs/*.cnet, and of the variants below, into
# OUT (default .gpu-bundle/dumps). tests/gpu/run.sh runs it on the GPU machine with the bundled
# coconetc (the vectors are tens of MB: made there, they need not travel with the bundle);
# tools/gpu-bundle.sh runs it into a scratch folder first, so that a failing verify stops the
# bundle before any device time is spent.
# Usage: tests/gpu/make-vectors.sh [OUT]   (COCONETC=path: the compiler; default: the bundled one,
# else build/coconetc; GPU_TESTS_ONLY="a b@v c@*", as tests/gpu/run.sh takes it: only the vectors
# of these programs, by their names (or patterns) before any @, default and other sets)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
d="${1:-$root/.gpu-bundle/dumps}"
cc="${COCONETC:-}"
if [ -z "$cc" ]; then
  if [ -x "$root/.gpu-bundle/bin/coconetc" ]; then
    cc="$root/.gpu-bundle/bin/coconetc"
    export LD_LIBRARY_PATH="$root/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    cc="$root/build/coconetc"
  fi
fi
rm -rf "$d" && mkdir -p "$d"
# the programs GPU_TESTS_ONLY's builds belong to (names or shell patterns; split without expanding
# them against files)
read -r -a only <<< "${GPU_TESTS_ONLY:-}"
wanted() {  # NAME[@SET]: whether its program is one of them
  [ ${#only[@]} -eq 0 ] && return 0
  local n
  for n in "${only[@]}"; do
    # shellcheck disable=SC2053
    [[ "${1%@*}" == ${n%@*} ]] && return 0
  done
  return 1
}
# vectors NAME ARGS...: coconetc verify ARGS --allow-skips --seed 7 --dump OUT/NAME (ranks 1, 2, 4 unless
# ARGS say; a rank count with no sizes, or with only the fallback, gets no vectors or the fallback's),
# in the background, at most VECTORS_JOBS (default: the cores) at once; each writes its exit
# status to OUT/NAME.rc, checked after the last one.
jobsMax=${VECTORS_JOBS:-$(nproc)}
made=()
vectors() {
  local name=$1; shift
  wanted "$name" || return 0
  local ranks=(--ranks 1,2,4)
  for a in "$@"; do [ "$a" != --ranks ] || ranks=(); done
  # (a set made again, as decode_gemv's and pipeline's below: the first one finishes before)
  if [[ " ${made[*]} " == *" $name "* ]]; then wait; else made+=("$name"); fi
  rm -rf "${d:?}/$name"
  while [ "$(jobs -rp | wc -l)" -ge "$jobsMax" ]; do wait -n || true; done
  ( rc=0; "$cc" verify "$@" "${ranks[@]}" --allow-skips --seed 7 --dump "$d/$name" > "$d/$name.verify.txt" 2>&1 || rc=$?
    echo "$rc" > "$d/$name.rc" ) &
}
# builds SET GLOBS: the set runs with the builds these globs name only (tests/gpu/run.sh); written
# once every set's folder is made.
declare -A only_builds=()
builds() { if wanted "$1"; then only_builds[$1]=$2; fi; }
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  vectors "$(basename "$prog" .cnet)" "$prog"
done
# decode_gemv's vectors are drawn for decode_gemv_overlap.sched (it needs H divisible by its
# chunks; the sample's fused schedule takes any size), so every build of decode_gemv runs with them.
# Backward programs (--backward): NAME_backward, the vectors of the gradients (verify first checks
# them against finite differences).
for n in megatron_row megatron_mlp decode_gemv moe_gemm dlrm_embedding; do
  vectors "${n}_backward" "$root/samples/$n/$n.cnet" --backward
done
vectors decode_gemv "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched"
# pipeline's are drawn for pipeline_overlap.sched (its chunks must divide each rank's rows), so
# every build of pipeline runs with them; @stages: 4 ranks in two stages of two.
vectors pipeline "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched"
vectors pipeline@stages "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched" -D B=16 -D S=8 -D H=64 -D P=2 --ranks 4
# Variants at sizes where slices are not multiples of the vector width (misaligned slices, scalar
# tails, a bias whose length is not a multiple of 8): PROG@odd, run with every build of PROG.
vectors sgd@odd "$root/samples/sgd/sgd.cnet" -D N=4100
vectors adam@odd "$root/samples/adam/adam.cnet" -D N=1028
vectors lamb@odd "$root/samples/lamb/lamb.cnet" -D N=1028
# Uneven slices (torch.chunk's blocks, the last ranks' shorter): at 2 and 4 ranks the device
# forms run their NCCL calls (uneven_), reduce-scatters and all-gathers run as grouped reduces
# and broadcasts, and megatron_row's overlap (even only) the program without its schedule.
# uneven_slices@empty: N = 9 rows at 4 ranks leave the last rank an empty block; @vocab: a table
# of 50257 rows sliced over the ranks.
vectors adam@uneven "$root/samples/adam/adam.cnet" -D N=1001
vectors sgd@uneven "$root/samples/sgd/sgd.cnet" -D N=4099
vectors lamb@uneven "$root/samples/lamb/lamb.cnet" -D N=1001
vectors megatron_row@uneven "$root/samples/megatron_row/megatron_row.cnet" -D H=33
vectors sp_bsh@uneven "$root/tests/gpu/programs/sp_bsh.cnet" -D S=9
vectors uneven_slices@empty "$root/tests/gpu/programs/uneven_slices.cnet" -D N=9 -D M=7 -D V=13 -D D=5
vectors uneven_slices@vocab "$root/tests/gpu/programs/uneven_slices.cnet" -D N=33 -D M=7 -D V=50257 -D D=8
# Slices over several blocks (16 parts of 4096 elements per rank at 4 ranks), so that the
# @split builds' roles hand over many parts of every chunk.
vectors adam@big "$root/samples/adam/adam.cnet" -D N=262144
vectors lamb@big "$root/samples/lamb/lamb.cnet" -D N=262144
# Split-role kernels with more than 128 workers (192 at 4 ranks: 786432 elements per rank) and,
# with the @split16 builds, 16 rounds: many movers and workers that may drift rounds apart, which
# hand-over counters summed over the rounds (not per round) got wrong. 4 ranks only, and only the
# builds that the file `builds` names (their globs).
vectors adam@many "$root/samples/adam/adam.cnet" -D N=3145728 --ranks 4
builds adam@many 'adam@split* adam@barriers16'
vectors lamb@many "$root/samples/lamb/lamb.cnet" -D N=3145728 --ranks 4
builds lamb@many 'lamb@split* lamb@chunks4 lamb@chunks8 lamb@taper* lamb@occ2 lamb@barriers8'
# norm_clip at a size where its slices take the vector path (its own vectors take the scalar one).
vectors norm_clip@vec "$root/tests/gpu/programs/norm_clip.cnet" -D R=64 -D C=96
# scalar_chain with slices over several blocks of its head kernel (block partials combined in order).
vectors scalar_chain@big "$root/tests/gpu/programs/scalar_chain.cnet" -D N=131072
# fold_local over several blocks of its head kernel.
vectors fold_local@big "$root/tests/gpu/programs/fold_local.cnet" -D N=131072
# tail_fold over several worker blocks and several pull tiles per round (65536 elements a rank
# at 4 ranks: 4 rounds of 16384).
vectors tail_fold@big "$root/tests/gpu/programs/tail_fold.cnet" -D N=262144
# ops_mix with long rows (1000: several elements a thread in the row-wise kernels) and with more
# rows than one launch's blocks (66000 > 65535: the row loop's second pass).
vectors ops_mix@wide "$root/tests/gpu/programs/ops_mix.cnet" -D R=8 -D C=1000 -D V=16 -D D=8
vectors ops_mix@tall "$root/tests/gpu/programs/ops_mix.cnet" -D R=66000 -D C=4 -D V=16 -D D=8
# The row-wise kernels' shapes: rows of 2048 (f32 packs: 64 threads a row, two rows a block), of
# 1002 (no packs of 16 bytes: single elements; ranks 1 and 2 only, C divides by them), of 12288
# (512 threads a row) and of 20000 (beyond the registers: one block a row, read twice).
# rowwise_types with rows of 21 (no whole packs: single elements) and of 2048 (packs; 32-byte
# result packs of the u8 rows).
vectors rowwise_types@odd "$root/tests/gpu/programs/rowwise_types.cnet" -D R=5 -D C=21
vectors rowwise_types@wide "$root/tests/gpu/programs/rowwise_types.cnet" -D R=3 -D C=2048
# rowwise_types with 2 rows of 40000 (beyond the registers, few rows: each split over blocks in
# whole packs of every element type; in gen/rowwise_types@rowlong one block a row).
vectors rowwise_types@long "$root/tests/gpu/programs/rowwise_types.cnet" -D R=2 -D C=40000
# rowwise_types with rows of 10248: threads a row a multiple of 32 past 128, packs uneven over
# them (i32: 2562 packs over 352 threads, 7 or 8 each); the other types' rows take single
# elements or are too long for the registers. ops_mix@w12k: 192 and 384 threads, 8 packs each.
vectors rowwise_types@r192 "$root/tests/gpu/programs/rowwise_types.cnet" -D R=3 -D C=10248
# rowwise_half (16-bit rows) with rows of 1024 (16 threads a row, 8 rows a block: the bench's
# short softmax), of 10248 (the f16 and bf16 packs uneven over 192 threads) and of 40000 (few rows
# too long for the registers: split over blocks, MaxSumT's exps).
vectors rowwise_half@r1k "$root/tests/gpu/programs/rowwise_half.cnet" -D R=20 -D C=1024
vectors rowwise_half@r192 "$root/tests/gpu/programs/rowwise_half.cnet" -D R=3 -D C=10248
vectors rowwise_half@long "$root/tests/gpu/programs/rowwise_half.cnet" -D R=2 -D C=40000
vectors ops_mix@rows2k "$root/tests/gpu/programs/ops_mix.cnet" -D R=9 -D C=2048 -D V=16 -D D=8
vectors ops_mix@odd "$root/tests/gpu/programs/ops_mix.cnet" -D R=33 -D C=1002 -D V=16 -D D=8 --ranks 1,2
vectors ops_mix@w12k "$root/tests/gpu/programs/ops_mix.cnet" -D R=4 -D C=12288 -D V=16 -D D=8
vectors ops_mix@long "$root/tests/gpu/programs/ops_mix.cnet" -D R=3 -D C=20000 -D V=16 -D D=8
# Few rows of 40004 (softmax over a vocabulary at decode): each row in 10 parts over blocks (the
# last shorter), f32 rows in packs and f16 rows of single elements (40004 is no multiple of 8);
# ops_mix@long's rows of 20000 in 5 parts. gen/ops_mix@rowlong (the tuning table's row_long 1,
# tools/gpu-bundle.sh) takes one block a row instead.
vectors ops_mix@vocab "$root/tests/gpu/programs/ops_mix.cnet" -D R=2 -D C=40004 -D V=16 -D D=8
# seq_parallel with rows of 256 features over several blocks of the layer norm (1024 rows: 256
# a rank at 4 ranks).
vectors seq_parallel@big "$root/tests/gpu/programs/seq_parallel.cnet" -D B=16 -D S=64 -D H=256
# keepdim_norms with rows of 1000 features (the fused group's row reductions over several
# blocks) and 2048 rows (the column sums split over blocks).
vectors keepdim_norms@big "$root/tests/gpu/programs/keepdim_norms.cnet" -D B=2048 -D H=1000
# row_groups (normalizations written out, each fused group one row kernel) with rows of 1024
# (16 threads a row, 8 rows a block), of 12288 (192 threads a row of packs), of 40000 (beyond
# 512 threads of 8 packs: a block a row, more packs a thread), of 1002 (no whole packs: single
# elements) and many rows of 6 (one thread a row, 128 rows a block).
vectors row_groups@r1k "$root/tests/gpu/programs/row_groups.cnet" -D T=20 -D H=1024
vectors row_groups@w12k "$root/tests/gpu/programs/row_groups.cnet" -D T=4 -D H=12288
vectors row_groups@long "$root/tests/gpu/programs/row_groups.cnet" -D T=4 -D H=40000
vectors row_groups@odd "$root/tests/gpu/programs/row_groups.cnet" -D T=12 -D H=1002
vectors row_groups@tall "$root/tests/gpu/programs/row_groups.cnet" -D T=4100 -D H=6
# sends with whole vectors (@vec) and with a scalar tail (@odd).
vectors sends@vec "$root/tests/gpu/programs/sends.cnet" -D N=8192 --ranks 2,4
vectors sends@odd "$root/tests/gpu/programs/sends.cnet" -D N=1001 --ranks 2,4
# all_to_all with blocks of whole vectors over many kernel blocks (@vec) and with odd blocks
# (@odd: the scalar path).
vectors all_to_all@vec "$root/tests/gpu/programs/all_to_all.cnet" -D B=256 -D D=1024 --ranks 2,4
vectors all_to_all@odd "$root/tests/gpu/programs/all_to_all.cnet" -D B=8 -D D=3 --ranks 2,4
# reduce_chains where its reductions take the other kernels: rows and columns one block each
# (@big), columns split over blocks and rows one thread each (@tall).
vectors reduce_chains@big "$root/tests/gpu/programs/reduce_chains.cnet" -D R=600 -D C=700
vectors reduce_chains@tall "$root/tests/gpu/programs/reduce_chains.cnet" -D R=20000 -D C=8
# megatron_row with misaligned rows (@odd: at 4 ranks chunks of 36 elements, not whole vectors, so
# megatron_row@pipe runs its after-the-last-chunk form there) and with aligned rows of 128
# features (@vec: vector path; chunks of 64 / 32 / 16 rows per rank at 1 / 2 / 4 ranks).
vectors megatron_row@odd "$root/samples/megatron_row/megatron_row.cnet" -D B=16 -D S=3 -D H=12
vectors megatron_row@vec "$root/samples/megatron_row/megatron_row.cnet" -D B=16 -D S=16 -D H=128
# megatron_row past the one-shot limit at 4 ranks (640 KiB of partial sums, one chunk; 2 ranks run
# one-shot up to 8 MiB): there the default build's one chunk runs the reduce-scatter + epilogue +
# all-gather kernel, not the one-shot form.
vectors megatron_row@big "$root/samples/megatron_row/megatron_row.cnet" -D B=8 -D S=40 -D H=1024
# megatron_row with rows per rank that 4 does not divide (@rows: 12, 6, 3 at 1, 2, 4 ranks): the
# overlap runs 4, 3, 3 chunks where it keeps them (tune(f, merge = never) builds), 1 by default.
vectors megatron_row@rows "$root/samples/megatron_row/megatron_row.cnet" -D B=12 -D S=1 -D H=16
# Sizes that meet the program's requirements but not its schedule's (the split scatters B, the
# overlap's chunks divide it): the scheduled builds run the program without their schedule there
# (NAME_unscheduled), at 2 and 4 ranks; 1 rank runs the schedule.
vectors megatron_row@decode "$root/samples/megatron_row/megatron_row.cnet" -D B=1 -D S=3 -D H=128
vectors megatron_mlp@decode "$root/samples/megatron_mlp/megatron_mlp.cnet" -D B=1 -D S=2 -D H=64 -D F=256
# (pipeline@fallback runs only there, at 4 ranks: its vectors are the program's without the
# schedule, as the fallback holds them, and verify compares nothing, so it runs without one.)
vectors pipeline@fallback "$root/samples/pipeline/pipeline.cnet" --schedule none -D B=1 -D S=4 -D H=64 -D P=2 --ranks 4
vectors dlrm_embedding@fallback "$root/samples/dlrm_embedding/dlrm_embedding.cnet" -D B=6 -D T=4 -D L=3 -D R=50 -D D=16
# decode_gemv with F / P >= 2048 rows in w1's GEMV, which then runs the runtime's gemv_rows kernel
# (cuBLAS below that): 16-byte loads (@big, H = 256) and element by element (@oddk, H = 130).
vectors decode_gemv@big "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched" -D H=256 -D F=8192
vectors decode_gemv@oddk "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched" -D H=130 -D F=8192
# gemvs (f32, bf16) through gemv_rows: 16-byte loads (@big; @oddm: an odd row count, so the
# last warp of the two-rows-per-warp form has one row) and element by element (@oddk).
vectors gemvs@big "$root/tests/gpu/programs/gemvs.cnet" -D M=2056 -D K=520
vectors gemvs@oddm "$root/tests/gpu/programs/gemvs.cnet" -D M=2049 -D K=520
vectors gemvs@oddk "$root/tests/gpu/programs/gemvs.cnet" -D M=2048 -D K=131
# transposed_reads at sizes where the transposed reads are real matrices (op T's leading
# dimensions differ from op N's) and the overlap has two chunks of 32 rows
vectors transposed_reads@big "$root/tests/gpu/programs/transposed_reads.cnet" -D T=64 -D H=136 -D F=72 -D E=3
# allreduces at sizes that take each device-API path at 1, 2 and 4 ranks: f16 two-shot (vector)
# at 4 ranks, f32 one-shot (scalar tail), bf16 NCCL fallback at 4; at 2 ranks all three one-shot
# (coconet_rt::oneShotMaxBytes: 8 MiB there).
vectors allreduces@big "$root/tests/gpu/programs/allreduces.cnet" -D A=300000 -D B=65539 -D C=262150
# past 2 ranks' one-shot limit (8 MiB): f16 two-shot (vector), bf16 two-shot with a scalar tail.
vectors allreduces@two "$root/tests/gpu/programs/allreduces.cnet" -D A=4200000 -D B=65539 -D C=4194310 --ranks 2
# allreduces in the LL form by default (at most coconet_rt::kLLMaxBytes, 256 KiB) whose last
# 8-byte line is partly past the end: 30001 f16, 4097 f32, 131071 bf16 (262,142 bytes).
vectors allreduces@ll "$root/tests/gpu/programs/allreduces.cnet" -D A=30001 -D B=4097 -D C=131071
# allreduces whose parts (n / (2 P) elements) are whole 16-byte vectors at every rank count (a),
# or not at 4 ranks (b, c): the copy-engine build (gen/allreduces@ce) takes both forms of its sum;
# gen/allreduces@ce_rounds (4, 1, 3 rounds) divides them too (c = 12 x 21846).
vectors allreduces@ce "$root/tests/gpu/programs/allreduces.cnet" -D A=1048576 -D B=65544 -D C=262152
# all_to_all pipelines whose own block splits unevenly: moe_gemm with 3 experts per rank (parts of
# 1 and 2 whole batches), with 1 expert of 5 rows (rows 2 and 3 of its one batch), a2a_ffn with 5
# rows per block (a rank-2 left operand). An odd capacity is not for moe_gemm@capacity (its
# schedule chunks C in two): the pipeline's builds only.
vectors moe_gemm@x3 "$root/samples/moe_gemm/moe_gemm.cnet" --schedule "$root/samples/moe_gemm/moe_gemm.sched" -D X=3 -D C=5
builds moe_gemm@x3 'moe_gemm moe_gemm@nccl'
vectors moe_gemm@x1 "$root/samples/moe_gemm/moe_gemm.cnet" --schedule "$root/samples/moe_gemm/moe_gemm.sched" -D X=1 -D C=5
builds moe_gemm@x1 'moe_gemm moe_gemm@nccl'
# A decode-like shape (4 tokens per expert and rank, H = 64, F = 128): the unscheduled build's
# expert GEMMs gather their rows by expert (read-bound; coconet_rt::gatherBatchedRows), and the
# pipeline's builds run the program unscheduled there at 2 and 4 ranks (the other moe_gemm sets
# keep the pipeline: their GEMMs' weights are a few elements).
vectors moe_gemm@decode "$root/samples/moe_gemm/moe_gemm.cnet" -D X=2 -D C=4 -D H=64 -D F=128
vectors a2a_ffn@odd "$root/tests/gpu/programs/a2a_ffn.cnet" --schedule "$root/tests/gpu/programs/a2a_ffn.sched" -D T=5
# Odd sizes of real models: N = 1001 parameters, H = 33 features, a vocabulary of 50257 rows. At
# one rank only: on more, such sizes cut uneven blocks, which the language takes and the CUDA
# code (its slices even) refuses.
for s in adam lamb sgd; do vectors "$s@n1001" "$root/samples/$s/$s.cnet" -D N=1001 --ranks 1; done
for s in megatron_row decode_gemv moe_gemm pipeline; do vectors "$s@h33" "$root/samples/$s/$s.cnet" -D H=33 --ranks 1; done
vectors megatron_mlp@h33 "$root/samples/megatron_mlp/megatron_mlp.cnet" -D H=33 -D F=50 --ranks 1
vectors dlrm_embedding@vocab "$root/samples/dlrm_embedding/dlrm_embedding.cnet" -D B=8 -D T=4 -D L=3 -D R=50257 -D D=16 --ranks 1
vectors adamw_clip@n1001 "$root/tests/gpu/programs/adamw_clip.cnet" -D N=1001 --ranks 1
vectors fsdp_step@odd "$root/tests/gpu/programs/fsdp_step.cnet" -D B=5 -D I=1001 -D O=33 --ranks 1
vectors sp_attention_out@odd "$root/tests/gpu/programs/sp_attention_out.cnet" -D S=33 -D B=3 -D H=66 --ranks 1
vectors mlp_col_row@odd "$root/tests/gpu/programs/mlp_col_row.cnet" -D T=33 -D H=64 -D F=50 --ranks 1
vectors transposes@odd "$root/tests/gpu/programs/transposes.cnet" -D R=33 -D C=5 -D B=3 --ranks 1
vectors sp_bsh@odd "$root/tests/gpu/programs/sp_bsh.cnet" -D B=3 -D S=33 -D H=66 --ranks 1
vectors shape_ops@odd "$root/tests/gpu/programs/shape_ops.cnet" -D B=3 -D S=7 -D H=33 --ranks 1
wait
bad=0
for name in "${made[@]}"; do
  if [ "$(cat "$d/$name.rc" 2>/dev/null)" != 0 ]; then
    echo "make-vectors: coconetc verify of $name failed (exit $(cat "$d/$name.rc" 2>/dev/null)):" >&2
    tail -n 20 "$d/$name.verify.txt" >&2
    bad=1
  fi
  rm -f "$d/$name.rc"
done
[ "$bad" = 0 ] || exit 1
for set in "${!only_builds[@]}"; do echo "${only_builds[$set]}" > "$d/$set/builds"; done
du -sh "$d"
