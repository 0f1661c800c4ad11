#!/usr/bin/env bash
# Prepares what the GPU tests need, on a machine with coconetc built, in .gpu-bundle/ (git-ignored;
# carried to the GPU machine): every sample (with its schedule) and every tests/gpu/programs/*.cnet
# compiled to CUDA, the variants below, and coconetc with its ANTLR runtime in bin/ and lib/.
# tests/gpu/run.sh and tools/bench/gpu/run.sh run there. The tests' vectors (`verify --dump`) are
# made there too, by tests/gpu/make-vectors.sh with the bundled coconetc (they are tens of MB and
# the carry is limited); here that script runs into a scratch folder, so a failing verify shows
# before any device time is spent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/.gpu-bundle"
rm -rf "$b" && mkdir -p "$b/gen" "$b/bin" "$b/lib"
# coconetc itself, for tools/bench/gpu/run.sh (the GPU machine has no ANTLR): stripped, with the
# ANTLR runtime it links (run it with LD_LIBRARY_PATH=.gpu-bundle/lib).
strip -o "$b/bin/coconetc" "$root/build/coconetc"
# The C++ runtime goes too, so that a GPU machine with an older libstdc++ runs it.
for lib in $(ldd "$root/build/coconetc" | awk '/antlr4|libstdc++|libgcc_s/ {print $3}'); do cp "$lib" "$b/lib/"; done
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  n=$(basename "$prog" .cnet)
  "$root/build/coconetc" compile "$prog" -o "$b/gen/$n" >/dev/null
done

# The PyTorch target (--target torch): torch/PROG for every sample and shape_ops, a package that
# tests/gpu/torch-run.sh installs with pip and checks against PROG's vectors.
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/shape_ops.cnet; do
  n=$(basename "$prog" .cnet)
  "$root/build/coconetc" compile "$prog" --target torch -o "$b/torch/$n" >/dev/null
done
# and backward programs' packages (torch/NAME_backward), through which the operators' autograd runs,
# with the forwards that save what they read (torch/NAME.saving, --saving) (examples/gpt/run.sh
# takes adam, megatron_mlp.saving and megatron_mlp_backward from here: COCONET_PKGS)
for n in megatron_row megatron_mlp decode_gemv moe_gemm dlrm_embedding; do
  "$root/build/coconetc" compile "$root/samples/$n/$n.cnet" --backward --target torch -o "$b/torch/${n}_backward" >/dev/null
  "$root/build/coconetc" compile "$root/samples/$n/$n.cnet" --saving --target torch -o "$b/torch/$n.saving" >/dev/null
done

