// coconet_tuning.h: the constants measurement chose, from coconetc's tuning table sm90 for --arch sm_90a.
// Measured on H100 and H200 (NVLink, 1 to 4 GPUs).
// Every value was chosen by measurement; `why` names the measurement (a row of the benchmark tables
// or the micro-benchmark and GPUs). Rules are tried in order; the first whose conditions hold gives
// the value. `search` lists the values coconetc tune tries for an entry, `read_by` the generated
// code's calls that read it (its cxx name otherwise).
// Written by coconetc; change the table (or tune), not this file.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace coconet_rt {

// The bytes each entry that takes them was read at, while the program's driver asks (the first
// warm-up run of --bench: coconetc tune bounds per-shape values by them). Off, a read costs one
// relaxed load.
struct TableReads {
  std::atomic<bool> on{false};
  std::mutex m;
  std::map<std::string, std::pair<long long, long long>> range;  // entry -> least and most bytes
};
inline TableReads& tableReads() {
  static TableReads r;
  return r;
}
inline void tableRead(const char* entry, long long bytes) {
  TableReads& r = tableReads();
  if (!r.on.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> g(r.m);
  auto it = r.range.emplace(entry, std::make_pair(bytes, bytes)).first;
  it->second.first = bytes < it->second.first ? bytes : it->second.first;
  it->second.second = bytes > it->second.second ? bytes : it->second.second;
}

// one_shot_max_bytes: an allreduce (or a fused group's one-shot form) of at most this many bytes
// per rank runs one-shot (every rank pushes its whole buffer to every rank, one barrier); larger
// ones two-shot.
// Measured: H200: on 4 ranks one-shot ties two-shot at 512 KiB and loses from 1 MiB; on 2 ranks it
// wins up to 8 MiB and loses or ties at 16 MiB.
constexpr size_t oneShotMaxBytes(long long ranks) {
  return ranks == 2 ? size_t{8388608ULL}
         : size_t{524288ULL};
}

// ll_max_bytes: an allreduce of at most this many bytes per rank runs in the LL form (flags in the
// data, no barrier).
// Measured: 2 and 4 H200, each form against the next at 16 KiB .. 8 MiB (LL sends twice the bytes,
// so it falls behind as they grow); more ranks not measured.
constexpr size_t llMaxBytes(long long ranks) {
  return ranks == 4 ? size_t{32768ULL}
         : size_t{262144ULL};
}

// ll128_max_bytes: past the LL limit, an allreduce of at most this many bytes per rank runs in the
// LL128 form (120 data bytes and a flag in 128); 0: never.
// Measured: 2 and 4 H200, LL128 against one-shot at 64 KiB .. 8 MiB; more ranks not measured.
constexpr size_t ll128MaxBytes(long long ranks) {
  return ranks == 2 ? size_t{2097152ULL}
         : ranks == 4 ? size_t{524288ULL}
         : size_t{0ULL};
}

// ll_group_max_bytes: a fused group's one-shot form runs in LL form up to this many bytes per rank;
// 0: never.
// Measured: Megatron's decode group on 2 and 4 H200: LL wins at 64 KiB and loses at 256 KiB on 2
// ranks, no faster at either on 4.
constexpr size_t llGroupMaxBytes(long long ranks) {
  return ranks == 2 ? size_t{65536ULL}
         : size_t{0ULL};
}

// ll128_group_max_bytes: a fused group's one-shot form runs in LL128 form past the LL limit up to
// this many bytes per rank; 0: never.
// Measured: not measured: off until a measurement shows a gain.
constexpr size_t ll128GroupMaxBytes(long long ranks) {
  return size_t{0ULL};
}

// all_to_all_device_max_bytes: an all_to_all outside pipelines of at most this many bytes per rank
// runs as one device kernel, larger ones as NCCL's pairs.
// Measured: 4 H200 against NCCL's pairs: 30% less time at 4 MiB, up to 10% less at 32 MiB, level or
// slower at 64 MiB.
constexpr size_t kAllToAllDeviceMaxBytes = size_t{33554432ULL};

// two_shot_max_bytes: above this many bytes per rank an allreduce left to the backend calls NCCL
// (its ring) instead of the two-shot kernel.
// Measured: 4 H200: equal at 16 MiB, the kernel 8% slower at 64 MiB and 17% at 1 GiB.
constexpr size_t kTwoShotMaxBytes = size_t{16777216ULL};

// two_shot_group_max_bytes: a fused [allreduce, members...] group past its one-shot limit runs its
// two-shot kernel up to this many bytes per rank, else the allreduce and then the members' kernel.
// Measured: Megatron's epilogue (H = 4096, f16): the group's kernel took 6-19% less time than the
// allreduce and the epilogue's kernel, 512 KiB to 128 MiB on 2 H200, 16 to 64 MiB on 4; more ranks
// not measured (the allreduce kernel's own limit).
constexpr size_t twoShotGroupMaxBytes(long long ranks) {
  return ranks <= 4 ? ~size_t{0}
         : size_t{16777216ULL};
}

// copy_engine_min_bytes: from this many bytes per rank an allreduce left to the backend moves its
// bytes by copy engines.
// Measured: benchmark rows allreduce 64 MiB to 1 GiB, 2 GPUs (copy engines ahead from 64 MiB); on 4
// H200 1.24x NCCL's time at 64 MiB, tied at 256 MiB, ahead at 1 GiB (row allreduce 1 GiB, 4 GPUs).
constexpr size_t copyEngineMinBytes(long long ranks) {
  return ranks == 2 ? size_t{67108864ULL}
         : size_t{1073741824ULL};
}

// dev_max_blocks: blocks at most of a device kernel whose blocks take LSA barriers (no more than
// are resident, nor than the communicator's 512 barriers).
// Measured: Megatron's layer at H = 8192 and 12288 on 4 H200: the group's kernel on 64 blocks 8-10%
// slower than on 128.
constexpr int kDevMaxBlocks = 128;

// solo_units: a one-rank device kernel's grid: 0 as many blocks as are resident at once; K one
// block per K * 512 units (1: the flat grid).
// Measured: one H200, device groups at one rank: the flat grid (K = 1) slower than the resident
// grid (docs/architecture.md, the one-rank form); other K not measured.
constexpr long long kSoloUnits = 0LL;

// dev_overlap_blocks: blocks of an overlap's device-group kernel between chunks (tune(f, blocks =
// B) sets fewer); read by the planner.
// Measured: Megatron's layer at H = 8192 and 12288 on 4 H200: kernels per chunk that push
// themselves 16-22% slower than copy engines; the group's kernel on 64 blocks 8-10% slower than on
// 128.
constexpr int kDevOverlapBlocks = 128;

// gather_flops_per_byte: an overlap's epilogue and all-gather run per chunk on two ranks where the
// GEMM's flops per byte crossing NVLink reach this (and the product is 16 MiB or more); read by the
// planner.
// Measured: H200, f16 and bf16, B*S = 8192: per chunk 1.07-1.13x faster than once after the last
// chunk on 2 GPUs (H = 4096..12288: 2048..6144 flops per byte), 0.78-0.95x on 4 GPUs at every H
// (683..2048).
constexpr int kGatherFlopsPerByte = 1700;

// peers_in_flight: peers whose loads a push or a pull issues together, before its stores.
// Measured: one at a time leaves NVLink idle unless very many blocks move; more than 4 doubled the
// registers of LAMB's reduce-scatter kernel (64 -> 128).
constexpr int kPeersInFlight = 4;

// push_tile_units: units per thread of a reduce-scatter head's claimed push tiles (from 3 ranks,
// where a round holds claim_tiles_per_mover tiles per mover); 0: fixed parts (its movers never
// claim).
// Measured: 4 H200, LAMB: 3-5% faster claiming at 2^26 and 2^28 (4 and 8 tiles per mover); 2 H200:
// up to 3% slower, so 2 ranks keep fixed parts.
constexpr int kPushTileUnits = 4;

// claim_tiles_per_mover: the least tiles per mover in a round for a head's movers to claim tiles.
// Measured: 4 H200, LAMB: 2% slower claiming with 2 tiles per mover (2^24, 32 movers), 3-5% faster
// with 4 and 8; 3 not measured.
constexpr long long kClaimTilesPerMover = 4LL;

// pull_tile_units: units per thread of an all-gather tail's claimed pull tiles (from 3 ranks, in at
// most claim_pull_max_rounds rounds, where it pulls by flags); 0: fixed parts (its movers never
// claim).
// Measured: 4 H200, LAMB: tiles of 1 unit 1-3% faster at 2^24 and 2^25 (4 rounds); 2 H200: slower
// at every size.
constexpr int kPullTileUnits = 1;

// claim_pull_max_rounds: the most rounds in which a tail's movers claim pull tiles.
// Measured: 4 H200, LAMB: level or slower claiming at 2^26 and 2^28 (8 and 16 rounds: the fixed
// parts' uneven ends weigh less there than the claims cost).
constexpr int kClaimPullMaxRounds = 4;

// tail_flags: an all-gather tail's movers (with whole barriers) pull chunk r: 1 once every rank's
// flags count it computed, 0 after a barrier per round.
// Measured: 4 H200, LAMB: the step under 1% faster by flags at 2^26 and 2^28, level at 2^24 (with a
// barrier per round LAMB's apply spent 1.2-4.7 us in each round's barrier at 2^24 with every chunk
// computed).
constexpr int kTailFlags = 1;

// dev_movers: movers of a split kernel unless tune(f, movers = K) sets them.
// Measured: 4 H200, Adam at 2^28 parameters: 4976, 3140 and 2582 us with 16, 32 and 64 movers.
constexpr int kDevMovers = 64;

// roles_auto_rounds: tune(f, roles = auto): movers from this many rounds, every block both below.
// Measured: 2 and 4 H200: LAMB's two kernels split 3-5% faster than shared at 2^24 parameters (4
// rounds); Adam's kernel lost split at every size.
constexpr int kRolesAutoRounds = 4;

// split_occupancy: resident blocks per SM a split kernel's launch asks for with tune(f, occupancy =
// auto).
// Measured: 4 H200, LAMB at 2^26 and 2^28 parameters: two blocks per SM 8% faster on 2 GPUs, level
// on 4.
constexpr int splitOccupancy(long long ranks) {
  return ranks <= 2 ? 2
         : 1;
}

// pdl: 1: device-group and device allreduce kernels launch with programmatic dependent launch
// (compute capability 9.0 and up: a kernel's launch and block start overlap the tail of the kernel
// before it); 0: one after another.
// Measured: 4 H200, LAMB and Adam at 2^20 to 2^24 parameters, launched so and not (2026-11-26):
// 2.7-5.8 us a step less for LAMB (apply starts as moments ends), 0.4-1.5 us for Adam.
constexpr int kPdl = 1;

// dev_auto_rounds: a device group's rounds when the schedule does not set them, by the bytes of its
// reduce-scatter's input.
// Measured: 4 H200, Adam, f16 gradients: the fastest of 1, 4 and 16 rounds was 1 up to 2^22
// elements, 4 at 2^24 and 2^26 (16 within 4%), 16 at 2^28.
inline int devAutoRounds(long long bytes) {
  tableRead("dev_auto_rounds", bytes);
  return bytes < 16777216LL ? 1
         : bytes < 33554432LL ? 2
         : bytes < 134217728LL ? 4
         : bytes < 536870912LL ? 8
         : 16;
}

// split_barrier_bytes: tune(f, barriers = auto) splits each round's barrier in a shared full form
// while a round's chunk is under this many bytes.
// Measured: 4 H200, Adam: split 5-7% faster at 2^24 parameters (4 rounds of 8 MiB), 1-2% at 2^26 (8
// of 16 MiB), slower at 2^28 (16 of 32 MiB).
constexpr long long kSplitBarrierBytes = 33554432LL;

// epilogue_rounds_max: the most rounds of a light epilogue's two-shot kernel (dev_auto_rounds
// otherwise).
// Measured: Megatron's epilogue (f16, H = 4096) at 16 to 64 MiB: on 4 H200 4 rounds 5-16% slower
// than 1 or 2; on 2 up to 7% faster.
constexpr int epilogueRoundsMax(long long ranks) {
  return ranks <= 2 ? 16
         : 2;
}

// ce_auto_rounds: rounds of a device group by copy engines when the schedule does not set them, by
// the bytes of its reduce-scatter's input.
// Measured: tools/bench/gpu/micro/ce-allreduce-micro.cu on 4 H200: one round fastest at 16 and 64
// MiB, two at 1 GiB.
inline int ceAutoRounds(long long bytes) {
  tableRead("ce_auto_rounds", bytes);
  return bytes < 67108864LL ? 1
         : 2;
}

// ce_min_copy_bytes: the least bytes of an overlap chunk's copy to each peer where copy engines
// move the chunks (fewer chunks otherwise).
// Measured: 4 H200, ce-allreduce-micro.cu: 164 GB/s per GPU at 4 MiB per peer, 385 at 256 MiB;
// Megatron's row layer slower in chunks of 4 MiB per peer than in half as many, faster in chunks of
// 8.
constexpr long long kCeMinCopyBytes = 8388608LL;

// one_chunk_below_peer_bytes: a copy-engine overlap runs one chunk while this rank's whole block to
// a peer is under this many bytes; 0: never.
// Measured: Megatron's layer on 4 H200: one chunk up to 5% faster or level from 16 to 24 MiB per
// peer, 4 chunks ahead from 32 MiB; on 2 H200 2 chunks beat one (6% at 16 MiB per peer).
constexpr long long oneChunkBelowPeerBytes(long long ranks) {
  return ranks <= 2 ? 0LL
         : 33554432LL;
}

// row_split_min: the least elements of a part where a long row is split over blocks (bytes: the
// rows' input).
// Measured: one H200, softmax over 131072 elements at T = 1 .. 64 rows: split 2-6x faster than a
// block a row (row: norms softmax T=1 H=131072 f16, 1 GPU); coconetc tune on one H100, softmax T=8
// and 64, layer norm T=8 H=65536: no other value faster beyond the runs' spread
// (tools/tune/runs/2026-12-07-1xH100).
inline long long rowSplitMin(long long bytes) {
  tableRead("row_split_min", bytes);
  return 4096LL;
}

// row_max_packs: packs of 16 bytes a row kernel keeps at most a thread, below the kernel's own
// limit (8 packed, 16 not): fewer, more threads a row (bytes: the rows' input).
// Measured: no cap (the kernels' own limits): coconetc tune on one H100, RMSNorm T=8192 H=4096, 2,
// 4 and 8 packs no faster beyond the runs' spread (8: 55.4 us against 57.8 us, spread 9.9%;
// tools/tune/runs/2026-12-07-1xH100/rmsnorm).
inline int rowMaxPacks(long long bytes) {
  tableRead("row_max_packs", bytes);
  return 64;
}

// row_stream: row kernels streaming (x loaded evict-first, y stored .cs): 0 none, 1 every one, 2
// layer norm and RMSNorm where x and y pass L2 (bytes: the rows' input and output).
// Measured: one H200: RMSNorm over 8192 rows of 4096 and 8192 f16 3-6% faster streaming (either
// hint alone was not); softmax level at H = 4096 and 8192, 1.4% slower at 12288 (norms rows
// coconetc_stream and coconetc_nostream, 2026-11-30); coconetc tune on one H100, RMSNorm T=8192
// H=4096: modes 0 and 1 no faster beyond the runs' spread
// (tools/tune/runs/2026-12-07-1xH100/rmsnorm).
inline int rowStream(long long bytes) {
  tableRead("row_stream", bytes);
  return 2;
}

// row_split_blocks: blocks an SM that a split of long rows aims at (bytes: the rows' input).
// Measured: one H200, softmax over 131072 elements: 4 blocks an SM as fast as 2, 8 slower (row:
// norms softmax T=1 H=131072 f16, 1 GPU); coconetc tune on one H100, softmax T=8 and 64, layer norm
// T=8 H=65536: 1, 4 and 8 no faster beyond the runs' spread (tools/tune/runs/2026-12-07-1xH100).
inline int rowSplitBlocks(long long bytes) {
  tableRead("row_split_blocks", bytes);
  return 2;
}

// row_long: 1: every row kernel takes a block a row and reads the row again in each pass (never the
// row in registers, never split over blocks); 0: by the row's length (bytes: the rows' input).
// Measured: one H200, norms rows coconetc and coconetc_long (a block a row everywhere; 2026-11-29):
// layer norm T=8192 f16 85.9 against 108.8 us at H=8192 and 126.5 against 156.1 at H=12288 (rows in
// registers); softmax T=1 H=131072 28.6 against 45.5 us and layer norm T=8 H=65536 19.1 against
// 34.3 us (rows split over blocks); level where rows take a block each anyway (softmax T=1024
// H=131072: 216.4 us both).
inline int rowLong(long long bytes) {
  tableRead("row_long", bytes);
  return 0;
}

// gemv_min_rows: a GEMV of at least this many rows runs the generated kernel, fewer cuBLAS (bytes:
// the matrix).
// Measured: tools/bench/gpu/micro/gemv-micro.cu: with fewer rows a warp per row leaves SMs idle and
// cuBLAS is faster.
inline long long gemvMinRows(long long bytes) {
  tableRead("gemv_min_rows", bytes);
  return 2048LL;
}

// gather_batch_max_rows: a batched GEMM whose weights every rank block re-reads gathers its rows
// first below this many rows per weight.
// Measured: 2 and 4 H200 (X = 2, H = 4096, F = 8192): gathering 17-50% faster up to 128 rows, 3-11%
// slower from 256 (about the ridge point of the f16 tensor cores).
constexpr long long kGatherBatchMaxRows = 256LL;

}  // namespace coconet_rt
