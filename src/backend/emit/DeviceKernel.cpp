// The kernel of a device group: its signature, its phases (push, sum, members, pull) in rounds,
// roles and forms, and the alignment test of its launch.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

std::string blockReduceEachCode(const std::vector<int>& ids, const std::vector<std::string>& ops, const std::string& ind) {
  std::string decls, opList, shs, accs;
  for (size_t q = 0; q < ids.size(); ++q) {
    const std::string f = std::to_string(ids[q]), sep = q ? ", " : "";
    decls += ind + "__shared__ " + ops[q] + "::Acc sh" + f + "[coconet_rt::kDevThreads];\n";
    opList += sep + ops[q];
    shs += sep + "sh" + f;
    accs += sep + "acc" + f;
  }
  return decls + ind + "coconet_rt::blockReduceEach<" + opList + ">(" + shs + ", " + accs + ");\n";
}

int Emitter::devVecWidth(const DevGroup& dg) const {
  int minBytes = 16;
  if (dg.head()) {
    const Stage& rs = p_.stages[dg.rs];
    minBytes = std::min({minBytes, dtypeBytes(p_.stages[rs.operands[0]].type.dtype), dtypeBytes(rs.type.dtype)});
  }
  if (dg.tail()) minBytes = std::min(minBytes, dtypeBytes(p_.stages[agSrc(dg)].type.dtype));
  for (size_t k = 0; k < dg.ext.size(); ++k)
    if (dg.acc[k] != Access::Scalar && dg.ext[k] != dg.rs) minBytes = std::min(minBytes, dtypeBytes(p_.stages[dg.ext[k]].type.dtype));
  for (int id : dg.written) minBytes = std::min(minBytes, dtypeBytes(p_.stages[id].type.dtype));
  return std::min(8, 16 / minBytes);
}

