// A device group's launches in run(): its one-shot, two-shot and copy-engine forms, and the NCCL
// calls where the ranks are not all load/store reachable.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

void Emitter::emitDevOneShot(const DevGroup& dg, const std::string& kname, const std::string& rsIn, const std::string& n,
                             const std::string& ind) {
  auto& b = body_;
  const std::string gi = std::to_string(dg.index), name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"";
  const std::string XT = storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype);
  const std::string V = std::to_string(devVecWidth(dg));
  DevLaunch L;
  L.oneShot = true;
  L.rsIn = rsIn;
  L.nSlice = n;
  L.stageWin = "oneWin.win";
  L.stageOff = "dev_->parity[" + gi + "] * (oneWin.bytes / 2)";
  L.llFlag = "proto != coconet_rt::kProtoBarrier ? coconet_rt::nextLLEpoch(dev_->epoch[" + gi + "]) : 0u";
  std::vector<std::string> params, hostArgs;
  std::vector<int> others;
  devSignature(dg, L, params, hostArgs, others);
  // The kernel's form (coconet_rt::kProto*): the LL form by default up to llGroupMaxBytes(P), the
  // LL128 form past that up to ll128GroupMaxBytes(P), either at every size as tune(f, algorithm =
  // ll | ll128) asks, the barrier form otherwise; the LL forms only where the input shares no
  // byte with what the kernel stores (a state's new value written straight into its storage,
  // say). Their pushes split the input by lines, their sums by units of V elements, and a block
  // stores its units as soon as the other ranks' lines arrived, maybe before another block of
  // this rank pushed them; the barrier form pushes and stores the same elements in the same
  // block, its pushes before its barrier.
  const std::string bytes = "static_cast<size_t>(" + n + ") * sizeof(" + XT + ")";
  std::vector<std::string> apartIf;
  auto apart = [&](const std::string& out, const std::string& count, int typed) {
    apartIf.push_back("coconet_rt::disjoint(" + rsIn + ", " + bytes + ", " + out + ", static_cast<size_t>(" + count + ") * sizeof(" +
                      storageType(p_.stages[typed].type.dtype) + "))");
  };
  for (int id : dg.written) apart(var(id), countVar(id), id);
  if (dg.tail()) apart(var(dg.ag), n, dg.ag);
  b << ind << "// one-shot: every rank pushes its whole input to every rank, one barrier (none in the LL forms:\n"
    << ind << "// flags in the data), and computes the whole tensor\n";
  std::string proto;
  const std::string barrierForm = "coconet_rt::kProtoBarrier", llForm = "coconet_rt::kProtoLL", ll128Form = "coconet_rt::kProtoLL128";
  if (dg.algo == "one_shot") {
    proto = barrierForm;
  } else {
    std::string ifApart;
    for (size_t k = 0; k < apartIf.size(); ++k) ifApart += (k ? " &&\n" + ind + "    " : "") + apartIf[k];
    if (!ifApart.empty())
      b << ind << "// the input shares no byte with what the kernel stores\n" << ind << "const bool apart = " << ifApart << ";\n";
    const std::string guard = ifApart.empty() ? "" : "!apart ? " + barrierForm + "\n" + ind + "    : ";
    if (dg.algo == "ll" || dg.algo == "ll128")
      proto = ifApart.empty() ? (dg.algo == "ll" ? llForm : ll128Form)
                              : "apart ? " + (dg.algo == "ll" ? llForm : ll128Form) + " : " + barrierForm;
    else
      proto = guard + bytes + " <= coconet_rt::llGroupMaxBytes(P_) ? " + llForm + "\n" + ind + "    : " + bytes +
              " <= coconet_rt::ll128GroupMaxBytes(P_) ? " + ll128Form + "\n" + ind + "    : " + barrierForm;
  }
  b << ind << "const int proto = " << proto << ";\n"
    << ind << "coconet_rt::Window& oneWin = proto == " << llForm << "      ? dev_->ll[" << gi << "]\n"
    << ind << "                             : proto == " << ll128Form << " ? dev_->ll128[" << gi << "]\n"
    << ind << "                                                                : dev_->oneShot[" << gi
    << "];  // two halves, used in turn\n"
    << ind << "if (proto == " << llForm
    << "      ? coconet_rt::ensureZeroed(oneWin, comm_, stream_, coconet_rt::llWindowBytes(std::max<long long>(" << n
    << ", coconet_rt::kLLMaxBytes / sizeof(" << XT << ")), sizeof(" << XT << "), P_), " << prog << ", " << name << ")\n"
    << ind << "    : proto == " << ll128Form << " ? coconet_rt::ensureZeroed(oneWin, comm_, stream_, coconet_rt::ll128WindowBytes(" << n
    << ", sizeof(" << XT << "), P_), " << prog << ", " << name << ")\n"
    << ind << "    : oneWin.ensure(comm_, stream_, 2 * static_cast<size_t>(P_) * std::max(" << bytes << ", coconet_rt::kOneShotMaxBytes), "
    << prog << ", " << name << "))\n"
    << ind << "  dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << ind << "OutputMap om1 = om;\n"
    << ind << "om1.gbase = 0;  // keys by the whole tensor's index\n";
  emitDevVec(dg, L, others, ind);
  b << ind << "CHECK(coconet_rt::launchDependent(proto == " << llForm << " ? " << kname << "<" << llForm << ">\n"
    << ind << "                                  : proto == " << ll128Form << " ? " << kname << "<" << ll128Form << ">\n"
    << ind << "                                  : " << kname << "<" << barrierForm << ">,\n"
    << ind << "                                  coconet_rt::devBlocks(" << n << " / " << V << "), coconet_rt::kDevThreads, stream_";
  for (const std::string& a : hostArgs) b << ", " << a;
  b << "), " << name << ");\n" << ind << "dev_->parity[" << gi << "] ^= 1;\n";
}

