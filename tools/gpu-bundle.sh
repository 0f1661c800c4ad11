#!/usr/bin/env bash
# Prepares what the GPU tests need, on a machine with coconetc built: every sample (with its
# schedule) and every tests/gpu/programs/*.cnet compiled to CUDA, and `verify --dump` vectors
# for 1, 2 and 4 ranks, in .gpu-bundle/
# (git-ignored; carried to the GPU machine), and coconetc with its ANTLR runtime in bin/ and lib/.
# tests/gpu/run.sh and tools/bench/gpu/run.sh run there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/.gpu-bundle"
rm -rf "$b" && mkdir -p "$b/gen" "$b/dumps" "$b/bin" "$b/lib"
# coconetc itself, for tools/bench/gpu/run.sh (the GPU machine has no ANTLR): stripped, with the
# ANTLR runtime it links (run it with LD_LIBRARY_PATH=.gpu-bundle/lib).
strip -o "$b/bin/coconetc" "$root/build/coconetc"
# The C++ runtime goes too, so that a GPU machine with an older libstdc++ runs it.
for lib in $(ldd "$root/build/coconetc" | awk '/antlr4|libstdc++|libgcc_s/ {print $3}'); do cp "$lib" "$b/lib/"; done
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  n=$(basename "$prog" .cnet)
  "$root/build/coconetc" compile "$prog" -o "$b/gen/$n" >/dev/null
  "$root/build/coconetc" verify "$prog" --ranks 1,2,4 --seed 7 --dump "$b/dumps/$n" > "$b/dumps/$n.verify.txt"
done