void Emitter::devSignature(const DevGroup& dg, const DevLaunch& L, std::vector<std::string>& params, std::vector<std::string>& hostArgs,
                           std::vector<int>& others) const {
  auto isAliasedOut = [&](int id) {
    for (auto& st : p_.states)
      if (st.exit == id && plan_.aliased.count(st.entry)) return true;
    return false;
  };
  const std::string gi = std::to_string(dg.index);
  // The operands other than the reduced slice: a<k> and b<k> (base(k): its base, period or element).
  auto addOperands = [&](const std::function<std::string(size_t)>& base) {
    others.clear();
    for (size_t k = 0; k < dg.ext.size(); ++k) {
      if (dg.ext[k] == dg.rs) continue;
      others.push_back(static_cast<int>(k));
      params.push_back("const " + std::string(storageType(p_.stages[dg.ext[k]].type.dtype)) +
                       (plan_.aliased.count(dg.ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
      hostArgs.push_back(var(dg.ext[k]));
      params.push_back("long long b" + std::to_string(k));
      hostArgs.push_back(base(k));
    }
  };
  // The members stored for later stages: out<id> (plusOff: the launch's first element).
  auto addWritten = [&](const std::string& plusOff) {
    for (int id : dg.written) {
      params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + (isAliasedOut(id) ? "* out" : "* __restrict__ out") +
                       std::to_string(id));
      hostArgs.push_back(var(id) + plusOff);
    }
  };
  params = {"ncclDevComm dc"};
  hostArgs = {"dev_->dc.comm"};
  if (L.oneShot) {
    // the one-shot form: the half of the one-shot window in use, the whole input, the other
    // operands over the whole tensor (replicated: their elements at the global index, or
    // periodic, or one element), the gathered output, keys by the global index (om1)
    const std::string XT = storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype);
    params.insert(params.end(), {"ncclWindow_t stageWin", "size_t stageOff", "const " + XT + "* __restrict__ rsIn"});
    hostArgs.insert(hostArgs.end(), {L.stageWin.empty() ? "dev_->oneShot[" + gi + "].win" : L.stageWin, L.stageOff, L.rsIn});
    addWritten("");  // (an allreduce's members, whole)
    addOperands([&](size_t k) { return dg.acc[k] == Access::Modulo ? countVar(dg.ext[k]) : std::string("0"); });
    if (dg.tail()) {
      params.push_back(std::string(storageType(p_.stages[dg.ag].type.dtype)) + "* __restrict__ gathered");
      hostArgs.push_back(var(dg.ag));
    }
    params.insert(params.end(), {"OutputMap om", "long long nSlice"});
    hostArgs.insert(hostArgs.end(), {"om1", L.nSlice});
    runParams(dg.calc, params, hostArgs);
    params.insert(params.end(), {"unsigned long long seed", "int vec", "unsigned llFlag"});
    hostArgs.insert(hostArgs.end(), {"seed", "vec1", L.llFlag});
    return;
  }
  if (dg.head()) {
    int x = p_.stages[dg.rs].operands[0];
    std::string XT = storageType(p_.stages[x].type.dtype);
    params.push_back("ncclWindow_t stageWin");
    hostArgs.push_back("dev_->stage[" + gi + "].win");
    // (a preloaded kernel's slots were filled before it: copy engines copied them)
    if (dg.pushes()) {
      params.push_back("const " + XT + "* __restrict__ rsIn");
      hostArgs.push_back(L.rsIn.empty() ? "nullptr" : L.rsIn);
    }
  }
  if (dg.tail()) {
    params.insert(params.end(), {"ncclWindow_t sliceWin", "size_t sliceOff"});
    hostArgs.insert(hostArgs.end(), {"dev_->slice[" + gi + "].win", L.sliceOff});
  }
  const std::string plusOff = L.off == "0" ? "" : " + " + L.off;
  addWritten(plusOff);
  for (int f : dg.folds) {
    const std::string op = reduceOpStruct(f);
    params.push_back(op + "::Acc* __restrict__ part" + std::to_string(f));
    hostArgs.push_back("static_cast<" + op + "::Acc*>(red" + std::to_string(f) + "_.ptr)" + (L.partOff.empty() ? "" : " + " + L.partOff));
  }
  addOperands([&](size_t k) {
    return dg.acc[k] == Access::Modulo   ? countVar(dg.ext[k])
           : dg.acc[k] == Access::Linear ? "m" + std::to_string(k) + ".base" + plusOff
                                         : "m" + std::to_string(k) + ".base";
  });
  if (dg.tail()) {
    params.push_back(std::string(storageType(p_.stages[dg.ag].type.dtype)) + "* __restrict__ gathered");
    hostArgs.push_back(var(dg.ag));
  }
  params.push_back("OutputMap om");
  hostArgs.push_back("om");
  params.push_back("long long nSlice");
  hostArgs.push_back(L.nSlice);
  params.push_back("long long off");
  hostArgs.push_back(L.off);
  if (dg.tail()) {
    params.push_back("long long gstride");
    hostArgs.push_back(L.gstride);
  }
  runParams(dg.calc, params, hostArgs);
  params.push_back("unsigned long long seed");
  hostArgs.push_back("seed");
  params.push_back("int vec");
  hostArgs.push_back("vec");
  if (dg.preloaded) {
    params.insert(params.end(), {"long long lo", "long long hi", "int pull"});
    hostArgs.insert(hostArgs.end(), {L.lo, L.hi.empty() ? L.nSlice : L.hi, L.pull});
    return;
  }
  // (the host code declares `rounds` and, with roles split, `movers`: emitDeviceGroup)
  params.push_back("int rounds");
  hostArgs.push_back("rounds");
  // A tapered kernel takes its taper as arguments, which fill its table of chunk edges
  // (fillTaperEdges): with the literals ptxas specialized chunkLo into the rounds' loops and
  // spilled (LAMB's `moments` at one block per SM: 0 -> 316-372 bytes).
  if (dg.taper > 0) {
    params.insert(params.end(), {"int taper", "int taperEnds"});
    hostArgs.insert(hostArgs.end(), {std::to_string(dg.taper), dg.taperEnds == DevGroup::TaperEnds::First  ? "coconet_rt::kTaperFirst"
                                                               : dg.taperEnds == DevGroup::TaperEnds::Last ? "coconet_rt::kTaperLast"
                                                                                                           : "coconet_rt::kTaperBoth"});
  }
  if (dg.splitRoles()) {
    params.insert(params.end(), {"int movers", "unsigned* __restrict__ roles"});
    hostArgs.insert(hostArgs.end(),
                    {"movers", "movers > 0 ? dev_->roles.get(stream_, \"" + p_.name + "\", \"" + dg.name + "\") : nullptr"});
  }
  if (takesLastBarrier(dg)) {
    params.push_back("int lastBarrier");
    hostArgs.push_back("lastBarrier");
  }
  if (flagsPulls(dg)) {
    params.insert(params.end(), {"ncclWindow_t flagWin", "size_t flagOff", "unsigned flagEpoch"});
    hostArgs.insert(hostArgs.end(),
                    {"dev_->flags[" + gi + "].win", "(dev_->flagEpoch[" + gi + "] & 1u) * (dev_->flags[" + gi + "].bytes / 2)",
                     "coconet_rt::tailFlags() ? dev_->flagEpoch[" + gi + "] : 0u"});
    params.push_back("int pulled");
    hostArgs.push_back("pulled");
  }
  if (claimsPushes(dg)) {
    params.push_back("int claimed");
    hostArgs.push_back("coconet_rt::claimedPushes(P_, (" + L.nSlice + ") / rounds, movers, " + std::to_string(devVecWidth(dg)) + ")");
  }
  if (dg.chain >= 0) scalarChainSignature(plan_.scalarChains.at(dg.chain), true, params, hostArgs);
}

const Emitter::DevGroup* Emitter::devSuccessor(const DevGroup& dg) const {
  auto it = plan_.devGroups.upper_bound(dg.first());  // the groups in stage order, as run() launches them
  return it == plan_.devGroups.end() ? nullptr : &it->second;
}

// Whether the fused groups' kernels and the scalar chains take the device path on one rank too,
// where their kernels move nothing (emitDevKernel: `solo`): unless a group's kernel is preloaded
// (copy engines fill its slots, in an overlap or by tune(f, algorithm = copy_engines)); then its
// folded partials and the chains stay with the NCCL calls, as every other stage on one rank.
bool Emitter::soloDevice() const {
  for (const auto& [first, g] : plan_.devGroups)
    if (g.copyEngines || g.preloaded) return false;
  return true;
}

// A device group's rounds: tune(f, rounds = K), else by size (devAutoRounds of the
// reduce-scatter's input, else of the gathered tensor).
std::string Emitter::devRounds(const DevGroup& dg) const {
  if (dg.rounds > 0) return std::to_string(dg.rounds);
  const int t = dg.head() ? p_.stages[dg.rs].operands[0] : dg.ag;
  const std::string bytes = "static_cast<long long>(" + countVar(t) + ") * sizeof(" + storageType(p_.stages[t].type.dtype) + ")";
  return dg.epilogueRounds ? "coconet_rt::epilogueAutoRounds(" + bytes + ", P_)" : "coconet_rt::devAutoRounds(" + bytes + ")";
}

std::string Emitter::emitDevKernel(const DevGroup& dg, bool oneShot) {
  DevKernel dk(dg, oneShot);
  dk.head = dg.head();
  dk.tail = dg.tail();
  const bool head = dk.head, tail = dk.tail;
  dk.src = tail ? agSrc(dg) : -1;
  dk.XT = head ? storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype) : "";
  dk.RT = head ? storageType(p_.stages[dg.rs].type.dtype) : "";
  dk.ST = tail ? storageType(p_.stages[dk.src].type.dtype) : "";
  dk.kname = "k_" + std::to_string(dg.first()) + "_" + ident(dg.name) + (oneShot ? "_oneshot" : "_device") + dg.kernelTag;
  dk.V = devVecWidth(dg);
  std::vector<std::string> hostArgs;
  DevLaunch sig{"", "", "0", ""};
  sig.oneShot = oneShot;
  devSignature(dg, sig, dk.params, hostArgs, dk.others);
  dk.rsk = head ? dg.extIndex.at(dg.rs) : -1;
  for (int f : dg.folds) dk.foldOps.push_back(emitReduceOp(f));
  dk.calcSet.insert(dg.calc.begin(), dg.calc.end());
  // The kernel: its comment, signature and setup, compute() (the element code), the chunks'
  // edges, then the one-rank branch, the roles' loops and the rounds.
  devKernelComment(dk);
  devKernelSignature(dk);
  devKernelSetup(dk);
  devKernelCompute(dk);
  devKernelChunks(dk);
  auto& K = kernels_;
  if (dk.solo) {
    K << "  if constexpr (kSolo) {\n"
      << "    // one rank: nothing to move and no barrier; the blocks compute the slice in one pass\n"
      << "    compute(0, nSlice);\n"
      << dk.folds << "    return;\n  }\n";
    if (!dk.roles) K << "  " << dk.barrier;
  }
  // With roles split (movers > 0): the first `movers` blocks move the chunks, the others compute
  // them; they hand chunk r over through the counters roleReady(roles, r) and roleDone(roles, r).
  if (dk.roles) {
    devKernelWorkers(dk);
    devKernelMovers(dk);
  }
  devKernelRounds(dk);
  K << dk.folds << "}\n\n";
  return dk.kname;
}