void Emitter::emitAllReduceGroup(const DevGroup& dg) {
  auto& b = body_;
  const std::string name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"", gi = std::to_string(dg.index);
  const int x = p_.stages[dg.rs].operands[0];
  const std::string n = countVar(dg.rs);
  const std::string bytes = "static_cast<size_t>(" + n + ") * sizeof(" + storageType(p_.stages[x].type.dtype) + ")";
  const int mode = oneShotMode(dg);
  const bool two = twoShotObstacle(dg).empty();  // (planDeviceGroups keeps a group with one form or both)
  const std::string kOne = mode >= 0 ? emitDevKernel(dg, true) : "";
  const std::string oneIf = "arOneShot" + gi, twoIf = "arTwoShot" + gi;
  b << "\n  // fused group '" << dg.name << "': " << p_.stages[dg.rs].name << " (allreduce)";
  for (int id : dg.run) b << ", " << p_.stages[id].name;
  b << " as one kernel over NCCL's device API\n  // where every rank is load/store reachable: ";
  if (mode >= 0) b << "one-shot" << (mode ? "" : " up to oneShotMaxBytes(P_) of input") << (two ? ";\n  // else " : "");
  if (two)
    b << "two-shot (the members on this rank's slice of " << n << " / P_ elements, " << p_.stages[dg.run.back()].name
      << "'s slices gathered)" << (dg.algo == "two_shot" ? "" : " up to twoShotGroupMaxBytes(P_)");
  b << ";\n  // else the allreduce, then the members\n"
    << "  // (the same on every rank: all of them ask devReady, a collective, or none)\n"
    << "  const bool " << oneIf << " = ";
  if (mode < 0)
    b << "false;\n";
  else
    b << "!coconet_rt::soloRanks(P_) && " << n << " > 0" << (mode ? "" : " && " + bytes + " <= coconet_rt::oneShotMaxBytes(P_)") << ";\n";
  b << "  const bool " << twoIf << " = ";
  if (!two) {
    b << "false;\n";
  } else {
    b << "!" << oneIf << " && !coconet_rt::soloRanks(P_) && " << n << " > 0 && " << n << " % P_ == 0";
    // an operand read periodically (along the last dimensions) from the slice's first element
    for (size_t k = 0; k < dg.ext.size(); ++k)
      if (dg.acc[k] == Access::Modulo) b << " && (" << n << " / P_) % " << countVar(dg.ext[k]) << " == 0";
    b << (dg.algo == "two_shot" ? "" : " && " + bytes + " <= coconet_rt::twoShotGroupMaxBytes(P_)") << ";\n";
  }
  b << "  if ((" << oneIf << " || " << twoIf << ") && devReady(" << name << ")) {\n";
  emitDevMaps(dg, "    ");
  if (mode >= 0) {
    b << "    if (" << oneIf << ") {\n";
    emitDevOneShot(dg, kOne, var(x), n, "      ");
    b << "    }" << (two ? " else {\n" : "\n");
  } else {
    b << "    {\n";
  }
  if (two) {
    const DevGroup tg = twoShotForm(dg);
    const std::string kTwo = emitDevKernel(tg);
    const int src = agSrc(tg);
    DevLaunch L{var(x), "nSlice", "0", "nSlice"};
    std::vector<std::string> params, hostArgs;
    std::vector<int> others;
    devSignature(tg, L, params, hostArgs, others);
    b << "      // two-shot: every rank pushes slice p (nSlice elements) of its input to rank p; barrier; each sums its\n"
      << "      // slice's slots, computes the members there and publishes its slice of " << p_.stages[src].name << "; barrier; each\n"
      << "      // pulls the other ranks' slices (in rounds over chunks of the slice)\n"
      << "      const long long nSlice = " << n << " / P_;\n"
      << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, " << bytes << ", " << prog << ", " << name << ");\n"
      << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, static_cast<size_t>(nSlice) * sizeof("
      << storageType(p_.stages[src].type.dtype) << "), " << prog << ", " << name << ") || grew)\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      // keys and operands by the tensor's index: this rank's slice starts at element pos * nSlice\n"
      << "      const long long sliceBase = " << g(p_.stages[dg.rs].type.group, "pos") << " * nSlice;\n"
      << "      om.gbase = sliceBase;\n";
    for (int k : others)
      if (dg.acc[static_cast<size_t>(k)] == Access::Linear) b << "      m" << k << ".base += sliceBase;\n";
    emitDevVec(tg, L, others, "      ");
    emitDevLaunch(tg, kTwo, L, hostArgs, "      ");
    b << "    }\n";
  }
  b << "  } else {\n";
  std::vector<int> all{dg.rs};
  all.insert(all.end(), dg.run.begin(), dg.run.end());
  b << fallbackStorage(all, "    ");
  if (auto da = plan_.devAR.find(dg.rs); da != plan_.devAR.end()) {
    emitDeviceAllReduce(da->second);
  } else {
    b << "  if (" << n << " > 0) {\n";
    emitStage(dg.rs);
    b << "  }\n";
  }
  for (int id : dg.run) {
    if (auto it = plan_.runOf.find(id); it != plan_.runOf.end() && it->second.front() != id) continue;
    b << "  if (" << countVar(id) << " > 0) {\n";
    emitStage(id);
    b << "  }\n";
  }
  b << "  }\n";
}

