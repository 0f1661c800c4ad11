// A device group's kernel's rounds: with roles split, the workers' loop over the chunks and the
// movers'; without, push, compute and pull in rounds with barriers between them. The kernel's
// other phases are in DeviceKernel.cpp.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

namespace {

std::string indent(const std::string& t) {  // two more spaces on every line
  std::string o;
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) o += "  " + line + "\n";
  return o;
}
// A device group's role counters of chunk r: ready (the movers' pushes), done (the workers' results).
std::string ready(const std::string& r) { return "coconet_rt::roleReady(roles, " + r + ")"; }
std::string done(const std::string& r) { return "coconet_rt::roleDone(roles, " + r + ")"; }

}  // namespace

void Emitter::devKernelWorkers(const DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool head = dk.head, tail = dk.tail, joinChunk0 = dk.joinChunk0;
  auto& K = kernels_;
  // (A flagsPulls tail's workers wait for each other's chunk 0 (Emitter.h): safe, as every block
  // of a split grid is resident at once, roleBlocks. Where every block computes chunk 0
  // (joinChunk0) that wait also keeps a later chunk's count from being published before chunk 0
  // is whole: workerDone's last worker of chunk r stands for every chunk before r.)
  if (joinChunk0)
    K << "  if (movers > 0) {\n"
      << "    // chunk 0, which every pull waits for, by every block (the movers have nothing to pull before\n"
      << "    // it); all gridDim.x blocks count it\n"
      << "    cpt = coconet_rt::gridPart();\n"
      << "    compute(edge(0), edge(1));\n"
      << "    cpt = pt;\n"
      << "    coconet_rt::workerDone(roles, 0, gridDim.x, flagWin, flagOff, P, me, flagEpoch);\n"
      << "  }\n";
  K << "  if (movers > 0 && !mover) {\n"
    << "    // a worker: compute chunk r" << (head ? " once every mover counted it ready" : "") << (tail ? "; publish it" : "") << "\n";
  if (joinChunk0)
    K << "    // every pull waits for chunk 0: no worker takes memory bandwidth from it for a later chunk\n"
      << "    coconet_rt::roleWait(" << done("0") << ", gridDim.x);\n";
  K << "    for (int r = " << (joinChunk0 ? 1 : 0) << "; r < rounds; ++r) {\n"
    << (head ? "      coconet_rt::roleWait(" + ready("r") + ", static_cast<unsigned>(movers));\n" : "")
    << "      compute(edge(r), edge(r + 1));\n"
    << (!flagsPulls(dg)
            ? "      coconet_rt::roleSignal(" + done("r") + ");\n"
            : "      coconet_rt::workerDone(roles, r, gridDim.x - movers, flagWin, flagOff, P, me, flagEpoch);\n" +
                  std::string(joinChunk0
                                  ? ""
                                  : "      // every pull waits for chunk 0: no worker takes memory bandwidth from it for a later chunk\n"
                                    "      if (r == 0) coconet_rt::roleWait(" +
                                        done("0") + ", gridDim.x - movers);\n"))
    << "    }\n"
    << indent(dk.folds) << "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n";
}

