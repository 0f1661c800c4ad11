// Host checks of the device runtime's chunk edges (coconet_device.cuh, chunkLo): every kernel
// that runs in pipelined rounds splits its slice with them, and its movers and workers, and the
// ranks, must agree on the same partition; and of the run-time chunk counts (gatherBatchedRows,
// mergedOverlapChunks); and the tuning table's claimed tiles and pulls by flags (claimedPushes,
// claimedPulls, tailFlags) with the table's and other values; and the row-wise kernels' threads a
// row (rowThreads) and parts a row (rowSplitPartsFor) and its knobs, and when their kernels stream (streamRows);
// and the row kernels' statistics by packs
// (MaxSumT / WelfordT / SumSqT::addPack, exp_for) against exact sums; and the blocks of a sliced
// dimension (SizeMath::blockStart / blockLen). Built with nvcc and run on the build machine (the
// function is __host__ __device__; nothing here touches a GPU): tests/CMakeLists.txt, runtime_host.
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coconet_device.cuh"
#include "coconet_runtime.cuh"

namespace {
int failures = 0;
void expect(bool ok, const char* what, int rounds, int taper, long long m, int unit, int c) {
  if (ok) return;
  if (++failures <= 20)
    std::printf("FAIL %s: rounds %d taper %d m %lld unit %d chunk %d\n", what, rounds, taper, m, unit, c);
}
}  // namespace