// Folds element i's value (`operand`: how an operand of the group reads it) into each folded reduction.
std::string Emitter::devFold(const DevKernel& dk, const std::string& ind, const std::function<std::string(int)>& operand) const {
  const DevGroup& dg = dk.dg;
  const std::vector<std::string>& foldOps = dk.foldOps;
  const std::set<int>& calcSet = dk.calcSet;
  std::string t;
  for (size_t q = 0; q < dg.folds.size(); ++q) {
    const int x = p_.stages[dg.folds[q]].operands[0];
    const std::string v = calcSet.count(x) ? "r" + std::to_string(x) : operand(dg.extIndex.at(x));
    t += ind + "acc" + std::to_string(dg.folds[q]) + " = " + foldOps[q] + "::combine(acc" + std::to_string(dg.folds[q]) + ", " +
         foldOps[q] + "::element(static_cast<" + foldOps[q] + "::Acc>(" + v + ")));\n";
  }
  return t;
}

void Emitter::devKernelComment(const DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot, head = dk.head, tail = dk.tail;
  auto& K = kernels_;
  K << "// fused group '" << dg.name << "': ";
  if (head) K << p_.stages[dg.rs].name << (dg.arHead ? " (allreduce), " : " (reduce_scatter), ");
  for (size_t k = 0; k < dg.run.size(); ++k) K << (k ? ", " : "") << p_.stages[dg.run[k]].name;
  if (tail) K << (dg.agIsMember ? " (its slices gathered)" : ", " + p_.stages[dg.ag].name + " (all_gather)");
  K << " as one kernel over NCCL's device API:\n";
  if (oneShot)
    K << "// its one-shot form: push this rank's whole input into slot `me` of every rank's staging area;\n"
      << (dg.arHead ? "// barrier; sum every element's slots and compute the members over the whole tensor.\n"
                    : "// barrier; sum every element's slots and compute the members over the whole tensor into the\n"
                      "// gathered output (every rank computes every slice: nothing to gather).\n")
      << "// kProto: the barrier form, or an LL form (coconet_device.cuh: dev_allreduce_ll, dev_allreduce_ll128):\n"
      << "// lines with flags, no barrier; the sums wait for each line.\n";
  else if (dg.full() && !dg.pushes())
    K << "// (the reduce-scatter's slots of elements [lo, hi) of the slice were copied into this rank's staging\n"
      << "// window before the launch) barrier; sum this rank's slots, compute the members, publish the\n"
      << "// all-gather's slice; barrier; pull the other ranks' slices (unless copy engines do: pull = 0).\n";
  else if (head && dg.preloaded)
    K << "// (the reduce-scatter's slots of elements [lo, hi) of the slice were copied into this rank's staging\n"
      << "// window before the launch) barrier; sum this rank's slots and compute the members; a last barrier\n"
      << "// (every rank has read its slots of [lo, hi) before any rank's next copies into them).\n";
  else if (dg.preloaded)
    K << "// barrier (every rank's earlier pulls of its slice window are done); compute the members and\n"
      << "// publish elements [lo, hi) of the all-gather's slice; barrier; copy engines pull the rest.\n";
  else if (dg.full())
    K << "// push slices to their ranks' staging windows; barrier; sum this rank's slots, compute the members,\n"
      << "// publish the all-gather's slice; barrier; pull the other ranks' slices (in `rounds` pipelined\n"
      << "// rounds over chunks of the slice: coconet_device.cuh, chunkLo).\n";
  else if (head)
    K << "// push slices to their ranks' staging windows; barrier; sum this rank's slots and compute the members\n"
      << "// (in `rounds` pipelined rounds over chunks of the slice: coconet_device.cuh, chunkLo); a last barrier\n"
      << "// (every rank has read its slots before any rank's next call pushes) unless a later group of the call\n"
      << "// runs (lastBarrier = 0: its barriers or exchange order that).\n";
  else
    K << "// compute the members and publish the all-gather's slice (in the half `sliceOff` of the slice window);\n"
      << "// barrier; pull the other ranks' slices (in `rounds` pipelined rounds over chunks of the slice).\n";
  for (int id : dg.run) K << "// " << p_.stages[id].name << " = " << exprTextFor(p_.stages[id]) << "\n";
  for (int f : dg.folds) {
    K << "// and the partial results (one per block) of " << p_.stages[f].name << " = " << reduceKindName(p_.stages[f].reduce) << "("
      << p_.stages[p_.stages[f].operands[0]].name << ")";
    for (int c : dg.calc)
      if (plan_.inlinedInto.count(c) && plan_.inlinedInto.at(c) == f)
        K << ",\n//   " << p_.stages[c].name << " = " << exprTextFor(p_.stages[c]);
    K << "\n";
  }
}