void Emitter::emitDevLaunch(const DevGroup& dg, const std::string& kname, const DevLaunch& L, const std::vector<std::string>& hostArgs,
                            const std::string& ind) {
  auto& b = body_;
  const std::string name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"";
  const std::string gi = std::to_string(dg.index);
  const std::string n = L.nSlice;
  const int V = devVecWidth(dg);
  std::string grid = "coconet_rt::devBlocks(" + n + " / " + std::to_string(V) + ")";  // the same on every rank, whatever `vec`
  // the kernel the launch calls, and a pointer to it (occupancy = auto: the instantiation chosen)
  // (a kernel with a one-rank form is a template: emitDevKernel)
  const bool solo = dg.soloForm();
  const std::string kcall = solo ? kname + "_k" : kname, kptr = solo ? kname + "_k" : "&" + kname;
  if (!dg.copyEngines) {
    // With tune(f, roles = split), in two rounds or more (roles = auto: kRolesAutoRounds) `movers` blocks move the chunks and
    // `workers` compute them (coconet_device.cuh, roleBlocks).
    // one round on one rank: no transfers to overlap, and so no movers (the kernel's one-rank
    // branch computes over gridPart(), which only a grid without movers partitions once)
    b << ind << "const int rounds = coconet_rt::soloRanks(P_) ? 1 : " << devRounds(dg) << ";\n";
    if (dg.splitRoles())
      b << ind << "int movers = rounds >= " << (dg.roles == DevGroup::Roles::Auto ? "coconet_rt::kRolesAutoRounds" : "2") << " ? "
        << (dg.movers > 0 ? std::to_string(dg.movers) : std::string("coconet_rt::kDevMovers")) << " : 0;\n";
    // a flags-pulling tail: the movers' tiles' units (0: fixed parts), and the instantiation of that form
    const bool tiles = flagsPulls(dg);
    if (tiles) b << ind << "const int pulled = coconet_rt::claimedPulls(P_, rounds);\n";
    auto inst = [&](const std::string& args) {  // the instantiation(s) after the one-rank form
      return tiles ? "(pulled > 0 ? &" + kname + "<" + args + ", true> : &" + kname + "<" + args + ", false>)"
                   : "&" + kname + "<" + args + ">";
    };
    const std::string soloTiles = tiles ? ", false" : "";
    if (dg.occupancyByRanks())
      b << ind << "// the one-rank form, or tune(" << dg.name << ", occupancy = auto): blocks per SM by the ranks and the movers\n"
        << ind << "auto* const " << kname << "_k = coconet_rt::soloRanks(P_) ? &" << kname << "<1, true" << soloTiles
        << "> : coconet_rt::devAutoOccupancy(P_, movers) == 2 ? " << inst("2, false") << " : " << inst("1, false") << ";\n";
    else if (solo)
      b << ind << "auto* const " << kname << "_k = coconet_rt::soloRanks(P_) ? &" << kname << "<true" << soloTiles
        << "> : " << inst("false") << ";  // the one-rank form, or not\n";
    // (on one rank no barriers: as many blocks as fit at once; else a barrier per block, every
    // block resident)
    const std::string units = n + " / " + std::to_string(V) + ", ";
    grid = "coconet_rt::barrierBlocks(reinterpret_cast<const void*>(" + kptr + "), " + units + prog + ", " + name + ")";
    const std::string soloGrid = "coconet_rt::soloRanks(P_) ? coconet_rt::soloBlocks(reinterpret_cast<const void*>(" + kptr + "), " +
                                 units + prog + ", " + name + ") : " + grid;
    if (dg.splitRoles())
      b << ind << "const int workers = movers > 0 ? coconet_rt::roleBlocks(reinterpret_cast<const void*>(" << kptr << "), " << n << " / "
        << V << ", movers, " << prog << ", " << name << ") : 0;\n"
        << ind << "const int blocks = movers > 0 ? workers : " << soloGrid << ";  // the blocks that compute\n";
    else
      b << ind << "const int blocks = " << soloGrid << ";\n";
    grid = "blocks";
  }
  if (!dg.folds.empty()) {
    const std::string foldBlocks = foldBlocksVar(dg.first());
    // (by copy engines: a launch per round, each writing its own partial results)
    b << ind << foldBlocks << " = " << grid << (dg.copyEngines ? " * " + ceRounds(dg) : "") << ";\n";
    for (int f : dg.folds)
      b << ind << "red" << f << "_.ensure(static_cast<size_t>(" << foldBlocks << ") * sizeof(" << reduceOpStruct(f) << "::Acc), " << prog
        << ", \"" << p_.stages[f].name << "\");\n";
  }
  if (takesLastBarrier(dg)) {
    if (const DevGroup* next = devSuccessor(dg))
      b << ind << "// the barrier after the last round only where fused group '" << next->name << "' (later in this call) does not run\n"
        << ind << "const int lastBarrier = " << countVar(next->ref) << " > 0 ? 0 : 1;\n";
    else
      b << ind << "const int lastBarrier = 1;  // no device group after this one in the call\n";
  }
  if (dg.copyEngines) {
    emitCopyEngineGroup(dg, kname, grid, L);
  } else {
    // (scheduled while the kernel before it ends: coconet_device.cuh, launchDependent)
    b << ind << "CHECK(coconet_rt::launchDependent(" << kcall << ", " << (dg.splitRoles() ? "movers + blocks" : "blocks")
      << ", coconet_rt::kDevThreads, stream_";
    for (const std::string& a : hostArgs) b << ", " << a;
    b << "), " << name << ");\n";
  }
  if (dg.halves()) b << ind << "dev_->parity[" << gi << "] ^= 1;\n";
}