int main() {
  using coconet_rt::chunkLo;
  const long long sizes[] = {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4097, 1 << 20, (1 << 20) + 3, 1LL << 28, (1LL << 33) + 5};
  using coconet_rt::kTaperBoth;
  using coconet_rt::kTaperFirst;
  using coconet_rt::kTaperLast;
  for (long long m : sizes)
    for (int unit : {1, 2, 4, 8})
      for (int rounds = 1; rounds <= 40; ++rounds)
        for (int taper = 0; taper <= 8; ++taper)
          for (int ends : {kTaperBoth, kTaperFirst, kTaperLast}) {
            auto edge = [&](int c) { return chunkLo(c, rounds, m, unit, taper, ends); };
            // a partition of [0, m): starts at 0, ends at m, never goes back; every inner edge a
            // whole number of units (the kernels' vector accesses)
            expect(edge(0) == 0, "first edge 0", rounds, taper, m, unit, 0);
            expect(edge(rounds) == m, "last edge m", rounds, taper, m, unit, rounds);
            for (int c = 0; c < rounds; ++c) {
              const long long lo = edge(c), hi = edge(c + 1);
              expect(lo <= hi, "edges in order", rounds, taper, m, unit, c);
              expect(lo == m || lo % unit == 0, "edge on a unit", rounds, taper, m, unit, c);
            }
            // taper 0: the chunks as before tapering existed (ceil(units / rounds) units each)
            if (taper == 0) {
              const long long units = (m + unit - 1) / unit, per = (units + rounds - 1) / rounds;
              for (int c = 0; c <= rounds; ++c) {
                const long long want = std::min(m, c * per * unit);
                expect(edge(c) == want, "taper 0 alike", rounds, taper, m, unit, c);
              }
            }
            // tapered, large slices: chunk c's share of the units is its weight over the weights'
            // sum, to one unit per weight (a weight is a whole number of units), and chunk tf (the
            // first after the first end's ramp, of the largest weight) takes the units left over
            // (fewer than the weights' sum). Weights: 1, 2, ..., 2^(t-1) for the first t chunks
            // where the first end tapers, 2^(t-1), ..., 1 for the last t where the last does, 2^t
            // elsewhere; t = min(taper, rounds / 2) at both ends, min(taper, rounds - 1) at one.
            const bool first = ends & kTaperFirst, last = ends & kTaperLast;
            const int t = std::min(taper, first && last ? rounds / 2 : rounds - 1);
            if (t > 0 && m >= (1 << 20)) {
              std::vector<long long> w(rounds, 1LL << t);
              for (int c = 0; c < t; ++c) {
                if (first) w[c] = 1LL << c;
                if (last) w[rounds - 1 - c] = 1LL << c;
              }
              long long total = 0;
              for (long long x : w) total += x;
              const long long units = (m + unit - 1) / unit;
              for (int c = 0; c < rounds; ++c) {
                const long long got = (std::min(m, edge(c + 1)) - edge(c) + unit - 1) / unit;
                const long double want = static_cast<long double>(units) * w[c] / total;
                const long long tf = first ? t : 0, extra = c == tf ? total : 0;
                expect(got >= want - w[c] - 1 && got <= want + w[c] + extra, "chunk share", rounds, taper, m, unit, c);
                // exactly: `base` units a weight, the `rem` left over on chunk tf (one of the
                // largest weight)
                const long long base = units / total, rem = units - base * total;
                expect(got == base * w[c] + (c == tf ? rem : 0), "the leftover on chunk tf", rounds, taper, m, unit, c);
              }
            }
            // both ends: the default of chunkLo (the partitions built before `ends` existed)
            if (ends == kTaperBoth)
              for (int c = 0; c <= rounds; ++c)
                expect(edge(c) == chunkLo(c, rounds, m, unit, taper), "both ends by default", rounds, taper, m, unit, c);
          }
  // the ends of a tapered pipeline are small: 8 rounds, taper 2 over 2^26 elements in units of 8
  {
    const long long m = 1LL << 26;
    const long long first = chunkLo(1, 8, m, 8, 2), mid = chunkLo(4, 8, m, 8, 2) - chunkLo(3, 8, m, 8, 2);
    const long long last = m - chunkLo(7, 8, m, 8, 2);
    expect(mid >= 4 * first - 40 && mid <= 4 * first + 40, "first chunk a quarter of a middle one", 8, 2, m, 8, 0);
    expect(last == first || last == first + 8 || last == first - 8, "last chunk as the first", 8, 2, m, 8, 7);
    // one end: a reduce-scatter head's last chunk an eighth of a middle one at taper 3, the rest
    // alike; an all-gather tail's first chunk so, and its last a middle one
    const long long mid3 = chunkLo(1, 8, m, 8, 3, kTaperLast) - chunkLo(0, 8, m, 8, 3, kTaperLast);
    const long long last3 = m - chunkLo(7, 8, m, 8, 3, kTaperLast);
    expect(mid3 >= 8 * last3 - 80 && mid3 <= 8 * last3 + 80, "taper last: the last chunk an eighth", 8, 3, m, 8, 7);
    const long long first3 = chunkLo(1, 8, m, 8, 3, kTaperFirst), end3 = m - chunkLo(7, 8, m, 8, 3, kTaperFirst);
    expect(end3 >= 8 * first3 - 80 && end3 <= 8 * first3 + 80, "taper first: the first chunk an eighth", 8, 3, m, 8, 0);
  }
  // A batched matmul whose weight repeats over the outer batches gathers its rows by weight only
  // where its GEMMs are read-bound: MoE decode (16 tokens per expert and rank) yes; training
  // (1024 tokens) no; one outer batch (nothing read twice) no.
  {
    using coconet_rt::gatherBatchedRows;
    expect(gatherBatchedRows(16, 4096, 8192, 4), "gather at decode, 4 ranks", 0, 0, 16, 0, 0);
    expect(gatherBatchedRows(16, 4096, 8192, 2), "gather at decode, 2 ranks", 0, 0, 16, 0, 0);
    expect(!gatherBatchedRows(1024, 4096, 8192, 4), "no gather at training rows", 0, 0, 1024, 0, 0);
    expect(!gatherBatchedRows(255, 64, 64, 4), "no gather where the copies outweigh the weights", 0, 0, 255, 0, 0);
    expect(!gatherBatchedRows(16, 4096, 8192, 1), "no gather with one outer batch", 0, 0, 16, 0, 0);
  }
  // The copy-engine overlap's chunk count (Megatron's layer, f16, 8192 tokens: rows per rank
  // 8192 / P, a row H x 2 bytes): chunks merge where a copy to a peer would be under 8 MiB, and
  // past two ranks one chunk while the block to a peer is under 32 MiB.
  {
    using coconet_rt::mergedOverlapChunks;
    using coconet_rt::overlapChunks;
    const long long MiB = 1LL << 20;
    expect(mergedOverlapChunks(4, 2048, 8192, 4) == 1, "4 ranks, H = 4096 (16 MiB per peer): one chunk", 4, 0, 2048, 4, 0);
    expect(mergedOverlapChunks(4, 1024, 16384, 8) == 1, "8 ranks, 16 MiB per peer: one chunk", 4, 0, 1024, 8, 0);
    expect(mergedOverlapChunks(4, 2048, 16384, 4) == 4, "4 ranks, H = 8192 (32 MiB per peer): 4 chunks", 4, 0, 2048, 4, 0);
    expect(mergedOverlapChunks(4, 2048, 24576, 4) == 4, "4 ranks, H = 12288: 4 chunks", 4, 0, 2048, 4, 0);
    expect(mergedOverlapChunks(4, 2560, 8192, 4) == 1, "4 ranks, 20 MiB per peer: one chunk", 4, 0, 2560, 4, 0);
    expect(mergedOverlapChunks(4, 3072, 8192, 4) == 1, "4 ranks, 24 MiB per peer: one chunk", 4, 0, 3072, 4, 0);
    expect(mergedOverlapChunks(4, 4096, 8192, 4) == 4, "4 ranks, 32 MiB per peer: 4 chunks", 4, 0, 4096, 4, 0);
    expect(mergedOverlapChunks(4, 3072, 8192, 2) == 3, "2 ranks, 24 MiB per peer: 3 chunks of 8 MiB", 4, 0, 3072, 2, 0);
    expect(mergedOverlapChunks(4, 4096, 8192, 2) == 4, "2 ranks, H = 4096 (32 MiB per peer): 4 chunks", 4, 0, 4096, 2, 0);
    expect(mergedOverlapChunks(4, 2048, 8192, 2) == 2, "2 ranks, 16 MiB per peer: 2 chunks of 8 MiB", 4, 0, 2048, 2, 0);
    for (long long P : {2, 3, 4, 8})
      for (long long rows : {1LL, 3LL, 12LL, 1000LL, 4096LL, 6000LL})
        for (long long rowBytes : {2LL, 8192LL, 24576LL, 8 * MiB}) {
          const long long c = mergedOverlapChunks(4, rows, rowBytes, P);
          expect(c >= 1 && c <= 4 && rows % c == 0, "a count that divides the rows", 4, 0, rows, static_cast<int>(P), static_cast<int>(c));
          expect(c <= overlapChunks(4, rows, rowBytes, 0), "never more than without merging", 4, 0, rows, static_cast<int>(P), static_cast<int>(c));
          expect(P > 2 || c == overlapChunks(4, rows, rowBytes, coconet_rt::kCeMinCopyBytes), "two ranks: the 8 MiB rule alone", 4, 0, rows,
                 static_cast<int>(P), static_cast<int>(c));
        }
  }
  {
    // barriers = auto splits each round's barrier while a round's chunk is under 32 MiB
    // (devSplitBarriers): Adam's rounds by size split at 2^24 and 2^26 parameters, not at 2^28.
    using coconet_rt::devAutoRounds;
    using coconet_rt::devSplitBarriers;
    const long long MiB = 1LL << 20;
    for (long long bytes : {2 * MiB, 8 * MiB, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, 2048 * MiB}) {
      const int r = devAutoRounds(bytes);
      expect(devSplitBarriers(bytes, r) == (bytes / r < 32 * MiB), "split under 32 MiB per round (m: the bytes)", r, 0, bytes, 0, 0);
    }
    expect(devSplitBarriers(32 * MiB, 4) && devSplitBarriers(128 * MiB, 8), "2^24 and 2^26 f16 gradients: split", 0, 0, 0, 0, 0);
    expect(!devSplitBarriers(512 * MiB, 16), "2^28 f16 gradients (32 MiB chunks): whole", 0, 0, 0, 0, 0);
    expect(!devSplitBarriers(64 * MiB, 2) && devSplitBarriers(64 * MiB, 3), "the bound is exclusive", 0, 0, 0, 0, 0);
    expect(!devSplitBarriers(1 * MiB, 0), "no rounds: whole", 0, 0, 0, 0, 0);
  }
  {
    // Device allocations in whole 16-byte units (roundUp16): NCCL reads buffers so rounded.
    using coconet_rt::roundUp16;
    expect(roundUp16(0) == 16 && roundUp16(1) == 16 && roundUp16(14) == 16 && roundUp16(16) == 16,
           "up to 16 bytes: one unit", 0, 0, 0, 0, 0);
    expect(roundUp16(17) == 32 && roundUp16(1000) == 1008 && roundUp16(size_t(1) << 33) == (size_t(1) << 33),
           "past 16: the next multiple, multiples kept", 0, 0, 0, 0, 0);
  }
  {
    // The claimed pushes' tile (claimedPushes): the tuning table's push_tile_units from 3 ranks
    // where a round has kClaimTilesPerMover tiles per mover, else the fixed parts (0), always so on
    // 2 ranks; other units (coconetc tune's candidates) the same way; 0 units: the fixed parts.
    using coconet_rt::claimedPushes;
    using coconet_rt::kClaimTilesPerMover;
    using coconet_rt::kPushTileUnits;
    const long long tile8 = static_cast<long long>(coconet_rt::kDevThreads) * 8 * kPushTileUnits;  // (V = 8)
    const long long enough = kClaimTilesPerMover * tile8 * 32;  // 32 movers: 2^21 elements a round
    expect(kPushTileUnits == 4 && enough == (1LL << 21), "claimed pushes: 4 tiles of 16 Ki elements per mover of 32", 0, 0, enough, 0, 0);
    expect(claimedPushes(2, 1LL << 22, 32, 8) == 0 && claimedPushes(4, 1LL << 22, 32, 8) == kPushTileUnits &&
               claimedPushes(8, enough, 32, 8) == kPushTileUnits,
           "claimed pushes: fixed parts on 2 ranks, tiles from 3 with rounds of enough tiles", 0, 0, 0, 0, 0);
    expect(claimedPushes(4, enough - 1, 32, 8) == 0 && claimedPushes(4, 1LL << 20, 32, 8) == 0,
           "claimed pushes: fixed parts below kClaimTilesPerMover tiles per mover", 0, 0, 0, 0, 0);
    expect(claimedPushes(4, enough / 2, 16, 8) == kPushTileUnits && claimedPushes(4, enough / 2, 32, 4) == kPushTileUnits &&
               claimedPushes(4, enough / 2, 32, 8) == 0,
           "claimed pushes: the tiles per mover by the movers and the vector width", 0, 0, 0, 0, 0);
    expect(claimedPushes(4, 1LL << 22, 32, 8, 0) == 0 && claimedPushes(8, 1LL << 30, 32, 8, 0) == 0,
           "claimed pushes with 0 units: fixed parts at any size", 0, 0, 0, 0, 0);
    expect(claimedPushes(4, enough / 2, 32, 8, 2) == 2 && claimedPushes(4, enough / 2 - 1, 32, 8, 2) == 0 &&
               claimedPushes(4, enough * 2, 32, 8, 8) == 8 && claimedPushes(4, enough, 32, 8, 8) == 0 &&
               claimedPushes(2, 1LL << 30, 32, 8, 8) == 0,
           "claimed pushes with other units: their tiles' count per mover, from 3 ranks", 0, 0, 0, 0, 0);
    // A tail's claimed pulls (claimedPulls): the table's pull_tile_units from 3 ranks in at most
    // kClaimPullMaxRounds rounds, else the fixed parts; other units the same way; 0: the fixed parts.
    using coconet_rt::claimedPulls;
    using coconet_rt::kClaimPullMaxRounds;
    using coconet_rt::kPullTileUnits;
    expect(kPullTileUnits > 0 && claimedPulls(4, kClaimPullMaxRounds) == kPullTileUnits && claimedPulls(8, 1) == kPullTileUnits &&
               claimedPulls(3, 2) == kPullTileUnits,
           "claimed pulls: tiles from 3 ranks in few rounds", 0, 0, 0, 0, 0);
    expect(claimedPulls(2, 4) == 0 && claimedPulls(4, kClaimPullMaxRounds + 1) == 0 && claimedPulls(4, 16) == 0,
           "claimed pulls: fixed parts on 2 ranks and in more rounds", 0, 0, 0, 0, 0);
    expect(claimedPulls(4, 4, 0) == 0 && claimedPulls(4, 1, 2) == 2 && claimedPulls(2, 1, 2) == 0 &&
               claimedPulls(4, kClaimPullMaxRounds + 1, 2) == 0,
           "claimed pulls with 0 and 2 units", 0, 0, 0, 0, 0);
    // A tail's pulls by flags (tailFlags): the table's tail_flags.
    expect(coconet_rt::tailFlags() == (coconet_rt::kTailFlags == 1) && coconet_rt::kTailFlags == 1, "tailFlags: the table's 1, flags",
           0, 0, 0, 0, 0);
  }
  {
    // A tail's flags' epochs: 1, 2, ... from 0, never 0; zeroed flags where the epoch wraps.
    using coconet_rt::nextFlagEpoch;
    unsigned e = 0;
    const bool first = nextFlagEpoch(e);
    expect(!first && e == 1, "nextFlagEpoch: 0 -> 1, no zeroing", 0, 0, 0, 0, static_cast<int>(e));
    e = 0xfffffffeu;
    const bool last = nextFlagEpoch(e);
    expect(!last && e == 0xffffffffu, "nextFlagEpoch: 2^32 - 2 -> 2^32 - 1, no zeroing", 0, 0, 0, 0, static_cast<int>(e));
    const bool wrapped = nextFlagEpoch(e);
    expect(wrapped && e == 1, "nextFlagEpoch: 2^32 - 1 -> 1, zeroing", 0, 0, 0, 0, static_cast<int>(e));
    const bool after = nextFlagEpoch(e);
    expect(!after && e == 2, "nextFlagEpoch: 1 -> 2 after the wrap, no zeroing", 0, 0, 0, 0, static_cast<int>(e));
  }
  {
    // Row-wise kernels: threads a row, the fewest (a power of two up to 128, then a multiple of
    // 32 up to 512) that keep the row's packs with at most perThread a thread; 0 (the
    // one-block-a-row kernel) past that; the knobs.
    using coconet_rt::rowThreads;
    const struct { long long units; int per, want; } cases[] = {
        {1, 8, 1},      {8, 8, 1},      {9, 8, 2},      {128, 8, 16},    {512, 8, 64},   {513, 8, 128},
        {1024, 8, 128}, {1025, 8, 160}, {1536, 8, 192}, {2560, 8, 320},  {3072, 8, 384}, {4096, 8, 512},
        {4097, 8, 0},   {1002, 16, 64}, {2050, 16, 160}, {8192, 16, 512}, {8193, 16, 0}};
    for (auto& c : cases)
      expect(rowThreads(c.units, c.per) == c.want, "rowThreads", c.per, 0, c.units, 0, rowThreads(c.units, c.per));
    expect(rowThreads(512, 8, 2) == 256, "rowThreads with a cap of 2 packs", 8, 0, 512, 0, rowThreads(512, 8, 2));
    expect(rowThreads(512, 8, 20) == 64, "rowThreads with a cap above perThread", 8, 0, 512, 0, rowThreads(512, 8, 20));
    expect(rowThreads(512, 8, coconet_rt::rowMaxPacks(1024)) == 64, "rowThreads with the table's cap", 8, 0, 512, 0,
           rowThreads(512, 8, coconet_rt::rowMaxPacks(1024)));
    expect(rowThreads(8, 8, INT_MAX, 1) == 0 && rowThreads(4096, 8, 2, 1) == 0, "rowThreads with row_long 1: 0 for every row", 8, 0, 8,
           0, rowThreads(8, 8, INT_MAX, 1));
    expect(rowThreads(8, 8, INT_MAX, 0) == 1 && rowThreads(8, 8, INT_MAX, coconet_rt::rowLong(1024)) == 1,
           "rowThreads with row_long 0 (the table's)", 8, 0, 8, 0, rowThreads(8, 8, INT_MAX, coconet_rt::rowLong(1024)));
    // Rows split over blocks: only rows fewer than perSm blocks an SM, enough parts for about
    // that many, parts of at least minPart (4096) elements; 1 (a block a row) otherwise. With the
    // table's row_long 1 rowSplitParts never splits, before asking the device.
    using coconet_rt::rowSplitPartsFor;
    const struct { long long rows, n; int sms, perSm; long long want; } splits[] = {
        {1, 262144, 132, 2, 64},    {3, 20000, 132, 2, 5},    {2, 40000, 132, 2, 10},  {8, 131072, 132, 2, 32},
        {131, 1 << 20, 132, 2, 3},  {132, 1 << 20, 132, 2, 2}, {263, 1 << 20, 132, 2, 2}, {264, 1 << 20, 132, 2, 1},
        {1, 4096, 132, 2, 1},       {1, 4097, 132, 2, 2},      {0, 4096, 132, 2, 1},     {64, 131072, 132, 2, 5},
        {64, 131072, 132, 4, 9},    {64, 131072, 132, 8, 17},  {1024, 131072, 132, 8, 2}, {1056, 131072, 132, 8, 1}};
    for (auto& c : splits)
      expect(rowSplitPartsFor(c.rows, c.n, c.sms, c.perSm, 4096) == c.want, "rowSplitPartsFor", c.sms, c.perSm, c.rows,
             static_cast<int>(c.n), static_cast<int>(rowSplitPartsFor(c.rows, c.n, c.sms, c.perSm, 4096)));
    const long long tableParts = rowSplitPartsFor(8, 131072, 132, coconet_rt::rowSplitBlocks(1 << 21), coconet_rt::rowSplitMin(1 << 21));
    expect(tableParts == 32, "rowSplitPartsFor with the table's blocks an SM and least part", 132, 0, 8, 131072,
           static_cast<int>(tableParts));
    expect(coconet_rt::rowSplitParts(1, 1 << 20, 1 << 21, "p", "s", 1) == 1, "rowSplitParts with row_long 1", 0, 0, 0, 0, 0);
    expect(coconet_rt::rowLong(1 << 21) == 0, "row_long: 0 in the table", 0, 0, 0, 0, 0);
    // Streaming rows: by the table's mode 2, a kernel that does not stream by default (softmax)
    // never does, before asking the device for its L2; modes 1 and 0 decide for every kernel and
    // size.
    using coconet_rt::streamRows;
    expect(!streamRows(false, 1LL << 40, "p", "s"), "streamRows of a kernel that does not stream by default", 0, 0, 0, 0, 0);
    expect(streamRows(false, 0, "p", "s", 1) && streamRows(true, 1, "p", "s", 1), "streamRows in mode 1", 0, 0, 0, 0, 0);
    expect(!streamRows(true, 1LL << 40, "p", "s", 0), "streamRows in mode 0", 0, 0, 0, 0, 0);
    alignas(16) static char buf[64];
    expect(coconet_rt::packAligned(buf, 16) && !coconet_rt::packAligned(buf + 2, 16) && coconet_rt::packAligned(buf + 2, 2) &&
               coconet_rt::packAligned(nullptr, 16),
           "packAligned", 0, 0, 0, 0, 0);
  }
  {
    // The row kernels' statistics by packs (MaxSumT / WelfordT / SumSqT::addPack): a row of 40000
    // in packs of 8 over 256 "threads" (thread t packs t, t + 256, ...), the threads' states
    // combined in a tree, against the exact statistics in double (the reference's). Softmax's
    // state with maxima rising pack by pack, -inf elements and a pack of -inf only; Welford's
    // over values of mean 1000 and spread 1 (a naive sum of squares loses the variance there).
    constexpr int n = 40000, V = 8, T = 256;
    std::vector<float> x(n);
    unsigned long long r = 12345;
    auto next = [&r] { r = r * 6364136223846793005ULL + 1442695040888963407ULL; return static_cast<double>(r >> 11) / 9007199254740992.0; };
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(8.0 * next() - 4.0 + i * 1e-4);  // the maximum keeps rising
    for (int i = 0; i < V; ++i) x[800 + i] = -INFINITY;                                     // a pack of -inf only
    x[17] = -INFINITY;
    auto byThreads = [&](auto st) {
      std::vector<decltype(st)> th(T, st);
      for (int u = 0; u < n / V; ++u) {
        float xs[V];
        for (int j = 0; j < V; ++j) xs[j] = x[u * V + j];
        th[u % T].template addPack<float>(xs);
      }
      for (int w = T / 2; w > 0; w /= 2)
        for (int t = 0; t < w; ++t) th[t] = decltype(st)::combine(th[t], th[t + w]);
      return th[0];
    };
    using MS = coconet_rt::MaxSumT<float>;
    const MS ms = byThreads(MS{});
    double m = -INFINITY, sum = 0;
    for (float v : x) m = std::max(m, static_cast<double>(v));
    for (float v : x) sum += std::exp(static_cast<double>(v) - m);
    expect(ms.m == static_cast<float>(m) && std::fabs(ms.s - sum) <= 2e-6 * sum, "MaxSumT::addPack against the exact sum", 0, 0,
           n, static_cast<int>(1e9 * std::fabs(ms.s - sum) / sum), 0);
    MS allInf;
    const float infs[V] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    allInf.addPack<float>(infs);
    expect(allInf.m == -INFINITY && allInf.s == 0, "MaxSumT::addPack of -inf only leaves the state", 0, 0, 0, 0, 0);
    // exp_for of a 16-bit result (exp2f of x log2 e) within 5e-6 of exp over the range softmax meets
    double worst = 0;
    for (float v = -87.0f; v <= 0.0f; v += 0.01f)
      worst = std::max(worst, std::fabs(coconet_rt::exp_for<short>(v) - std::exp(static_cast<double>(v))) / std::exp(static_cast<double>(v)));
    expect(worst < 5e-6, "exp_for<16-bit> within 5e-6 of exp", 0, 0, 0, static_cast<int>(1e9 * worst), 0);
    for (int i = 0; i < n; ++i) x[i] = static_cast<float>(1000.0 + (2.0 * next() - 1.0) * 1.7320508);
    using W = coconet_rt::WelfordT<float>;
    const W w = byThreads(W{});
    double mean = 0, m2 = 0;
    for (float v : x) mean += v;
    mean /= n;
    for (float v : x) m2 += (v - mean) * (v - mean);
    expect(w.n == n && std::fabs(w.mean - mean) <= 1e-6 * mean && std::fabs(w.m2 - m2) <= 1e-4 * m2,
           "WelfordT::addPack against the exact mean and squared deviations", 0, 0, n, static_cast<int>(1e6 * std::fabs(w.m2 - m2) / m2), 0);
    using Q = coconet_rt::SumSqT<float>;
    const Q q = byThreads(Q{});
    double sq = 0;
    for (float v : x) sq += static_cast<double>(v) * v;
    expect(std::fabs(q.s - sq) <= 1e-6 * sq, "SumSqT::addPack against the exact sum of squares", 0, 0, n, 0, 0);
  }
  // The blocks of a sliced dimension (SizeMath::blockStart/blockLen, the generated code's local
  // shapes and offsets): torch.chunk's cut, as ir::sliceBlock: ceil(n / parts) from rank 0 on,
  // the blocks in order, covering [0, n), only the last ones shorter (or empty).
  {
    const coconet_rt::SizeMath S{"blocks"};
    for (long long n : {0LL, 1LL, 2LL, 5LL, 7LL, 9LL, 33LL, 1001LL, 50257LL, 4096LL, (1LL << 40) + 7})
      for (long long parts = 1; parts <= 70; ++parts) {
        const long long b = (n + parts - 1) / parts;
        long long at = 0;
        for (long long pos = 0; pos < parts; ++pos) {
          const long long start = S.blockStart(n, parts, pos), len = S.blockLen(n, parts, pos);
          const long long wantStart = pos * b < n ? pos * b : n, wantLen = n - wantStart < b ? n - wantStart : b;
          expect(start == wantStart && len == wantLen, "blockStart/blockLen against torch.chunk's cut", static_cast<int>(parts), 0, n,
                 static_cast<int>(pos), static_cast<int>(len));
          expect(start == at && len >= 0 && (len == b || start + len == n), "the blocks in order, only the last ones short",
                 static_cast<int>(parts), 0, n, static_cast<int>(pos), static_cast<int>(len));
          at = start + len;
        }
        expect(at == n, "the blocks cover the dimension", static_cast<int>(parts), 0, n, 0, 0);
        expect(n % parts != 0 || S.blockLen(n, parts, parts - 1) == n / parts, "even sizes: n / parts each", static_cast<int>(parts), 0, n,
               0, 0);
      }
  }
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("chunk edges: all checks passed\n");
  return 0;
}
