// ---- coconet_device.cuh, part 1 of 7: sizes and thresholds: blocks, barriers, and the byte limits of each form ----
constexpr int kDevThreads = 512;    // threads per block of every device-collective kernel
constexpr int kDevBarriers = 512;   // LSA barriers of the device communicator (barrierBlocks' most)
// Which form an allreduce takes by its bytes per rank P (coconet_tuning.h has each limit, chosen by
// measurement): the LL form (dev_allreduce_ll: flags in the data, no barrier) up to llMaxBytes(P);
// past that the LL128 form (120 data bytes and a flag in 128) up to ll128MaxBytes(P); one-shot
// (every rank pushes its whole buffer to every rank and sums locally: one barrier) up to
// oneShotMaxBytes(P); two-shot (a reduce-scatter by pushes, then an all-gather by pulls: two
// barriers) up to kTwoShotMaxBytes; NCCL's call; copy engines from copyEngineMinBytes(P). Each
// rank sends (P - 1) times its bytes one-shot against 2 (P - 1) / P times two-shot, so one-shot
// stays ahead for longer on two ranks; LL sends twice the bytes and falls behind as they grow.
// A fused group's one-shot form runs in LL form up to llGroupMaxBytes(P) and in LL128 form up to
// ll128GroupMaxBytes(P); a fused [allreduce, members...] group past its one-shot limit runs its
// two-shot kernel (the members on each rank's slice, the last one's slices gathered) up to
// twoShotGroupMaxBytes(P), else the allreduce by the rules above and then the members' kernel.
// An all_to_all outside pipelines runs as one device kernel (dev_all_to_all) up to
// kAllToAllDeviceMaxBytes per rank, as NCCL's pairs past that.
// The least one-shot and LL windows made, so that a window serves the forms by size without
// growing at the first calls: their limits at most rank counts.
constexpr size_t kOneShotMaxBytes = oneShotMaxBytes(0);
constexpr size_t kLLMaxBytes = llMaxBytes(0);

// Blocks for `units` work items of kDevThreads threads each: all ranks compute the same number.
inline int devBlocks(long long units) {
  long long b = (units + kDevThreads - 1) / kDevThreads;
  return static_cast<int>(b < 1 ? 1 : b > kDevMaxBlocks ? kDevMaxBlocks : b);
}