void Emitter::emitDeviceGroup(const DevGroup& dg) {
  if (dg.arHead) return emitAllReduceGroup(dg);
  auto& b = body_;
  const std::string name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"";
  const std::string gi = std::to_string(dg.index);
  const std::string kname = emitDevKernel(dg);
  const std::string n = countVar(dg.ref);
  DevLaunch L{dg.head() ? var(p_.stages[dg.rs].operands[0]) : "", n, "0", n};
  if (dg.halves()) L.sliceOff = "dev_->parity[" + gi + "] * (dev_->slice[" + gi + "].bytes / 2)";
  std::vector<std::string> params, hostArgs;
  std::vector<int> others;
  devSignature(dg, L, params, hostArgs, others);
  // Host code: the device path, or the NCCL calls.
  b << "\n  // fused group '" << dg.name << "'" << dg.label()
    << ": one kernel over NCCL's device API where every rank is load/store reachable\n"
    << oneShotNote(dg, "  ");
  const std::string foldBlocks = foldBlocksVar(dg.first());
  if (!dg.folds.empty()) {
    b << "  int " << foldBlocks << " = 0;  // its blocks, where they wrote partial results of";
    for (int f : dg.folds) b << " " << p_.stages[f].name;
    b << "\n";
  }
  // (on one rank too where soloDevice(); a slice here empty among uneven ones: the NCCL calls on
  // every rank)
  const TensorType& rt = p_.stages[static_cast<size_t>(dg.ref)].type;
  b << "  if (" << n << " > 0" << (rt.group && rt.layout.kind == Layout::Sliced ? " || uneven_" : "") << ") {\n"
    << "    if (devReady(" << name << (soloDevice() ? ", true" : "") << ")) {\n";
  if (dg.head()) {
    int x = p_.stages[dg.rs].operands[0];
    b << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, static_cast<size_t>(" << countVar(x) << ") * sizeof("
      << storageType(p_.stages[x].type.dtype) << "), " << prog << ", " << name << ");\n";
  }
  if (dg.tail()) {
    const int src = agSrc(dg);
    const std::string bytes = "static_cast<size_t>(" + countVar(src) + ") * sizeof(" + storageType(p_.stages[src].type.dtype) + ")";
    // a tail's window has two halves (256-byte aligned), used in turn
    b << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, " << (dg.halves() ? "2 * ((" + bytes + " + 255) / 256 * 256)" : bytes)
      << ", " << prog << ", " << name << ")" << (dg.head() ? " || grew" : "") << ")\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n";
    if (flagsPulls(dg))
      b << "      // the movers' flags (flagsPulls): zeroed on every rank before any rank counts a chunk in them, when made and\n"
        << "      // when the call's epoch wraps (nextFlagEpoch)\n"
        << "      const bool madeFlags = dev_->flags[" << gi << "].ensure(comm_, stream_, coconet_rt::tailFlagBytes(P_), " << prog << ", "
        << name << ");\n"
        << "      if (madeFlags) dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
        << "      if (coconet_rt::nextFlagEpoch(dev_->flagEpoch[" << gi << "]) || madeFlags) {\n"
        << "        CHECK(cudaMemsetAsync(dev_->flags[" << gi << "].ptr, 0, dev_->flags[" << gi << "].bytes, stream_), " << name << ");\n"
        << "        coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, 0);\n"
        << "        CHECK(cudaGetLastError(), " << name << ");\n"
        << "      }\n";
  } else {
    b << "      if (grew) dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n";
  }
  emitDevMaps(dg, "      ");
  emitDevVec(dg, L, others, "      ");
  // the one-shot form where it is taken (oneShotMode; not on one rank, where the one-rank form runs)
  const int oneShot = oneShotMode(dg);
  if (oneShot >= 0) {
    const int x = p_.stages[dg.rs].operands[0];
    b << "      if (!coconet_rt::soloRanks(P_)"
      << (oneShot ? ""
                  : " && static_cast<size_t>(" + countVar(x) + ") * sizeof(" + storageType(p_.stages[x].type.dtype) +
                        ") <= coconet_rt::oneShotMaxBytes(P_)")
      << ") {\n";
    emitDevOneShot(dg, emitDevKernel(dg, true), var(x), countVar(x), "        ");
    b << "      } else {\n";
  }
  emitDevLaunch(dg, kname, L, hostArgs, "      ");
  if (oneShot >= 0) b << "      }\n";
  b << "    } else {\n      // not every rank is load/store reachable: NCCL calls\n";
  // The fallback: the members as the NCCL path emits them, with workspace for the values the
  // device kernel never stores.
  std::vector<int> all;
  if (dg.head()) all.push_back(dg.rs);
  for (int id : dg.run) all.push_back(id);
  if (dg.tail()) all.push_back(dg.ag);
  b << fallbackStorage(all, "      ");
  for (int id : all) {
    if (auto it = plan_.runOf.find(id); it != plan_.runOf.end() && it->second.front() != id) continue;
    b << "      {\n";
    emitStage(id);
    b << "      }\n";
  }
  b << "    }\n  }\n";
}

// The rounds of a device group by copy engines: tune(f, rounds = R), else by size (ceAutoRounds
// of the reduce-scatter's input, else of the gathered tensor: few rounds, as each costs the copy
// engines a start and the ranks a barrier).
std::string Emitter::ceRounds(const DevGroup& dg) const {
  if (dg.rounds > 0) return std::to_string(dg.rounds);
  const int t = dg.head() ? p_.stages[dg.rs].operands[0] : dg.ag;
  return "coconet_rt::ceAutoRounds(static_cast<long long>(" + countVar(t) + ") * sizeof(" + storageType(p_.stages[t].type.dtype) + "))";
}

// A device group by copy engines, in R rounds over chunks of the slice (chunkLo): the copy
// stream pushes chunk r of each slice of the reduce-scatter's input into its rank's staging
// window (slot `me`; this rank's own slot by a local copy); stream_ runs the preloaded kernel over
// chunk r (barrier, sums, members, publish, barrier; no pulls); then the copy stream pulls chunk r
// of the other ranks' published slices into the gathered tensor, behind chunk r+1's pushes. Folded
// reductions take one partial result per block per round.
void Emitter::emitCopyEngineGroup(const DevGroup& dg, const std::string& kname, const std::string& grid, const DevLaunch& L) {
  auto& b = body_;
  const std::string name = "\"" + dg.name + "\"", prog = "\"" + p_.name + "\"", gi = std::to_string(dg.index);
  const std::string n = L.nSlice, V = std::to_string(devVecWidth(dg));
  DevLaunch round = L;  // round r's launch: chunk [lo, hi), no pulls, its own partial results
  round.lo = "lo";
  round.hi = "hi";
  round.pull = "0";
  round.partOff = "r * blocks";
  round.rsIn.clear();  // the copy stream pushed the chunk: the kernel does not
  std::vector<std::string> params, hostArgs;
  std::vector<int> others;
  devSignature(dg, round, params, hostArgs, others);
  b << "      // copy engines, round by round: pushes of the slices' chunk, the kernel over it, pulls of the chunk\n"
    << "      const int R = " << ceRounds(dg) << ", blocks = " << grid << ";\n"
    << "      auto edge = [&](int c) { return coconet_rt::chunkLo(c, R, " << n << ", " << V << "); };\n";
  std::string XT, ST;
  if (dg.head()) {
    XT = storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype);
    b << "      const std::vector<void*>& stageBases = dev_->stage[" << gi << "].peerBases(P_, stream_, " << prog << ", " << name << ");\n";
  }
  if (dg.tail()) {
    ST = storageType(p_.stages[agSrc(dg)].type.dtype);
    b << "      const std::vector<void*>& sliceBases = dev_->slice[" << gi << "].peerBases(P_, stream_, " << prog << ", " << name << ");\n"
      << "      const size_t sliceOff = " << L.sliceOff << ";\n";
  }
  CopyRounds c;
  c.bounds = "          const long long lo = edge(r), hi = edge(r + 1);\n";
  if (dg.head())
    c.push =
        "          for (int j = 1; j <= P_ && hi > lo; ++j) {  // this rank's own slot last\n"
        "            const int q = (rank_ + j) % P_;\n"
        "            CHECK(cudaMemcpyAsync(static_cast<" +
        XT + "*>(stageBases[q]) + rank_ * " + n + " + lo, " + L.rsIn + " + q * " + n + " + lo, static_cast<size_t>(hi - lo) * sizeof(" +
        XT + "), cudaMemcpyDeviceToDevice, ceCopy_), " + name +
        ");\n"
        "          }\n";
  c.compute = "          " + kname + "<<<blocks, coconet_rt::kDevThreads, 0, stream_>>>(";
  for (size_t k = 0; k < hostArgs.size(); ++k) c.compute += (k ? ", " : "") + hostArgs[k];
  c.compute += ");\n          CHECK(cudaGetLastError(), " + name + ");\n";
  if (dg.tail()) {
    c.pullNote = "chunk r-1 of the other ranks' slices, behind chunk r's pushes";
    c.pullBounds = "          const long long lo = edge(r - 1), hi = edge(r);\n";
    c.pull =
        "          for (int j = 1; j < P_ && hi > lo; ++j) {\n"
        "            const int q = (rank_ + j) % P_;\n"
        "            CHECK(cudaMemcpyAsync(" +
        var(dg.ag) + " + q * " + L.gstride + " + lo, reinterpret_cast<const " + ST +
        "*>(static_cast<const char*>(sliceBases[q]) + sliceOff) + lo, static_cast<size_t>(hi - lo) * sizeof(" + ST +
        "), cudaMemcpyDeviceToDevice, ceCopy_), " + name +
        ");\n"
        "          }\n";
  }
  emitCopyRounds(c, dg.name);
}