void Emitter::devKernelMovers(const DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool head = dk.head, joinChunk0 = dk.joinChunk0, split = dk.split;
  const std::string &XT = dk.XT, &barrier = dk.barrier, &sync = dk.sync, &arrive = dk.arrive, &wait = dk.wait;
  const std::string &moversPush = dk.moversPush, &pullTilesCall = dk.pullTilesCall;
  auto pullOf = [&](const std::string& range) { return devPullOf(dk, range); };
  auto pushOf = [&](const std::string& range, bool byMovers) { return devPushOf(dk, range, byMovers); };
  auto& K = kernels_;
  K << "  // the blocks that take barriers: the movers, or every block without roles\n"
    << "  " << barrier << "  if (movers > 0) {\n"
    << "    const unsigned workers = gridDim.x - movers;\n";
  if (dg.full() && split)
    K << "    // push chunk r; once every worker published chunk r-1, arrive; pull chunk r-2 (ready since the\n"
      << "    // last round) while the arrivals land; wait: chunk r is ready\n"
      << "    for (int r = 0; r <= rounds + 1; ++r) {\n"
      << "      if (r < rounds) " << moversPush << ";\n"
      << "      if (r >= 1 && r <= rounds) coconet_rt::roleWait(" << done("r - 1") << ", workers);\n"
      << "      // (every rank pushed chunk r and published chunk r-1 of this part, once all arrived)\n"
      << "      if (r <= rounds) " << arrive << "      if (r >= 2) " << pullOf("edge(r - 2), edge(r - 1)") << ";\n"
      << "      if (r <= rounds) {\n"
      << "        " << wait << "        if (r < rounds) coconet_rt::roleSignal(" << ready("r") << ");\n"
      << "      }\n"
      << "    }\n";
  else if (dg.full())
    K << "    // push chunk r; once every worker published chunk r-1, barrier; chunk r is ready; pull chunk r-1\n"
      << "    for (int r = 0; r <= rounds; ++r) {\n"
      << "      if (r < rounds) " << moversPush << ";\n"
      << "      if (r >= 1) coconet_rt::roleWait(" << done("r - 1") << ", workers);\n"
      << "      // every rank pushed chunk r and published chunk r-1 of this part\n"
      << "      " << sync << "      if (r < rounds) coconet_rt::roleSignal(" << ready("r") << ");\n"
      << "      if (r >= 1) " << pullOf("edge(r - 1), edge(r)") << ";\n"
      << "    }\n";
  else if (head && split)
    K << "    // push chunk r's first half; wait for chunk r-1's arrivals (landing meanwhile): chunk r-1 is\n"
      << "    // ready (the workers start it half a push sooner than after all of chunk r); push the second half, arrive\n"
      << "    for (int r = 0; r < rounds; ++r) {\n"
      << "      const long long mid = edge(r) + (edge(r + 1) - edge(r)) / (2 * V) * V;\n"
      << "      " << pushOf("edge(r), mid", true) << ";\n"
      << "      if (r >= 1) {\n"
      << "        // every rank pushed chunk r-1 of this part\n"
      << "        " << wait << "        coconet_rt::roleSignal(" << ready("r - 1") << ");\n"
      << "      }\n"
      << "      " << pushOf("mid, edge(r + 1)", true) << ";\n"
      << "      " << arrive << "    }\n"
      << "    " << wait << "    coconet_rt::roleSignal(" << ready("rounds - 1") << ");\n"
      << "    // every worker read its slots (each computes the rounds in order: done with the last, done\n"
      << "    // with all); then every rank's (before any rank's next call pushes), unless a later group orders that\n"
      << "    if (lastBarrier) {\n"
      << "      coconet_rt::roleWait(" << done("rounds - 1") << ", workers);\n"
      << "      " << sync << "    }\n";
  else if (head)
    K << "    if (claimed) {\n"
      << "      // push tiles (`claimed` units per thread) of chunk r as claimed; once every mover pushed its tiles,\n"
      << "      // block 0: barrier; chunk r is ready\n"
      << "      for (int r = 0; r < rounds; ++r) {\n"
      << "        coconet_rt::pushTilesPrefetchOwn<" << XT
      << ", V>(coconet_rt::roleClaimed(roles, r), claimed, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);\n"
      << "        coconet_rt::moverPushed(coconet_rt::rolePushed(roles, r));\n"
      << "        if (blockIdx.x == 0) {\n"
      << "          coconet_rt::roleWait(coconet_rt::rolePushed(roles, r), static_cast<unsigned>(movers));\n"
      << "          // every rank pushed chunk r\n"
      << "          " << sync << "          coconet_rt::roleSignal(" << ready("r") << ", static_cast<unsigned>(movers));\n"
      << "        }\n"
      << "      }\n"
      << "    } else {\n"
      << "      // push chunk r; barrier; chunk r is ready\n"
      << "      for (int r = 0; r < rounds; ++r) {\n"
      << "        " << moversPush << ";\n"
      << "        // every rank pushed chunk r of this part\n"
      << "        " << sync << "        coconet_rt::roleSignal(" << ready("r") << ");\n"
      << "      }\n"
      << "    }\n"
      << "    // every worker read its slots (each computes the rounds in order: done with the last, done\n"
      << "    // with all); then every rank's (before any rank's next call pushes), unless a later group orders that\n"
      << "    if (lastBarrier && (!claimed || blockIdx.x == 0)) {\n"
      << "      coconet_rt::roleWait(" << done("rounds - 1") << ", workers);\n"
      << "      " << sync << "    }\n";
  else if (split)
    K << "    // once every worker published chunk r, arrive; pull chunk r-1 while the arrivals land; wait\n"
      << "    for (int r = 0; r <= rounds; ++r) {\n"
      << "      if (r < rounds) {\n"
      << "        coconet_rt::roleWait(" << done("r") << ", workers);\n"
      << "        " << arrive << "      }\n"
      << "      if (r >= 1) " << pullOf("edge(r - 1), edge(r)") << ";\n"
      << "      // every rank published chunk r of this part\n"
      << "      if (r < rounds) " << wait << "    }\n";
  else {
    // once every worker published chunk r, a barrier per round (every tail without flags, and with
    // the tuning table's tail_flags 0 one with them); then pull chunk r
    const std::string barrierPulls =
        "// once every worker published chunk r, barrier; pull chunk r\n"
        "for (int r = 0; r < rounds; ++r) {\n"
        "  coconet_rt::roleWait(" +
        done("r") + (joinChunk0 ? ", r == 0 ? gridDim.x : workers);\n" : ", workers);\n") +
        "  // every rank published chunk r of this part\n"
        "  " +
        sync + "  " + pullOf("edge(r), edge(r + 1)") +
        ";\n"
        "}\n";
    if (flagsPulls(dg))
      K << "    if (flagEpoch) {\n"
        << "      // pull chunk r once every rank counted it (the last worker of each chunk counts it in every\n"
        << "      // rank's flags); `known`: the fewest chunks any rank had counted when last read\n"
        << "      __shared__ unsigned known;\n"
        << "      if (threadIdx.x == 0) known = 0;\n"
        << "      __syncthreads();\n"
        << "      if constexpr (kTiles) {\n"
        << "        // tiles of chunk r as claimed (pullTiles)\n"
        << "        for (int r = 0; r < rounds; ++r) {\n"
        << "          " << pullTilesCall << ";\n"
        << "        }\n"
        << "      } else {\n"
        << "        for (int r = 0; r < rounds; ++r) {\n"
        << "          coconet_rt::needChunk(flagWin, flagOff, P, me, flagEpoch, r, &known);\n"
        << "          " << pullOf("edge(r), edge(r + 1)") << ";\n"
        << "        }\n"
        << "      }\n"
        << "    } else {\n"
        << indent(indent(indent(barrierPulls))) << "    }\n";
    else
      K << indent(indent(barrierPulls));
  }
  K << "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n";
}

