// ---- coconet_device.cuh, part 1 of 7: sizes and thresholds: blocks, barriers, and the byte limits of each form ----
constexpr int kDevThreads = 512;    // threads per block of every device-collective kernel
constexpr int kDevMaxBlocks = 128;  // blocks of a kernel whose blocks take LSA barriers, by default
constexpr int kDevBarriers = 512;   // LSA barriers of the device communicator (barrierBlocks' most)
// An allreduce (or a fused group's one-shot form) of at most oneShotMaxBytes(P) bytes per rank
// runs one-shot: every rank pushes its whole buffer to every rank and sums locally (one
// barrier); larger ones run two-shot: a reduce-scatter by pushes, then an all-gather by pulls
// (two barriers). Each rank sends (P - 1) times its bytes one-shot against 2 (P - 1) / P times
// two-shot: as many on two ranks, where the one-shot form stays ahead for longer. Chosen by
// measurement on H200: on 4 ranks one-shot ties two-shot at 512 KiB and loses from 1 MiB; on 2
// ranks it wins up to 8 MiB and loses or ties at 16 MiB.
constexpr size_t kOneShotMaxBytes = 512 * 1024;
// An allreduce of at most llMaxBytes(P) per rank runs in the LL form (dev_allreduce_ll: flags in
// the data, no barrier) instead, unless the schedule asks for another form; past that, up to
// ll128MaxBytes(P), in the LL128 form (dev_allreduce_ll128: 120 data bytes and a flag in 128):
// LL to 256 KiB and LL128 to 2 MiB on two ranks, LL to 32 KiB and LL128 to 512 KiB on four
// (LL sends twice the bytes, so it falls behind as they grow); chosen by measurement on 2 and 4
// H200, each form against the next at 16 KiB .. 8 MiB (LL128 not timed below 64 KiB). On more
// ranks neither form is measured (LL to kLLMaxBytes, no LL128).
// kLLMaxBytes is also the least LL window made (coconet_rt::llWindowBytes's floor).
constexpr size_t kLLMaxBytes = 256 * 1024;
constexpr size_t llMaxBytes(long long ranks) { return ranks == 4 ? size_t{32} << 10 : kLLMaxBytes; }
constexpr size_t ll128MaxBytes(long long ranks) {
  return ranks == 2 ? size_t(2) << 20 : ranks == 4 ? size_t{512} << 10 : 0;
}
// A fused group's one-shot form runs in LL form (its kernel's kProtoLL instantiation) up to
// llGroupMaxBytes(P) per rank: 64 KiB on two ranks, never on more. Chosen by measurement of
// Megatron's decode group on 2 and 4 H200: LL wins at 64 KiB and loses at 256 KiB on 2 ranks, and
// is no faster at either on 4 (why, where the allreduce alone wins, is not known).
constexpr size_t llGroupMaxBytes(long long ranks) { return ranks == 2 ? size_t{64} << 10 : 0; }
// ... and in LL128 form (kProtoLL128) past that up to ll128GroupMaxBytes(P): not yet measured (none).
constexpr size_t ll128GroupMaxBytes(long long /*ranks*/) { return 0; }
constexpr size_t kOneShotMaxBytesTwoRanks = size_t(8) << 20;
constexpr size_t oneShotMaxBytes(long long ranks) {
  return ranks == 2 ? kOneShotMaxBytesTwoRanks : kOneShotMaxBytes;
}
// An all_to_all outside pipelines of at most this many bytes per rank runs as one device kernel
// (dev_all_to_all); larger ones call NCCL. The kernel's copy out of its window costs a pass over
// the output. Chosen by measurement on 4 H200 against NCCL's pairs: 30% less time at 4 MiB, up
// to 10% less at 32 MiB, level or slower at 64 MiB.
constexpr size_t kAllToAllDeviceMaxBytes = size_t(32) << 20;
// Above this many bytes per rank an allreduce left to the backend calls NCCL: its ring moves
// large buffers faster than the two-shot kernel (measured on 4 H200: equal at 16 MiB, the kernel
// 8% slower at 64 MiB and 17% at 1 GiB).
constexpr size_t kTwoShotMaxBytes = 16 * 1024 * 1024;
// A fused [allreduce, members...] group past its one-shot limit runs its two-shot kernel (the
// members on each rank's slice, the last one's slices gathered) up to twoShotGroupMaxBytes(P) per
// rank, else the allreduce by the rules above and then the members' kernel: at every size on two
// and four ranks, up to kTwoShotMaxBytes on more (the allreduce's own kernel limit; not measured).
// Chosen by measurement of Megatron's epilogue (H = 4096, f16): the group's kernel took 6-19% less
// time than the allreduce and then the epilogue's kernel, 512 KiB to 128 MiB on 2 H200, 16 to
// 64 MiB on 4.
constexpr size_t twoShotGroupMaxBytes(long long ranks) { return ranks <= 4 ? ~size_t{0} : kTwoShotMaxBytes; }
// From this size per rank an allreduce left to the backend moves its bytes by copy engines
// (pushes to the owners of the parts, a sum kernel, pulls of the sums; two rounds unless
// tuned). On 2 GPUs it beats NCCL from 64 MiB (rows "allreduce 64 MiB" to "1 GiB, 2 GPUs"); on 4
// H200 it took 1.24x NCCL's time at 64 MiB, tied at 256 MiB and won at 1 GiB (row "allreduce
// 1 GiB, 4 GPUs"). The two-shot kernel runs up to 16 MiB, NCCL's call between.
inline size_t copyEngineMinBytes(int P) { return P == 2 ? size_t{64} << 20 : size_t{1} << 30; }

// Blocks for `units` work items of kDevThreads threads each: all ranks compute the same number.
inline int devBlocks(long long units) {
  long long b = (units + kDevThreads - 1) / kDevThreads;
  return static_cast<int>(b < 1 ? 1 : b > kDevMaxBlocks ? kDevMaxBlocks : b);
}