// The copy stream's rounds (an allreduce or a device group by copy engines). Per round r < R:
// `bounds` (its extent), `push` (its copies on ceCopy_, which stream_ then waits for), `compute`
// (stream_'s work on it); with `pull`, the copy stream pulls round r-1 once stream_ computed it,
// queued behind round r's copies (`pullBounds`: round r-1's extent). Events ceEv_: [0] the input
// ready, [1] a round's copies done, [3 + r % 2] round r computed (waited before its next
// record), [5] the copy stream done, which stream_ waits for.
void Emitter::emitCopyRounds(const CopyRounds& c, const std::string& stage) {
  auto& b = body_;
  const std::string name = "\"" + stage + "\"";  // the stage that failures name
  b << "      CHECK(cudaEventRecord(ceEv_[0], stream_), " << name << ");\n"
    << "      CHECK(cudaStreamWaitEvent(ceCopy_, ceEv_[0], 0), " << name << ");\n"
    << "      for (int r = 0; r <= R; ++r) {\n"
    << "        if (r < R) {\n"
    << c.bounds << c.push;
  if (!c.push.empty())
    b << tlMark("          ", "ceCopy_", stage + " push", "r") << "          CHECK(cudaEventRecord(ceEv_[1], ceCopy_), " << name << ");\n"
      << "          CHECK(cudaStreamWaitEvent(stream_, ceEv_[1], 0), " << name << ");\n";
  b << c.compute << tlMark("          ", "stream_", stage + " kernel", "r");
  if (!c.pull.empty()) b << "          CHECK(cudaEventRecord(ceEv_[3 + r % 2], stream_), " << name << ");\n";
  b << "        }\n";
  if (!c.pull.empty())
    b << "        if (r >= 1) {  // " << c.pullNote << "\n"
      << c.pullBounds << "          CHECK(cudaStreamWaitEvent(ceCopy_, ceEv_[3 + (r - 1) % 2], 0), " << name << ");\n"
      << c.pull << tlMark("          ", "ceCopy_", stage + " pull", "r - 1") << "        }\n";
  b << "      }\n"
    << "      CHECK(cudaEventRecord(ceEv_[5], ceCopy_), " << name << ");\n"
    << "      CHECK(cudaStreamWaitEvent(stream_, ceEv_[5], 0), " << name << ");\n";
}

}  // namespace coconet::backend::detail