# Backward programs (--backward): backward/NAME, built and checked by tests/gpu/backward-run.sh
# (samples, and the GPU test programs made for their adjoints: collectives, embeddings).
for prog in "$root"/samples/{megatron_row,megatron_mlp,decode_gemv,moe_gemm,dlrm_embedding,pipeline}/*.cnet \
            "$root"/tests/gpu/programs/{combines,embeds}.cnet; do
  n=$(basename "$prog" .cnet)
  "$root/build/coconetc" compile "$prog" --backward -o "$b/backward/$n" >/dev/null
done
# the sequence-parallel layer differentiated as its schedule leaves it (backward/seq_parallel@sp)
"$root/build/coconetc" compile "$root/tests/gpu/programs/seq_parallel.cnet" --backward --from-schedule -o "$b/backward/seq_parallel@sp" >/dev/null

# The NCCL-only path (--no-device-collectives): gen/PROG@nccl, run with PROG's vectors (and its
# variants'), for every program whose default code has device-API collectives.
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  n=$(basename "$prog" .cnet)
  grep -q 'devReady("' "$b/gen/$n/$n.cu" || continue
  "$root/build/coconetc" compile "$prog" --no-device-collectives -o "$b/gen/$n@nccl" >/dev/null
done
# variant NAME SAMPLE KNOBS: gen/SAMPLE@NAME, samples/SAMPLE compiled with its schedule plus the
# tune lines KNOBS (checked with SAMPLE's vectors).
variant() {
  local name=$1 s=$2 knobs=$3
  { cat "$root/samples/$s/$s.sched"; printf '%s\n' "$knobs"; } > "$b/$s-$name.sched"
  "$root/build/coconetc" compile "$root/samples/$s/$s.cnet" --schedule "$b/$s-$name.sched" -o "$b/gen/$s@$name" >/dev/null
}
# Adam's device-API kernel in 5 pipelined rounds; LAMB's head and tail groups in 3 each; @split5
# and @split3 the same rounds with the blocks in roles (tune(G, roles = split): movers push and
# pull the chunks, workers compute them).
variant chunks5 adam 'tune(f, rounds = 5);'
variant chunks3 lamb $'tune(moments, rounds = 3);\ntune(apply, rounds = 3);'
variant split5 adam 'tune(f, rounds = 5, roles = split);'
variant split3 lamb $'tune(moments, rounds = 3, roles = split);\ntune(apply, rounds = 3, roles = split);'
# 16 rounds in roles, for the @many vectors (192 workers at 4 ranks): the rounds and blocks of
# the sizes where per-round hand-over matters (coconet_rt::roleReady).
variant split16 adam 'tune(f, rounds = 16, roles = split);'
variant split16 lamb $'tune(moments, rounds = 16, roles = split);\ntune(apply, rounds = 16, roles = split);'
# roles = auto (movers from coconet_rt::kRolesAutoRounds = 4 rounds, which the test sizes never
# reach by size) with 4 and 8 rounds: their kernels run with movers (@chunks3, below, without).
variant chunks4 lamb $'tune(moments, rounds = 4, roles = auto);\ntune(apply, rounds = 4, roles = auto);'
variant chunks8 lamb $'tune(moments, rounds = 8, roles = auto);\ntune(apply, rounds = 8, roles = auto);'
# Tapered chunks (chunkLo: the end chunks halve) past what the defaults take: 7 rounds with
# taper 3 (1, 2, 4, 8, 4, 2, 1) on the head, and 6 rounds with taper 8 on the tail (clamped to
# 3: 1, 2, 4, 4, 2, 1, no middle chunk).
variant taper lamb $'tune(moments, rounds = 7, roles = split, taper = 3);\ntune(apply, rounds = 6, roles = split, taper = 8);'
# One end tapered (tune(G, taper_ends = ...)): the head's last 5 of 6 chunks shrink (32, 16, 8, 4,
# 2, 1), the tail's first 2 of 5 grow (1, 2, 4, 4, 4).
variant taperends lamb $'tune(moments, rounds = 6, roles = split, taper = 5, taper_ends = last);\ntune(apply, rounds = 5, roles = split, taper = 2, taper_ends = first);'
# `moments` at two blocks per SM (tune(f, occupancy = 2): 64 registers, twice the workers) with
# movers (8 rounds, roles auto).
variant occ2 lamb $'tune(moments, rounds = 8, roles = auto, occupancy = 2);\ntune(apply, rounds = 8, roles = auto);'
# Adam's kernel at two blocks per SM (64 registers; the default takes 116, one block per SM), the
# form whose grid grows on one rank (coconet_rt::soloBlocks), where no barrier bounds it.
variant occ2 adam 'tune(f, occupancy = 2);'
# Each round's barrier in its two phases (tune(G, barriers = split): arrive, other work, wait),
# every block both (@barriers5, @barriers3) and in roles (@barriers16: Adam's movers; @barriers8:
# LAMB's roles auto from 4 rounds), the latter two also with the @many vectors.
variant barriers5 adam 'tune(f, rounds = 5, barriers = split);'
variant barriers16 adam 'tune(f, rounds = 16, roles = split, barriers = split);'
variant barriers3 lamb $'tune(moments, rounds = 3, barriers = split);\ntune(apply, rounds = 3, barriers = split);'
variant barriers8 lamb $'tune(moments, rounds = 8, roles = auto, barriers = split);\ntune(apply, rounds = 8, roles = auto, barriers = split);'
# Their groups' transfers by copy engines (a kernel per round between the copies): rounds by size
# (one at the test sizes) and 3 rounds.
variant ce adam 'tune(f, algorithm = copy_engines);'
variant ce3 adam 'tune(f, algorithm = copy_engines, rounds = 3);'
variant ce lamb $'tune(moments, algorithm = copy_engines);\ntune(apply, algorithm = copy_engines);'
variant ce3 lamb $'tune(moments, algorithm = copy_engines, rounds = 3);\ntune(apply, algorithm = copy_engines, rounds = 3);'
# The test vectors are small, so the default builds' overlaps merge their copy-engine chunks into
# one (a chunk's copy to each peer under 8 MiB, coconet_rt::overlapChunks); the variants below
# keep the overlap's chunks where they divide the rows per rank (tune(f, merge = never)), so
# that the chunked device path runs too.
# The Megatron overlaps with their epilogue and all-gather per chunk (the default takes it only
# for large products on two ranks); megatron_row@pipe runs with every megatron_row vector set
# (@odd at 4 ranks has chunks of 36 elements, not whole vectors: it runs once after the last chunk).
variant pipe megatron_row 'tune(f, gather = pipelined, merge = never);'
variant pipe megatron_mlp 'tune(f, gather = pipelined, merge = never);'
# The last chunk in pieces (tune(f, tail = T)): per chunk with 4 pieces (megatron_row@vec splits at
# 1, 2 and 4 ranks; @odd at 2 ranks has 6 rows per chunk, so tail3's pieces of 2 rows run there,
# after the last chunk since the test products are small).
variant tail megatron_row $'tune(f, gather = pipelined, tail = 4, merge = never);'
variant tail3 megatron_row 'tune(f, tail = 3, merge = never);'
variant tail megatron_mlp $'tune(f, gather = pipelined, tail = 2, merge = never);'
# The all-gather after the last chunk by copy engines (the kernel without its pulls, then copy-engine
# pulls of the other ranks' blocks): tune(f, algorithm = copy_engines) with the after form.
# At the test sizes (up to 512 KiB of partial sums) the overlaps' one chunk runs the group's
# one-shot form (every rank computes every slice); tune(f, algorithm = two_shot) keeps the
# reduce-scatter + epilogue + all-gather kernel there.
variant two megatron_row 'tune(f, algorithm = two_shot);'
# ... that kernel (Emitter::onePassForm) in 3 pipelined rounds, and in 4 with split roles (16
# movers), from the group's own knobs.
variant two3 megatron_row 'tune(f, algorithm = two_shot, rounds = 3);'
variant twosplit megatron_row 'tune(f, algorithm = two_shot, rounds = 4, roles = split, movers = 16);'
# ... and tune(f, algorithm = one_shot) takes the one-shot form at every size (@big's 640 KiB too).
variant one megatron_row 'tune(f, algorithm = one_shot);'
# ... and tune(f, algorithm = ll) its LL form (flags in the data, no barrier) at every size (the
# default takes it up to coconet_rt::llGroupMaxBytes, the barrier form above), and ll128 its LL128
# form (128-byte lines).
variant ll megatron_row 'tune(f, algorithm = ll);'
variant ll128 megatron_row 'tune(f, algorithm = ll128);'
variant two megatron_mlp 'tune(f, algorithm = two_shot);'
# The fused group without the overlap (the kernel of emitDeviceGroup): one-shot at the test sizes.
printf 'rs, ag = split(y);\nreorder(ag, out);\nf = fuse(rs, out, ag);\n' > "$b/megatron_row-group.sched"
"$root/build/coconetc" compile "$root/samples/megatron_row/megatron_row.cnet" --schedule "$b/megatron_row-group.sched" -o "$b/gen/megatron_row@group" >/dev/null
# decode_gemv's fused [allreduce, epilogue] group without its one-shot kernel (two_shot: its
# two-shot kernel, the epilogue on each rank's slice, where H % P == 0; else the allreduce kernel,
# then the epilogue's).
variant two decode_gemv 'tune(f, algorithm = two_shot);'
# The Megatron layer and matmul_allreduce with the allreduce whole and the epilogue fused after it
# (no overlap): @ar as the backend chooses by size (one-shot up to oneShotMaxBytes(P), two-shot
# past it: megatron_row@big at 4 ranks), @ar2 its two-shot kernel at every size (Emitter::
# twoShotForm: a periodic bias, dropout keys by the index, a replicated residual on the slice).
printf 'f = fuse(y, out);\n' > "$b/ar.sched"
printf 'f = fuse(y, out);\ntune(f, algorithm = two_shot);\n' > "$b/ar2.sched"
for s in ar ar2; do
  "$root/build/coconetc" compile "$root/samples/megatron_row/megatron_row.cnet" --schedule "$b/$s.sched" -o "$b/gen/megatron_row@$s" >/dev/null
  "$root/build/coconetc" compile "$root/tests/gpu/programs/matmul_allreduce.cnet" --schedule "$b/$s.sched" -o "$b/gen/matmul_allreduce@$s" >/dev/null
done
# ... and in its one-shot kernel's LL form at every rank count (the sample takes it on two ranks
# up to coconet_rt::llGroupMaxBytes, the barrier form on more).
variant ll decode_gemv 'tune(f, algorithm = ll);'
variant ll128 decode_gemv 'tune(f, algorithm = ll128);'
variant ceg megatron_row $'tune(f, gather = after, algorithm = copy_engines, merge = never);'
variant ceg megatron_mlp $'tune(f, gather = after, algorithm = copy_engines, merge = never);'
# decode_gemv pipelined with the GEMV (decode_gemv_overlap.sched): the gemv -> allreduce overlap
# (make-vectors.sh draws decode_gemv's vectors for that schedule).
"$root/build/coconetc" compile "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched" -o "$b/gen/decode_gemv@overlap" >/dev/null
# moe_gemm's expert GEMM chunked along the capacity (moe_gemm_capacity.sched), moe_gemm's vectors.
# (gen/moe_gemm is its all_to_all pipeline by copy engines; gen/moe_gemm@nccl the same by NCCL.)
"$root/build/coconetc" compile "$root/samples/moe_gemm/moe_gemm.cnet" --schedule "$root/samples/moe_gemm/moe_gemm_capacity.sched" -o "$b/gen/moe_gemm@capacity" >/dev/null
# moe_gemm without a schedule: its batched expert GEMMs gather their rows by expert where they are
# read-bound (coconet_rt::gatherBatchedRows; the @decode vectors take that path).
"$root/build/coconetc" compile "$root/samples/moe_gemm/moe_gemm.cnet" --schedule none -o "$b/gen/moe_gemm@none" >/dev/null
# row_groups and keepdim_norms without their schedules: every normalization written out stage by
# stage (the element-wise kernels reading a keepdim reduction's [..., 1] result once a row, at i /
# rl), checked with their programs' vectors.
"$root/build/coconetc" compile "$root/tests/gpu/programs/row_groups.cnet" --schedule none -o "$b/gen/row_groups@none" >/dev/null
"$root/build/coconetc" compile "$root/tests/gpu/programs/keepdim_norms.cnet" --schedule none -o "$b/gen/keepdim_norms@none" >/dev/null
# The row kernels' long form for every row: gen/PROG@rowlong, compiled with the tuning file
# tests/gpu/tunings/row-long.json (the table's row_long 1: a block a row, the row read again in
# each pass, never in registers nor split over blocks), run with PROG's vectors and vector sets.
for n in rowwise_types rowwise_half ops_mix row_groups; do
  "$root/build/coconetc" compile "$root/tests/gpu/programs/$n.cnet" --tuning "$root/tests/gpu/tunings/row-long.json" -o "$b/gen/$n@rowlong" >/dev/null
done
# Every allreduce of tests/gpu/programs/allreduces.cnet by copy engines at any size (the default
# takes them from copyEngineMinBytes(P)): gen/allreduces@ce, run with allreduces' vector sets.
printf 'tune(ya, algorithm = copy_engines);\ntune(yb, algorithm = copy_engines);\ntune(yc, algorithm = copy_engines);\n' > "$b/allreduces-ce.sched"
"$root/build/coconetc" compile "$root/tests/gpu/programs/allreduces.cnet" --schedule "$b/allreduces-ce.sched" -o "$b/gen/allreduces@ce" >/dev/null
# The same in other round counts (tune(rounds)): gen/allreduces@ce_rounds (4, 1 and 3 rounds).
printf 'tune(ya, algorithm = copy_engines, rounds = 4);\ntune(yb, algorithm = copy_engines, rounds = 1);\ntune(yc, algorithm = copy_engines, rounds = 3);\n' > "$b/allreduces-ce-rounds.sched"
"$root/build/coconetc" compile "$root/tests/gpu/programs/allreduces.cnet" --schedule "$b/allreduces-ce-rounds.sched" -o "$b/gen/allreduces@ce_rounds" >/dev/null
# Every allreduce of allreduces.cnet in the LL form at any size (the default takes it up to
# coconet_rt::kLLMaxBytes): gen/allreduces@ll, run with allreduces' vector sets.
printf 'tune(ya, algorithm = ll);\ntune(yb, algorithm = ll);\ntune(yc, algorithm = ll);\n' > "$b/allreduces-ll.sched"
"$root/build/coconetc" compile "$root/tests/gpu/programs/allreduces.cnet" --schedule "$b/allreduces-ll.sched" -o "$b/gen/allreduces@ll" >/dev/null
# The same in the LL128 form (128-byte lines, one flag each; the default past kLLMaxBytes up to
# ll128MaxBytes(P): the @big set on 2 ranks): gen/allreduces@ll128.
printf 'tune(ya, algorithm = ll128);\ntune(yb, algorithm = ll128);\ntune(yc, algorithm = ll128);\n' > "$b/allreduces-ll128.sched"
"$root/build/coconetc" compile "$root/tests/gpu/programs/allreduces.cnet" --schedule "$b/allreduces-ll128.sched" -o "$b/gen/allreduces@ll128" >/dev/null
# The pipeline boundary with its matmul pipelined (pipeline_overlap.sched): gen/pipeline@overlap
# (make-vectors.sh draws pipeline's vectors for that schedule).
"$root/build/coconetc" compile "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched" -o "$b/gen/pipeline@overlap" >/dev/null
# Every verify of the vectors must pass here before the bundle goes.
scratch="$(mktemp -d)"
COCONETC="$root/build/coconetc" GPU_TESTS_ONLY="${GPU_BUNDLE_ONLY:-}" "$root/tests/gpu/make-vectors.sh" "$scratch/dumps" > /dev/null
rm -rf "$scratch"
# GPU_BUNDLE_ONLY="a b@two ...": keep only those builds (a name without '@' keeps NAME and all its
# NAME@VARIANT builds), so that the bundle and the repository fit what a device run carries (64 MiB).
if [ -n "${GPU_BUNDLE_ONLY:-}" ]; then
  for d in "$b"/gen/*; do
    g=$(basename "$d") keep=0
    for w in $GPU_BUNDLE_ONLY; do
      [ "$g" = "$w" ] || { [ "${w#*@}" = "$w" ] && [ "${g%%@*}" = "$w" ]; } && keep=1
    done
    [ $keep = 1 ] || rm -rf "$d"
  done
  echo "gpu-bundle: kept $(ls "$b/gen" | tr '\n' ' ')"
fi
# The commit the bundle was made from (tests/gpu/ll-stress.sh's header names it), "-dirty"
# with changes not committed: a result must name the code that ran.
git -C "$root" describe --always --dirty --abbrev=7 > "$b/commit.txt" 2>/dev/null || echo "unknown" > "$b/commit.txt"
du -sh "$b"
# The bundle as one .gpu-bundle/bundle.tgz (the generated sources compress about 4x) when it and
# the repository's tracked files pass 56 MiB (a device run carries 64 MiB in all), or with
# GPU_BUNDLE_PACK=1 (=0: never); tools/gpu-unpack.sh (which tests/gpu/run.sh and
# tools/bench/gpu/run.sh call) unpacks it in place.
pack=${GPU_BUNDLE_PACK:-}
if [ -z "$pack" ]; then
  tracked=$(cd "$root" && git ls-files -z 2>/dev/null | du --files0-from=- -cb 2>/dev/null | tail -n 1 | cut -f1)
  total=$(( ${tracked:-0} + $(du -sb "$b" | cut -f1) ))
  pack=0
  [ "$total" -gt $(( 56 << 20 )) ] && pack=1 && echo "gpu-bundle: $(( total >> 20 )) MiB with the tracked files: packed"
fi
if [ "$pack" = 1 ]; then
  tar czf "$root/.bundle.tgz.tmp" -C "$b" . && rm -rf "$b" && mkdir -p "$b" && mv "$root/.bundle.tgz.tmp" "$b/bundle.tgz"
  du -sh "$b/bundle.tgz"
fi