void Emitter::devKernelSignature(DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot;
  auto& K = kernels_;
  // tune(f, occupancy = K): ptxas fits K blocks of kDevThreads per SM (spilling registers if it
  // must), so that a split kernel's roleBlocks finds room for K times the workers; with
  // occupancy = auto a template over K, instantiated for 1 and 2 (the launch picks one). K = 1
  // asks 0 blocks, i.e. nothing (no .minnctapersm), as without the knob: ptxas then chooses the
  // registers as before (an explicit 1 gave LAMB's `apply` 80 registers, one block per SM,
  // where it takes 64 unasked).
  //
  // On one rank (P == 1) the collectives move nothing: a kernel that pushes its input reads the
  // input itself as its one slot, a tail stores its slice into the output alone (the slice window
  // is what peers pull), and no block takes a barrier. That kernel is its own instantiation,
  // kSolo = true, which keeps only the computation (no transfer or barrier code to take registers:
  // Adam's kernel takes 64 so, 114 with them, one block of kDevThreads per SM), and its grid may fill the
  // GPU (coconet_rt::soloBlocks). Not so in a preloaded kernel, whose slots copy engines fill
  // (those groups take the NCCL calls on one rank: soloDevice).
  //
  // A flags-pulling tail's movers pull in claimed tiles or in fixed parts (claimedPulls), each form
  // its own instantiation, kTiles: with both in one kernel LAMB's `apply` (64 registers) spilled
  // 152 / 404 bytes (stores / loads) where the fixed parts alone spill 72 / 192, in the form that 8
  // and 16 rounds take (ptxas for sm_90a).
  const bool solo = dk.solo = !oneShot && dg.soloForm();
  const bool occupancyByRanks = !oneShot && dg.occupancyByRanks();
  const bool tilesForm = !oneShot && flagsPulls(dg);  // (a flags-pulling tail has the one-rank form)
  const std::string tilesParam = tilesForm ? ", bool kTiles" : "";
  if (occupancyByRanks)
    K << (solo ? "template <int kOccupancy, bool kSolo" + tilesParam + ">\n" : "template <int kOccupancy>\n");
  else if (solo)
    K << "template <bool kSolo" + tilesParam + ">\n";
  else if (oneShot)
    K << "template <int kProto>\n";
  K << "__global__ void __launch_bounds__(coconet_rt::kDevThreads"
    << (occupancyByRanks   ? std::string(", kOccupancy > 1 ? kOccupancy : 0")
        : dg.occupancy > 1 ? ", " + std::to_string(dg.occupancy)
                           : "")
    << ") " << dk.kname << "(";
  for (size_t k = 0; k < dk.params.size(); ++k) K << (k ? ", " : "") << dk.params[k];
  // Block b's LSA barrier is barrier b, and the device communicator has kDevBarriers of them: a
  // session reads its barrier's epoch when made and writes it back when destroyed, so only blocks
  // with a barrier may make one. Without roles the grid is at most kDevMaxBlocks (barrierBlocks);
  // with roles the workers (block indices up to the resident limit) take none and leave before it
  // is made.
  const std::string& barrier = dk.barrier =
      "ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};\n";
  const bool roles = dk.roles = !oneShot && !dg.preloaded && dg.splitRoles();
  // (the kernels with a one-rank form make their barrier sessions after its branch)
  K << ") {\n  (void)seed;\n"
    << "  // launched to overlap the previous kernel's end: wait for it, then let the next one be scheduled\n"
    << "  coconet_rt::pdlWait();\n  coconet_rt::pdlLaunchDependents();\n"
    << (roles || solo || oneShot ? "" : "  " + barrier) << "  const int P = dc.lsaSize, me = dc.lsaRank;\n  (void)P;\n  (void)me;\n"
    << "  constexpr int V = " << dk.V << ";\n";
}