void Emitter::devKernelRounds(const DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot, head = dk.head, tail = dk.tail, split = dk.split;
  const std::string &XT = dk.XT, &ST = dk.ST, &barrier = dk.barrier, &sync = dk.sync, &arrive = dk.arrive, &wait = dk.wait;
  const std::string &push = dk.push, &pull = dk.pull;
  auto& K = kernels_;
  if (oneShot)
    K << "  if constexpr (kProto == coconet_rt::kProtoLL) {\n"
      << "    coconet_rt::pushWholeLL<" << XT << ">(pt, stageWin, stageOff, P, me, rsIn, nSlice, llFlag);\n"
      << "  } else if constexpr (kProto == coconet_rt::kProtoLL128) {\n"
      << "    coconet_rt::pushWholeLL128<" << XT << ">(pt, stageWin, stageOff, P, me, rsIn, nSlice, llFlag);\n"
      << "  } else {\n"
      << "    " << barrier << "    coconet_rt::pushWhole<" << XT << ", V>(pt, stageWin, stageOff, P, me, rsIn, nSlice, 0, nSlice, vec);\n"
      << "    // every rank's whole input arrived\n"
      << "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
      << "  }\n"
      << "  compute(0, nSlice);\n";
  else if (dg.preloaded)
    K << "  // every rank's copies of [lo, hi) arrived (they precede its launch)\n"
      << "  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
      << "  compute(lo, hi);\n"
      << "  // every rank published [lo, hi)\n"
      << "  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
      << (tail ? "  if (pull) coconet_rt::pullSlices<" + ST + ", V>(sliceWin, sliceOff, P, me, gathered + off, gstride, lo, hi, vec);\n"
               : "  (void)pull;\n");
  else if (dg.full()) {
    // Round r: push chunk r, compute chunk r-1, pull chunk r-2, one barrier; split (`splitBar`):
    // arrive before the pull and wait after it. Auto decides at run time by the chunk's bytes
    // (measured on Adam's kernel); a light epilogue's two-shot kernel (epilogueRounds: Megatron's,
    // the GEMV's) keeps whole barriers (not measured split), as sync does.
    const bool maySplit = split || (dg.barriers == DevGroup::Barriers::Auto && !dg.epilogueRounds);
    const std::string loopHead = std::string("  for (int r = 0; r <= rounds + 1; ++r) {\n") +
                                 (dg.pushes() ? "    if (r < rounds) " + push + ";\n" : "") +
                                 "    if (r >= 1 && r <= rounds) compute(edge(r - 1), edge(r));\n";
    const std::string certifies =
        !dg.pushes() ? "    // r = 0: every rank's copies arrived (they precede its launch); then every rank published chunk r-1\n"
                     : "    // every rank pushed chunk r and published chunk r-1 of this block's elements\n";
    if (maySplit)
      K << "  // each round's barrier in two phases (arrive, then wait after the pull) or whole\n"
        << "  const bool splitBar = "
        << (split ? std::string("true") : "coconet_rt::devSplitBarriers(nSlice * P * static_cast<long long>(sizeof(" + XT + ")), rounds)")
        << ";\n"
        << loopHead << certifies << "    if (splitBar && r <= rounds) " << arrive
        << "    // pull chunk r-2 (published since the last round): split, while the arrivals land\n"
        << "    if (r >= 2) " << pull << ";\n"
        << "    if (r <= rounds) {\n"
        << "      if (splitBar) " << wait << "      else " << sync << "    }\n  }\n";
    else
      K << loopHead << "    if (r >= 2) " << pull << ";\n" << certifies << "    if (r <= rounds) " << sync << "  }\n";
  } else if (head && split)
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) {\n"
      << "      " << push << ";\n"
      << "      " << arrive << "    }\n"
      << "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
      << "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots, unless\n"
      << "    // a later group of the call orders that: lastBarrier = 0)\n"
      << "    if (r < rounds) " << wait << "    else if (lastBarrier) " << sync << "  }\n";
  else if (head)
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) " << push << ";\n"
      << "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
      << "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots, unless\n"
      << "    // a later group of the call orders that: lastBarrier = 0)\n"
      << "    if (r < rounds || lastBarrier) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
  else if (split)
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) {\n"
      << "      compute(edge(r), edge(r + 1));\n"
      << "      " << arrive << "    }\n"
      << "    if (r >= 1) " << pull << ";\n"
      << "    // every rank published chunk r of this block's elements\n"
      << "    if (r < rounds) " << wait << "  }\n";
  else
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) compute(edge(r), edge(r + 1));\n"
      << "    if (r >= 1) " << pull << ";\n"
      << "    // every rank published chunk r of this block's elements\n"
      << "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
}

}  // namespace coconet::backend::detail