# The NCCL-only path (--no-device-collectives): gen/PROG@nccl, run with PROG's vectors (and its
# variants'), for every program whose default code has device-API collectives.
for prog in "$root"/samples/*/*.cnet "$root"/tests/gpu/programs/*.cnet; do
  n=$(basename "$prog" .cnet)
  grep -q 'devReady("' "$b/gen/$n/$n.cu" || continue
  "$root/build/coconetc" compile "$prog" --no-device-collectives -o "$b/gen/$n@nccl" >/dev/null
done
# Adam's device-API kernel in 5 pipelined rounds (tune(f, chunks = 5)): gen/adam@chunks5.
cat "$root/samples/adam/adam.sched" > "$b/adam-chunks.sched"
echo 'tune(f, chunks = 5);' >> "$b/adam-chunks.sched"
"$root/build/coconetc" compile "$root/samples/adam/adam.cnet" --schedule "$b/adam-chunks.sched" -o "$b/gen/adam@chunks5" >/dev/null
# LAMB's head and tail groups in 3 pipelined rounds each: gen/lamb@chunks3.
cat "$root/samples/lamb/lamb.sched" > "$b/lamb-chunks.sched"
printf 'tune(moments, chunks = 3);\ntune(apply, chunks = 3);\n' >> "$b/lamb-chunks.sched"
"$root/build/coconetc" compile "$root/samples/lamb/lamb.cnet" --schedule "$b/lamb-chunks.sched" -o "$b/gen/lamb@chunks3" >/dev/null
# decode_gemv pipelined with the GEMV (decode_gemv_overlap.sched): the gemv -> allreduce overlap.
# Its vectors are drawn for that schedule (it needs H divisible by its chunks; the sample's
# fused schedule takes any size), so every build of decode_gemv runs with them.
"$root/build/coconetc" compile "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched" -o "$b/gen/decode_gemv@overlap" >/dev/null
rm -rf "$b/dumps/decode_gemv"
"$root/build/coconetc" verify "$root/samples/decode_gemv/decode_gemv.cnet" --schedule "$root/samples/decode_gemv/decode_gemv_overlap.sched" --ranks 1,2,4 --seed 7 --dump "$b/dumps/decode_gemv" > "$b/dumps/decode_gemv.verify.txt"
# The pipeline boundary with its matmul pipelined (pipeline_overlap.sched): gen/pipeline@overlap.
# Its vectors are drawn for that schedule (its chunks must divide each rank's rows), so every
# build of pipeline runs with them; @stages: 4 ranks in two stages of two.
"$root/build/coconetc" compile "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched" -o "$b/gen/pipeline@overlap" >/dev/null
rm -rf "$b/dumps/pipeline"
"$root/build/coconetc" verify "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched" --ranks 1,2,4 --seed 7 --dump "$b/dumps/pipeline" > "$b/dumps/pipeline.verify.txt"
"$root/build/coconetc" verify "$root/samples/pipeline/pipeline.cnet" --schedule "$root/samples/pipeline/pipeline_overlap.sched" -D B=16 -D S=8 -D H=64 -D P=2 --ranks 4 --seed 7 --dump "$b/dumps/pipeline@stages" > "$b/dumps/pipeline@stages.verify.txt"
# Variants at sizes where slices are not multiples of the vector width (misaligned slices, scalar
# tails, a bias whose length is not a multiple of 8): dumps/PROG@odd, run with gen/PROG's build.
"$root/build/coconetc" verify "$root/samples/sgd/sgd.cnet" -D N=4100 --ranks 1,2,4 --seed 7 --dump "$b/dumps/sgd@odd" > "$b/dumps/sgd@odd.verify.txt"
"$root/build/coconetc" verify "$root/samples/adam/adam.cnet" -D N=1028 --ranks 1,2,4 --seed 7 --dump "$b/dumps/adam@odd" > "$b/dumps/adam@odd.verify.txt"
"$root/build/coconetc" verify "$root/samples/lamb/lamb.cnet" -D N=1028 --ranks 1,2,4 --seed 7 --dump "$b/dumps/lamb@odd" > "$b/dumps/lamb@odd.verify.txt"
# norm_clip at a size where its slices take the vector path (its own vectors take the scalar one).
"$root/build/coconetc" verify "$root/tests/gpu/programs/norm_clip.cnet" -D R=64 -D C=96 --ranks 1,2,4 --seed 7 --dump "$b/dumps/norm_clip@vec" > "$b/dumps/norm_clip@vec.verify.txt"
# scalar_chain with slices over several blocks of its head kernel (block partials combined in order).
"$root/build/coconetc" verify "$root/tests/gpu/programs/scalar_chain.cnet" -D N=131072 --ranks 1,2,4 --seed 7 --dump "$b/dumps/scalar_chain@big" > "$b/dumps/scalar_chain@big.verify.txt"
# fold_local over several blocks of its head kernel.
"$root/build/coconetc" verify "$root/tests/gpu/programs/fold_local.cnet" -D N=131072 --ranks 1,2,4 --seed 7 --dump "$b/dumps/fold_local@big" > "$b/dumps/fold_local@big.verify.txt"
# sends with whole vectors (@vec) and with a scalar tail (@odd).
"$root/build/coconetc" verify "$root/tests/gpu/programs/sends.cnet" -D N=8192 --ranks 2,4 --seed 7 --dump "$b/dumps/sends@vec" > "$b/dumps/sends@vec.verify.txt"
"$root/build/coconetc" verify "$root/tests/gpu/programs/sends.cnet" -D N=1001 --ranks 2,4 --seed 7 --dump "$b/dumps/sends@odd" > "$b/dumps/sends@odd.verify.txt"
# reduce_chains where its reductions take the other kernels: rows and columns one block each
# (@big), columns split over blocks and rows one thread each (@tall).
"$root/build/coconetc" verify "$root/tests/gpu/programs/reduce_chains.cnet" -D R=600 -D C=700 --ranks 1,2,4 --seed 7 --dump "$b/dumps/reduce_chains@big" > "$b/dumps/reduce_chains@big.verify.txt"
"$root/build/coconetc" verify "$root/tests/gpu/programs/reduce_chains.cnet" -D R=20000 -D C=8 --ranks 1,2,4 --seed 7 --dump "$b/dumps/reduce_chains@tall" > "$b/dumps/reduce_chains@tall.verify.txt"
"$root/build/coconetc" verify "$root/samples/megatron_row/megatron_row.cnet" -D B=16 -D S=3 -D H=12 --ranks 1,2,4 --seed 7 --dump "$b/dumps/megatron_row@odd" > "$b/dumps/megatron_row@odd.verify.txt"
# megatron_row with aligned rows of 128 features (vector path; chunks of 64 / 32 / 16 rows per rank
# at 1 / 2 / 4 ranks, copied by copy engines into the peers' staging windows).
"$root/build/coconetc" verify "$root/samples/megatron_row/megatron_row.cnet" -D B=16 -D S=16 -D H=128 --ranks 1,2,4 --seed 7 --dump "$b/dumps/megatron_row@vec" > "$b/dumps/megatron_row@vec.verify.txt"
# megatron_row with its epilogue and all-gather per chunk (tune(f, gather = pipelined); the default
# takes it only for large products): gen/megatron_row@pipe, run with every megatron_row vector set
# (@odd at 4 ranks has chunks of 36 elements, not whole vectors: it runs once after the last chunk).
cat "$root/samples/megatron_row/megatron_row.sched" > "$b/megatron_row-pipe.sched"
echo 'tune(f, gather = pipelined);' >> "$b/megatron_row-pipe.sched"
"$root/build/coconetc" compile "$root/samples/megatron_row/megatron_row.cnet" --schedule "$b/megatron_row-pipe.sched" -o "$b/gen/megatron_row@pipe" >/dev/null
# megatron_mlp's overlap (2 chunks) the same way: gen/megatron_mlp@pipe.
cat "$root/samples/megatron_mlp/megatron_mlp.sched" > "$b/megatron_mlp-pipe.sched"
echo 'tune(f, gather = pipelined);' >> "$b/megatron_mlp-pipe.sched"
"$root/build/coconetc" compile "$root/samples/megatron_mlp/megatron_mlp.cnet" --schedule "$b/megatron_mlp-pipe.sched" -o "$b/gen/megatron_mlp@pipe" >/dev/null
# allreduces at sizes that take each device-API path at 1, 2 and 4 ranks: f16 two-shot (vector),
# f32 one-shot (scalar tail), bf16 two-shot with a scalar tail at 2 ranks, NCCL fallback at 4.
"$root/build/coconetc" verify "$root/tests/gpu/programs/allreduces.cnet" -D A=300000 -D B=65539 -D C=262150 --ranks 1,2,4 --seed 7 --dump "$b/dumps/allreduces@big" > "$b/dumps/allreduces@big.verify.txt"
du -sh "$b"