void Emitter::devKernelSetup(DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot, head = dk.head, tail = dk.tail, roles = dk.roles;
  const std::string &XT = dk.XT, &ST = dk.ST;
  auto& K = kernels_;
  // The scalar chain computed first (planChainPrologues): the values it makes that the group reads.
  std::set<int>& fromChain = dk.fromChain;
  if (dg.chain >= 0) {
    const ScalarChain& sc = plan_.scalarChains.at(dg.chain);
    fromChain.insert(sc.written.begin(), sc.written.end());
    K << "  // first, in every block: " << sc.name << "\n" << scalarChainCode(sc, true);
  }
  if (!roles)
    K << "  const coconet_rt::Part pt = coconet_rt::gridPart();  // this block's elements\n";
  else
    K << "  // this block's elements: with roles split (movers > 0), part b of the movers' or of the\n"
      << "  // workers' (coconet_device.cuh, roleReady)\n"
      << "  const bool mover = static_cast<int>(blockIdx.x) < movers;\n"
      << "  const coconet_rt::Part pt = movers == 0 ? coconet_rt::gridPart()\n"
      << "                            : mover     ? coconet_rt::Part{static_cast<int>(blockIdx.x), movers}\n"
      << "                                        : coconet_rt::Part{static_cast<int>(blockIdx.x) - movers, static_cast<int>(gridDim.x) - "
         "movers};\n";
  // A flags-pulling tail without folds (whose partial results would be per worker block) has every
  // block compute chunk 0 (joinChunk0): compute() takes its part from `cpt`, the grid's for that
  // chunk, else pt.
  const bool joinChunk0 = dk.joinChunk0 = roles && flagsPulls(dg) && dg.folds.empty();
  if (joinChunk0) K << "  coconet_rt::Part cpt = pt;  // the part compute() takes (the grid's for chunk 0)\n";
  if (oneShot)
    K << "  const auto slots = coconet_rt::oneShotSlots<kProto>(stageWin, stageOff, me, rsIn, nSlice, llFlag);\n"
      << "  // every slice: the elements' indices are the whole tensor's\n"
      << "  constexpr long long off = 0;\n"
      << (tail ? "  " + ST + "* own = gathered;\n" : "");
  else if (head) {
    const std::string stage =
        std::string(dg.pushes() ? "kSolo ? rsIn : " : "") + "static_cast<const " + XT + "*>(ncclGetLocalPointer(stageWin, 0))";
    // A pushing head leaves this rank's own slice in rsIn (coconet_rt::pushSlices) and its sums
    // read it there (OwnSlots); with roles split its movers ask L2 for each chunk of it after
    // pushing the chunk (pushSlicesPrefetchOwn), so that the workers read it from L2.
    if (dg.pushes())
      K << "  const coconet_rt::OwnSlots<" << XT << "> slots{" << stage << ", rsIn + static_cast<long long>(me) * nSlice, me};\n";
    else
      K << "  const " << XT << "* slots = " << stage << ";\n";
  }
  if (tail && !oneShot)
    K << "  " << ST << "* mine = static_cast<" << ST << "*>(ncclGetLocalPointer(sliceWin, sliceOff));\n"
      << "  " << ST << "* own = gathered + static_cast<long long>(me) * gstride + off;\n";
  for (size_t q = 0; q < dg.folds.size(); ++q)
    K << "  " << dk.foldOps[q] << "::Acc acc" << dg.folds[q] << " = " << dk.foldOps[q] << "::init();\n";
}

void Emitter::devKernelCompute(const DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot, head = dk.head, tail = dk.tail, joinChunk0 = dk.joinChunk0;
  const int src = dk.src, rsk = dk.rsk;
  const std::string &XT = dk.XT, &RT = dk.RT, &ST = dk.ST;
  const std::set<int>& fromChain = dk.fromChain;
  auto index = [&](size_t k, const std::string& i) { return fastIndex(dg.acc[k], k, i, "(off + " + i + ")"); };
  auto fold = [&](const std::string& ind, const std::function<std::string(int)>& operand) { return devFold(dk, ind, operand); };
  const std::string publish = dk.solo ? "if (!kSolo) " : "";
  auto& K = kernels_;
  // The element code is made first: the values it hoists (hoist_) go before it.
  Hoisted hoisted;
  HoistScope hoisting(hoist_, hoisted);
  // One element i (the elements after the last whole unit, or every element when not aligned).
  std::ostringstream E;
  E << "  auto elem = [&](long long i) {\n"
    << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + off + i) ^ om.keyXor;\n    (void)key;\n";
  if (head)
    E << "    const " << RT << " srs = coconet_rt::Store<" << RT
      << ">::from(static_cast<double>(coconet_rt::sumSlot(slots, nSlice, P, i)));\n";
  auto scalarOperand = [&](int k) {
    if (k == rsk) return std::string("coconet_rt::to_f(srs)");
    if (fromChain.count(dg.ext[static_cast<size_t>(k)])) return "coconet_rt::to_f(s" + std::to_string(dg.ext[static_cast<size_t>(k)]) + ")";
    return "coconet_rt::to_f(a" + std::to_string(k) + "[" + index(k, "i") + "])";
  };
  E << runMembers(dg.calc, dg.extIndex, dg.written, "    ", scalarOperand, [](int id) {
    return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";";
  }) << fold("    ", scalarOperand);
  if (tail) E << (oneShot ? "" : "    " + publish + "mine[i] = s" + std::to_string(src) + ";\n") << "    own[i] = s" << src << ";\n";
  E << "  };\n";
  // The unit of V elements' members.
  std::vector<int> writtenVec = dg.written;
  const bool srcWritten = tail && std::find(dg.written.begin(), dg.written.end(), src) != dg.written.end();
  if (tail && !srcWritten) writtenVec.push_back(src);
  auto vecOperand = [&](int k) {
    std::string kk = std::to_string(k);
    if (k == rsk) return std::string("coconet_rt::to_f(srs)");
    return dg.acc[k] == Access::Scalar ? "coconet_rt::to_f(x" + kk + ")" : "coconet_rt::to_f(x" + kk + ".v[e])";
  };
  const std::string unitMembers = runMembers(dg.calc, dg.extIndex, writtenVec, "      ", vecOperand,
                                             [](int id) { return "o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";"; });
  hoisting.end();
  K << hoisted.prologue();
  K << "  // Elements [lo, hi) of " << (oneShot ? "the whole tensor" : "this rank's slice") << ": " << (head ? "sum the slots, " : "")
    << "compute the members"
    << (oneShot ? ", store them"
        : tail  ? ", publish"
                : "")
    << ".\n"
    << "  auto compute = [&](long long lo, long long hi) {\n";
  K << E.str() << "  // Units of V elements: vector accesses where aligned, else element by element (the same\n"
    << "  // partition either way), then the elements after the last unit.\n"
    << "  coconet_rt::forUnits<V>(" << (joinChunk0 ? "cpt" : "pt") << ", lo, hi, vec, [&](long long i0) {\n";
  if (head) K << "    float sum[V];\n    coconet_rt::sumSlots<" << XT << ", V>(slots, nSlice, P, i0, sum);\n";
  for (int k : dk.others) {
    std::string kk = std::to_string(k), T = storageType(p_.stages[dg.ext[k]].type.dtype);
    if (dg.acc[k] == Access::Scalar && fromChain.count(dg.ext[k]))
      K << "    const " << T << " x" << kk << " = s" << dg.ext[k] << ";  // made by the chain above\n";
    else if (dg.acc[k] == Access::Scalar)
      K << "    const " << T << " x" << kk << " = a" << kk << "[b" << kk << "];\n";
    else
      K << "    coconet_rt::Vec<" << T << ", V> x" << kk << ";\n    coconet_rt::load_vec" << (plan_.aliased.count(dg.ext[k]) ? "_rw" : "")
        << "(x" << kk << ", a" << kk << " + " << index(k, "i0") << ");\n";
  }
  for (int id : dg.written) K << "    coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
  if (tail && !srcWritten) K << "    coconet_rt::Vec<" << ST << ", V> o" << src << ";\n";
  K << "#pragma unroll\n    for (int e = 0; e < V; ++e) {\n      const long long i = i0 + e;\n"
    << "      const unsigned long long key = static_cast<unsigned long long>(om.gbase + off + i) ^ om.keyXor;\n      (void)key;\n";
  if (head) K << "      const " << RT << " srs = coconet_rt::Store<" << RT << ">::from(static_cast<double>(sum[e]));\n";
  K << unitMembers << fold("      ", vecOperand) << "    }\n";
  for (int id : dg.written) K << "    coconet_rt::store_vec(out" << id << " + i0, o" << id << ");\n";
  if (tail)
    K << (oneShot ? "" : "    " + publish + "coconet_rt::store_vec(mine + i0, o" + std::to_string(src) + ");\n")
      << "    coconet_rt::store_vec(own + i0, o" << src << ");\n";
  K << "  }, elem);\n"
    << "  };\n";
}

void Emitter::devKernelChunks(DevKernel& dk) {
  const DevGroup& dg = dk.dg;
  const bool oneShot = dk.oneShot, head = dk.head;
  auto& K = kernels_;
  // the chunks' edges (chunkLo): alike, or tapered as the schedule says (the kernel's arguments),
  // then from a table the block fills once (fillTaperEdges), up to kTaperTableRounds rounds
  if (!dg.preloaded && !oneShot) {
    if (dg.taper <= 0)
      K << "  auto edge = [&](int c) { return coconet_rt::chunkLo(c, rounds, nSlice, V); };\n";
    else
      K << "  __shared__ long long edgeTab[coconet_rt::kTaperTableRounds + 1];\n"
        << "  coconet_rt::fillTaperEdges(edgeTab, rounds, nSlice, V, taper, taperEnds);\n"
        << "  auto edge = [&](int c) { return rounds <= coconet_rt::kTaperTableRounds ? edgeTab[c] : coconet_rt::chunkLo(c, rounds, "
           "nSlice, V); };\n";
  }
  dk.push = devPushOf(dk, "edge(r), edge(r + 1)", false);
  dk.moversPush = devPushOf(dk, "edge(r), edge(r + 1)", true);
  dk.pull = devPullOf(dk, head ? "edge(r - 2), edge(r - 1)" : "edge(r - 1), edge(r)");
  // a flagsPulls tail's claimed pulls of chunk r
  dk.pullTilesCall = "coconet_rt::pullTiles<" + dk.ST +
                     ", V>(coconet_rt::roleClaimed(roles, r), pulled, sliceWin, sliceOff, P, me, gathered + off, "
                     "gstride, edge(r), edge(r + 1), vec, flagWin, flagOff, flagEpoch, r, &known)";
  // the blocks' partial results of the folded reductions: one tree pass for all of them
  // (blockReduceEach: each value's own tree, the barriers shared), then thread 0 stores them
  std::string& folds = dk.folds;
  if (!dg.folds.empty()) {
    std::string names, stores;
    for (size_t q = 0; q < dg.folds.size(); ++q) {
      const std::string f = std::to_string(dg.folds[q]);
      names += (q ? ", " : "") + p_.stages[dg.folds[q]].name;
      stores += " part" + f + "[pt.index] = acc" + f + ";";
    }
    folds = "  {\n    // this block's partial result" + std::string(dg.folds.size() > 1 ? "s" : "") + " of " + names + "\n" +
            blockReduceEachCode(dg.folds, dk.foldOps, "    ") + "    if (threadIdx.x == 0) {" + stores + " }\n  }\n";
  }
  dk.split = dg.barriers == DevGroup::Barriers::Split;
}

// (never on one rank: the kernel has left by the one-rank branch, reading rsIn as its slot)
// (byMovers: the movers' push, with roles split, which then asks L2 for the own slice's part)
std::string Emitter::devPushOf(const DevKernel& dk, const std::string& range, bool byMovers) const {
  const std::string& XT = dk.XT;
  if (byMovers) return "coconet_rt::pushSlicesPrefetchOwn<" + XT + ", V>(pt, stageWin, 0, P, me, rsIn, nSlice, " + range + ", vec)";
  return "coconet_rt::pushSlices<" + XT + ", V>(pt, stageWin, 0, P, me, rsIn, nSlice, " + range + ", vec)";
}

std::string Emitter::devPullOf(const DevKernel& dk, const std::string& range) const {
  return "coconet_rt::pullSlices<" + dk.ST + ", V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, " + range + ", vec)";
}

void Emitter::emitDevVec(const DevGroup& dg, const DevLaunch& L, const std::vector<int>& others, const std::string& ind) {
  auto& b = body_;
  const int V = devVecWidth(dg);
  const std::string o = L.off, plus = L.off == "0" ? "" : " + " + L.off;
  // (the one-shot form's operands are whole: their bases are 0)
  b << ind << "const bool " << (L.oneShot ? "vec1" : "vec") << " = " << L.nSlice << " % " << V << " == 0";
  if (L.off != "0") b << " && (" << L.off << ") % " << V << " == 0 && (" << L.gstride << ") % " << V << " == 0";
  for (int id : dg.written) b << " &&\n" << ind << "    coconet_rt::aligned16(" << var(id) << ", " << o << ")";
  // (a preloaded head's slots start at the window's base)
  const bool pushes = dg.pushes() || L.oneShot;
  if (dg.tail() || pushes) {
    b << " &&\n" << ind << "    ";
    if (dg.tail()) b << "coconet_rt::aligned16(" << var(dg.ag) << ", 0)" << (pushes ? " && " : "");
    if (pushes) b << "coconet_rt::aligned16(" << L.rsIn << ", 0)";
  }
  for (int k : others) {
    if (dg.acc[k] == Access::Linear)
      b << " &&\n"
        << ind << "    coconet_rt::aligned16(" << var(dg.ext[k]) << ", " << (L.oneShot ? "0" : "m" + std::to_string(k) + ".base" + plus)
        << ")";
    if (dg.acc[k] == Access::Modulo)
      b << " &&\n" << ind << "    " << countVar(dg.ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(dg.ext[k]) << ", 0)";
  }
  b << ";\n";
}

}  // namespace coconet::backend::detail
