// Collectives over NCCL's device API: fused reduce-scatter / element-wise / all-gather groups,
// allreduces, sends, single-thread scalar chains and reductions folded into a group's kernel.
#include <tuple>

#include "backend/Emitter.h"
#include "backend/KnobUse.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

namespace {
// Reductions `ids` (operator structs `ops`) over the block in one tree pass: a shared array per
// value, then one coconet_rt::blockReduceEach call on the accumulators acc<id>, each line
// indented by `ind`.
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
}  // namespace

bool Emitter::analyzeDevGroup(const std::vector<int>& m, DevGroup& dg, bool partial) const {
  if (m.size() < 2) return false;
  auto worldLevel = [&](const TensorType& t) { return !t.group || t.group->depth == 0; };
  auto slice0 = [&](const TensorType& t) { return t.group && t.layout.kind == Layout::Sliced && t.layout.dim == 0 && worldLevel(t); };
  dg.arHead = partial && p_.stages[m.front()].kind == StageKind::AllReduce;
  const bool head = dg.arHead || p_.stages[m.front()].kind == StageKind::ReduceScatter;
  const bool tail = !dg.arHead && p_.stages[m.back()].kind == StageKind::AllGather;
  if (!(head && tail) && !(partial && (head || tail))) return false;
  dg.rs = head ? m.front() : -1;
  dg.ag = tail ? m.back() : -1;
  if (head) {
    const Stage& rs = p_.stages[dg.rs];
    const bool replicated = worldLevel(rs.type) && rs.type.layout.kind == Layout::Replicated;
    if (rs.op != ReduceOp::Sum || !(rs.type.dtype == DType::F16 || rs.type.dtype == DType::BF16 || rs.type.dtype == DType::F32) ||
        !(dg.arHead ? replicated : slice0(rs.type)))
      return false;
  }
  if (tail) {
    const Stage& ag = p_.stages[dg.ag];
    if (!worldLevel(ag.type) || !slice0(p_.stages[ag.operands[0]].type)) return false;
  }
  dg.ref = head ? dg.rs : p_.stages[dg.ag].operands[0];
  const TensorType& rt = p_.stages[dg.ref].type;
  for (size_t k = head ? 1 : 0; k < m.size() - (tail ? 1 : 0); ++k) {
    const Stage& c = p_.stages[m[k]];
    if (c.kind != StageKind::Compute || c.type.shape != rt.shape || c.type.layout != rt.layout || c.type.group != rt.group) return false;
    dg.run.push_back(m[k]);
  }
  if (dg.run.empty()) return false;
  if (tail && std::find(dg.run.begin(), dg.run.end(), p_.stages[dg.ag].operands[0]) == dg.run.end()) return false;
  std::set<int> members(m.begin(), m.end());
  if (head && isUsed(p_, dg.rs, members)) return false;  // the reduced slice is needed outside: keep NCCL
  std::set<int> inRun(dg.run.begin(), dg.run.end());
  for (int id : dg.run)
    for (int o : p_.stages[id].operands)
      if (!inRun.count(o) && !dg.extIndex.count(o)) {
        dg.extIndex[o] = static_cast<int>(dg.ext.size());
        dg.ext.push_back(o);
      }
  for (int o : dg.ext) {
    dg.acc.push_back(o == dg.rs ? Access::Linear : accessOf(o, p_.stages[dg.ref]));
    if (dg.acc.back() == Access::Mapped) return false;
  }
  std::set<int> inside = inRun;  // the all-gather reads its slice from the window instead
  if (tail) inside.insert(dg.ag);
  for (int id : dg.run)
    if (neededOutside(id, inside)) dg.written.push_back(id);
  dg.calc = dg.run;
  return true;
}

void Emitter::markFallbackOnly(const std::vector<int>& m, const DevGroup& dg) {
  for (int id : m)
    if (id != dg.ag && !direct_.count(id) && !unstored_.count(id) && !bagOf_.count(id) &&
        std::find(dg.written.begin(), dg.written.end(), id) == dg.written.end())
      devFallbackOnly_.insert(id);
}

std::string Emitter::fallbackStorage(const std::vector<int>& ids, const std::string& ind) const {
  std::string text;
  for (int id : ids)
    if (devFallbackOnly_.count(id))
      text += ind + bufferEnsure(id) + ind + var(id) + " = static_cast<" + storageType(p_.stages[id].type.dtype) + "*>(buf" +
              std::to_string(id) + "_.ptr);\n";
  return text;
}

const Knobs& Emitter::groupKnobs(const Stage& s) const {
  static const Knobs none;
  for (auto& f : p_.fused)
    if (f.name == s.fusedInto) return f.knobs;
  return none;
}

bool Emitter::ncclAsked(const Knobs& knobs) {
  const auto algo = knobs.word(Knob::Algorithm);
  return algo && (*algo == "nccl" || *algo == "ring");
}

void Emitter::readRoundKnobs(const Knobs& knobs, DevGroup& dg) {
  dg.rounds = knobs.number(Knob::Chunks).value_or(0);  // 0: chosen by size at run time (devRounds)
  if (auto r = knobs.word(Knob::Roles))
    dg.roles = *r == "split" ? DevGroup::Roles::Split : *r == "auto" ? DevGroup::Roles::Auto : DevGroup::Roles::Shared;
  dg.movers = knobs.number(Knob::Movers).value_or(0);  // 0: coconet_rt::kDevMovers
  if (auto t = knobs.number(Knob::Taper)) dg.taper = *t;
  if (auto e = knobs.word(Knob::TaperEnds))
    dg.taperEnds = *e == "first" ? DevGroup::TaperEnds::First : *e == "last" ? DevGroup::TaperEnds::Last : DevGroup::TaperEnds::Both;
  if (auto b = knobs.word(Knob::Barriers))
    dg.barriers = *b == "split" ? DevGroup::Barriers::Split : *b == "sync" ? DevGroup::Barriers::Sync : DevGroup::Barriers::Auto;
  // auto: chosen at launch where the kernel has roles (occupancyByRanks), else 1
  dg.occupancy = knobs.word(Knob::Occupancy) == "auto" ? 0 : knobs.number(Knob::Occupancy).value_or(1);
}

void Emitter::planDeviceGroups() {
  if (!o_.deviceCollectives) return;
  for (auto& f : p_.fused) {
    if (ncclAsked(f.knobs)) continue;
    std::vector<int> m;  // (an allreduce's group: its one-shot or two-shot form, below)
    for (auto& n : f.members) m.push_back(p_.find(n));
    std::sort(m.begin(), m.end());
    if (m.size() < 2 || m.front() < 0) continue;
    bool contiguous = true;
    for (size_t k = 1; k < m.size(); ++k) contiguous = contiguous && m[k] == m[k - 1] + 1;
    bool taken = false;
    for (int id : m) taken = taken || overlapped_.count(id) || chunked_.count(id) || arPair_.count(id);
    DevGroup dg;
    if (!contiguous || taken || !analyzeDevGroup(m, dg, /*partial=*/true)) continue;
    dg.name = f.name;
    readRoundKnobs(f.knobs, dg);
    if (auto a = f.knobs.word(Knob::Algorithm)) dg.algo = *a;
    if (dg.algo == "copy_engines") dg.copyEngines = dg.preloaded = true;
    warnOneShotNotTaken(dg);
    if (dg.arHead && oneShotMode(dg) < 0) {
      const std::string why = twoShotObstacle(dg);
      if (!why.empty()) {  // neither form
        if (dg.algo == "two_shot") {
          arGroupNotes_[dg.rs] = "tune(" + dg.name + ", algorithm = two_shot) is not taken: " + why + "; the allreduce, then the members";
          warnKnob(dg.name, "algorithm", "tune knob 'algorithm = two_shot' is not taken on " + quote(dg.name) + ": " + why +
                                             "; the allreduce runs, then the members");
        }
        continue;
      }
    }
    dg.index = devIndices_++;
    markFallbackOnly(m, dg);
    devGroups_[dg.first()] = dg;
    for (size_t k = 1; k < m.size(); ++k) devMembers_.insert(m[k]);
  }
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
      if (st.exit == id && aliased_.count(st.entry)) return true;
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
                       (aliased_.count(dg.ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
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
    return dg.acc[k] == Access::Modulo ? countVar(dg.ext[k])
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
    hostArgs.insert(hostArgs.end(), {"movers", "movers > 0 ? dev_->roles.get(stream_, \"" + p_.name + "\", \"" + dg.name + "\") : nullptr"});
  }
  if (takesLastBarrier(dg)) {
    params.push_back("int lastBarrier");
    hostArgs.push_back("lastBarrier");
  }
  if (flagsPulls(dg)) {
    params.insert(params.end(), {"ncclWindow_t flagWin", "size_t flagOff", "unsigned flagEpoch"});
    hostArgs.insert(hostArgs.end(), {"dev_->flags[" + gi + "].win", "(dev_->flagEpoch[" + gi + "] & 1u) * (dev_->flags[" + gi + "].bytes / 2)",
                                     "coconet_rt::tailFlags() ? dev_->flagEpoch[" + gi + "] : 0u"});
    params.push_back("int pulled");
    hostArgs.push_back("pulled");
  }
  if (claimsPushes(dg)) {
    params.push_back("int claimed");
    hostArgs.push_back("coconet_rt::claimedPushes(P_, (" + L.nSlice + ") / rounds, movers, " + std::to_string(devVecWidth(dg)) + ")");
  }
  if (dg.chain >= 0) scalarChainSignature(scalarChains_.at(dg.chain), true, params, hostArgs);
}

const Emitter::DevGroup* Emitter::devSuccessor(const DevGroup& dg) const {
  auto it = devGroups_.upper_bound(dg.first());  // the groups in stage order, as run() launches them
  return it == devGroups_.end() ? nullptr : &it->second;
}

// Whether the fused groups' kernels and the scalar chains take the device path on one rank too,
// where their kernels move nothing (emitDevKernel: `solo`): unless a group's kernel is preloaded
// (copy engines fill its slots, in an overlap or by tune(f, algorithm = copy_engines)); then its
// folded partials and the chains stay with the NCCL calls, as every other stage on one rank.
bool Emitter::soloDevice() const {
  for (const auto& [first, g] : devGroups_)
    if (g.copyEngines || g.preloaded) return false;
  return true;
}

// A device group's rounds: tune(f, chunks = K), else by size (devAutoRounds of the
// reduce-scatter's input, else of the gathered tensor).
std::string Emitter::devRounds(const DevGroup& dg) const {
  if (dg.rounds > 0) return std::to_string(dg.rounds);
  const int t = dg.head() ? p_.stages[dg.rs].operands[0] : dg.ag;
  const std::string bytes = "static_cast<long long>(" + countVar(t) + ") * sizeof(" + storageType(p_.stages[t].type.dtype) + ")";
  return dg.epilogueRounds ? "coconet_rt::epilogueAutoRounds(" + bytes + ", P_)" : "coconet_rt::devAutoRounds(" + bytes + ")";
}

std::string Emitter::emitDevKernel(const DevGroup& dg, bool oneShot) {
  const bool head = dg.head(), tail = dg.tail();
  const int src = tail ? agSrc(dg) : -1;
  const std::string XT = head ? storageType(p_.stages[p_.stages[dg.rs].operands[0]].type.dtype) : "";
  const std::string RT = head ? storageType(p_.stages[dg.rs].type.dtype) : "";
  const std::string ST = tail ? storageType(p_.stages[src].type.dtype) : "";
  std::string kname = "k_" + std::to_string(dg.first()) + "_" + ident(dg.name) + (oneShot ? "_oneshot" : "_device") + dg.kernelTag;
  const int V = devVecWidth(dg);
  std::vector<std::string> params, hostArgs;
  std::vector<int> others;
  DevLaunch sig{"", "", "0", ""};
  sig.oneShot = oneShot;
  devSignature(dg, sig, params, hostArgs, others);
  auto index = [&](size_t k, const std::string& i) { return fastIndex(dg.acc[k], k, i, "(off + " + i + ")"); };
  const int rsk = head ? dg.extIndex.at(dg.rs) : -1;
  std::vector<std::string> foldOps;
  for (int f : dg.folds) foldOps.push_back(emitReduceOp(f));
  const std::set<int> calcSet(dg.calc.begin(), dg.calc.end());
  // Folds element i's value (`operand`: how an operand of the group reads it) into each folded reduction.
  auto fold = [&](const std::string& ind, const std::function<std::string(int)>& operand) {
    std::string t;
    for (size_t q = 0; q < dg.folds.size(); ++q) {
      const int x = p_.stages[dg.folds[q]].operands[0];
      const std::string v = calcSet.count(x) ? "r" + std::to_string(x) : operand(dg.extIndex.at(x));
      t += ind + "acc" + std::to_string(dg.folds[q]) + " = " + foldOps[q] + "::combine(acc" + std::to_string(dg.folds[q]) + ", " +
           foldOps[q] + "::element(static_cast<" + foldOps[q] + "::Acc>(" + v + ")));\n";
    }
    return t;
  };
  // The kernel.
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
      if (inlinedInto_.count(c) && inlinedInto_.at(c) == f) K << ",\n//   " << p_.stages[c].name << " = " << exprTextFor(p_.stages[c]);
    K << "\n";
  }
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
  const bool solo = !oneShot && dg.soloForm();
  const bool occupancyByRanks = !oneShot && dg.occupancyByRanks();
  const bool tilesForm = !oneShot && flagsPulls(dg);  // (a flags-pulling tail has the one-rank form)
  const std::string tilesParam = tilesForm ? ", bool kTiles" : "";
  if (occupancyByRanks) K << (solo ? "template <int kOccupancy, bool kSolo" + tilesParam + ">\n" : "template <int kOccupancy>\n");
  else if (solo) K << "template <bool kSolo" + tilesParam + ">\n";
  else if (oneShot) K << "template <int kProto>\n";
  K << "__global__ void __launch_bounds__(coconet_rt::kDevThreads"
    << (occupancyByRanks      ? std::string(", kOccupancy > 1 ? kOccupancy : 0")
        : dg.occupancy > 1    ? ", " + std::to_string(dg.occupancy)
                              : "")
    << ") "
    << kname << "(";
  for (size_t k = 0; k < params.size(); ++k) K << (k ? ", " : "") << params[k];
  // Block b's LSA barrier is barrier b, and the device communicator has kDevBarriers of them: a
  // session reads its barrier's epoch when made and writes it back when destroyed, so only blocks
  // with a barrier may make one. Without roles the grid is at most kDevMaxBlocks (barrierBlocks);
  // with roles the workers (block indices up to the resident limit) take none and leave before it
  // is made.
  const std::string barrier = "ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};\n";
  const bool roles = !oneShot && !dg.preloaded && dg.splitRoles();
  // (the kernels with a one-rank form make their barrier sessions after its branch)
  K << ") {\n  (void)seed;\n"
    << "  // launched to overlap the previous kernel's end: wait for it, then let the next one be scheduled\n"
    << "  coconet_rt::pdlWait();\n  coconet_rt::pdlLaunchDependents();\n"
    << (roles || solo || oneShot ? "" : "  " + barrier)
    << "  const int P = dc.lsaSize, me = dc.lsaRank;\n  (void)P;\n  (void)me;\n"
    << "  constexpr int V = " << V << ";\n";
  // The scalar chain computed first (planChainPrologues): the values it makes that the group reads.
  std::set<int> fromChain;
  if (dg.chain >= 0) {
    const ScalarChain& sc = scalarChains_.at(dg.chain);
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
      << "                                        : coconet_rt::Part{static_cast<int>(blockIdx.x) - movers, static_cast<int>(gridDim.x) - movers};\n";
  // A flags-pulling tail without folds (whose partial results would be per worker block) has every
  // block compute chunk 0 (joinChunk0): compute() takes its part from `cpt`, the grid's for that
  // chunk, else pt.
  const bool joinChunk0 = roles && flagsPulls(dg) && dg.folds.empty();
  if (joinChunk0) K << "  coconet_rt::Part cpt = pt;  // the part compute() takes (the grid's for chunk 0)\n";
  if (oneShot)
    K << "  const auto slots = coconet_rt::oneShotSlots<kProto>(stageWin, stageOff, me, rsIn, nSlice, llFlag);\n"
      << "  // every slice: the elements' indices are the whole tensor's\n"
      << "  constexpr long long off = 0;\n"
      << (tail ? "  " + ST + "* own = gathered;\n" : "");
  else if (head) {
    const std::string stage = std::string(dg.pushes() ? "kSolo ? rsIn : " : "") + "static_cast<const " + XT +
                              "*>(ncclGetLocalPointer(stageWin, 0))";
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
  const std::string publish = solo ? "if (!kSolo) " : "";
  for (size_t q = 0; q < dg.folds.size(); ++q)
    K << "  " << foldOps[q] << "::Acc acc" << dg.folds[q] << " = " << foldOps[q] << "::init();\n";
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
  E << runMembers(dg.calc, dg.extIndex, dg.written, "    ", scalarOperand,
                  [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; })
    << fold("    ", scalarOperand);
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
    << "compute the members" << (oneShot ? ", store them" : tail ? ", publish" : "") << ".\n"
    << "  auto compute = [&](long long lo, long long hi) {\n";
  K << E.str()
    << "  // Units of V elements: vector accesses where aligned, else element by element (the same\n"
    << "  // partition either way), then the elements after the last unit.\n"
    << "  coconet_rt::forUnits<V>(" << (joinChunk0 ? "cpt" : "pt") << ", lo, hi, vec, [&](long long i0) {\n";
  if (head) K << "    float sum[V];\n    coconet_rt::sumSlots<" << XT << ", V>(slots, nSlice, P, i0, sum);\n";
  for (int k : others) {
    std::string kk = std::to_string(k), T = storageType(p_.stages[dg.ext[k]].type.dtype);
    if (dg.acc[k] == Access::Scalar && fromChain.count(dg.ext[k]))
      K << "    const " << T << " x" << kk << " = s" << dg.ext[k] << ";  // made by the chain above\n";
    else if (dg.acc[k] == Access::Scalar) K << "    const " << T << " x" << kk << " = a" << kk << "[b" << kk << "];\n";
    else
      K << "    coconet_rt::Vec<" << T << ", V> x" << kk << ";\n    coconet_rt::load_vec" << (aliased_.count(dg.ext[k]) ? "_rw" : "")
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
  // the chunks' edges (chunkLo): alike, or tapered as the schedule says (the kernel's arguments),
  // then from a table the block fills once (fillTaperEdges), up to kTaperTableRounds rounds
  if (!dg.preloaded && !oneShot) {
    if (dg.taper <= 0)
      K << "  auto edge = [&](int c) { return coconet_rt::chunkLo(c, rounds, nSlice, V); };\n";
    else
      K << "  __shared__ long long edgeTab[coconet_rt::kTaperTableRounds + 1];\n"
        << "  coconet_rt::fillTaperEdges(edgeTab, rounds, nSlice, V, taper, taperEnds);\n"
        << "  auto edge = [&](int c) { return rounds <= coconet_rt::kTaperTableRounds ? edgeTab[c] : coconet_rt::chunkLo(c, rounds, nSlice, V); };\n";
  }
  // (never on one rank: the kernel has left by the one-rank branch, reading rsIn as its slot)
  // (byMovers: the movers' push, with roles split, which then asks L2 for the own slice's part)
  auto pushOf = [&](const std::string& range, bool byMovers) {
    if (byMovers)
      return "coconet_rt::pushSlicesPrefetchOwn<" + XT + ", V>(pt, stageWin, 0, P, me, rsIn, nSlice, " + range + ", vec)";
    return "coconet_rt::pushSlices<" + XT + ", V>(pt, stageWin, 0, P, me, rsIn, nSlice, " + range + ", vec)";
  };
  const std::string push = pushOf("edge(r), edge(r + 1)", false);
  const std::string moversPush = pushOf("edge(r), edge(r + 1)", true);
  auto pullOf = [&](const std::string& range) {
    return "coconet_rt::pullSlices<" + ST + ", V>(pt, sliceWin, sliceOff, P, me, gathered + off, gstride, " + range + ", vec)";
  };
  const std::string pull = pullOf(head ? "edge(r - 2), edge(r - 1)" : "edge(r - 1), edge(r)");
  // a flagsPulls tail's claimed pulls of chunk r
  const std::string pullTilesCall = "coconet_rt::pullTiles<" + ST + ", V>(coconet_rt::roleClaimed(roles, r), pulled, sliceWin, sliceOff, P, me, gathered + off, "
                            "gstride, edge(r), edge(r + 1), vec, flagWin, flagOff, flagEpoch, r, &known)";
  // the blocks' partial results of the folded reductions: one tree pass for all of them
  // (blockReduceEach: each value's own tree, the barriers shared), then thread 0 stores them
  std::string folds;
  if (!dg.folds.empty()) {
    std::string names, stores;
    for (size_t q = 0; q < dg.folds.size(); ++q) {
      const std::string f = std::to_string(dg.folds[q]);
      names += (q ? ", " : "") + p_.stages[dg.folds[q]].name;
      stores += " part" + f + "[pt.index] = acc" + f + ";";
    }
    folds = "  {\n    // this block's partial result" + std::string(dg.folds.size() > 1 ? "s" : "") + " of " + names + "\n" +
            blockReduceEachCode(dg.folds, foldOps, "    ") + "    if (threadIdx.x == 0) {" + stores + " }\n  }\n";
  }
  const std::string sync = "bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  // tune(f, barriers = split): a round's barrier as its two phases (the same orders as sync)
  const std::string arrive = "bar.arrive(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  const std::string wait = "bar.wait(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  const bool split = dg.barriers == DevGroup::Barriers::Split;
  // With roles split (movers > 0): the first `movers` blocks move the chunks, the others compute
  // them; they hand chunk r over through the counters roleReady(roles, r) and roleDone(roles, r).
  if (solo) {
    K << "  if constexpr (kSolo) {\n"
      << "    // one rank: nothing to move and no barrier; the blocks compute the slice in one pass\n"
      << "    compute(0, nSlice);\n"
      << folds << "    return;\n  }\n";
    if (!roles) K << "  " << barrier;
  }
  if (roles) {
    auto indent = [](const std::string& t) {  // two more spaces on every line
      std::string o;
      std::istringstream in(t);
      for (std::string line; std::getline(in, line);) o += "  " + line + "\n";
      return o;
    };
    auto ready = [](const std::string& r) { return "coconet_rt::roleReady(roles, " + r + ")"; };
    auto done = [](const std::string& r) { return "coconet_rt::roleDone(roles, " + r + ")"; };
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
      << (!flagsPulls(dg) ? "      coconet_rt::roleSignal(" + done("r") + ");\n"
                            : "      coconet_rt::workerDone(roles, r, gridDim.x - movers, flagWin, flagOff, P, me, flagEpoch);\n" +
                                  std::string(joinChunk0 ? ""
                                                         : "      // every pull waits for chunk 0: no worker takes memory bandwidth from it for a later chunk\n"
                                                           "      if (r == 0) coconet_rt::roleWait(" + done("0") + ", gridDim.x - movers);\n"))
      << "    }\n"
      << indent(folds) << "    coconet_rt::roleExit(roles, rounds);\n    return;\n  }\n"
      << "  // the blocks that take barriers: the movers, or every block without roles\n"
      << "  " << barrier
      << "  if (movers > 0) {\n"
      << "    const unsigned workers = gridDim.x - movers;\n";
    if (dg.full() && split)
      K << "    // push chunk r; once every worker published chunk r-1, arrive; pull chunk r-2 (ready since the\n"
        << "    // last round) while the arrivals land; wait: chunk r is ready\n"
        << "    for (int r = 0; r <= rounds + 1; ++r) {\n"
        << "      if (r < rounds) " << moversPush << ";\n"
        << "      if (r >= 1 && r <= rounds) coconet_rt::roleWait(" << done("r - 1") << ", workers);\n"
        << "      // (every rank pushed chunk r and published chunk r-1 of this part, once all arrived)\n"
        << "      if (r <= rounds) " << arrive
        << "      if (r >= 2) " << pullOf("edge(r - 2), edge(r - 1)") << ";\n"
        << "      if (r <= rounds) {\n"
        << "        " << wait
        << "        if (r < rounds) coconet_rt::roleSignal(" << ready("r") << ");\n"
        << "      }\n"
        << "    }\n";
    else if (dg.full())
      K << "    // push chunk r; once every worker published chunk r-1, barrier; chunk r is ready; pull chunk r-1\n"
        << "    for (int r = 0; r <= rounds; ++r) {\n"
        << "      if (r < rounds) " << moversPush << ";\n"
        << "      if (r >= 1) coconet_rt::roleWait(" << done("r - 1") << ", workers);\n"
        << "      // every rank pushed chunk r and published chunk r-1 of this part\n"
        << "      " << sync
        << "      if (r < rounds) coconet_rt::roleSignal(" << ready("r") << ");\n"
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
        << "        " << wait
        << "        coconet_rt::roleSignal(" << ready("r - 1") << ");\n"
        << "      }\n"
        << "      " << pushOf("mid, edge(r + 1)", true) << ";\n"
        << "      " << arrive
        << "    }\n"
        << "    " << wait
        << "    coconet_rt::roleSignal(" << ready("rounds - 1") << ");\n"
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
        << "        coconet_rt::pushTilesPrefetchOwn<" << XT << ", V>(coconet_rt::roleClaimed(roles, r), claimed, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);\n"
        << "        coconet_rt::moverPushed(coconet_rt::rolePushed(roles, r));\n"
        << "        if (blockIdx.x == 0) {\n"
        << "          coconet_rt::roleWait(coconet_rt::rolePushed(roles, r), static_cast<unsigned>(movers));\n"
        << "          // every rank pushed chunk r\n"
        << "          " << sync
        << "          coconet_rt::roleSignal(" << ready("r") << ", static_cast<unsigned>(movers));\n"
        << "        }\n"
        << "      }\n"
        << "    } else {\n"
        << "      // push chunk r; barrier; chunk r is ready\n"
        << "      for (int r = 0; r < rounds; ++r) {\n"
        << "        " << moversPush << ";\n"
        << "        // every rank pushed chunk r of this part\n"
        << "        " << sync
        << "        coconet_rt::roleSignal(" << ready("r") << ");\n"
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
        << "        " << arrive
        << "      }\n"
        << "      if (r >= 1) " << pullOf("edge(r - 1), edge(r)") << ";\n"
        << "      // every rank published chunk r of this part\n"
        << "      if (r < rounds) " << wait
        << "    }\n";
    else {
      // once every worker published chunk r, a barrier per round (every tail without flags, and under
      // COCONET_TAIL_FLAGS=0 one with them); then pull chunk r
      const std::string barrierPulls = "// once every worker published chunk r, barrier; pull chunk r\n"
                                 "for (int r = 0; r < rounds; ++r) {\n"
                                 "  coconet_rt::roleWait(" + done("r") + (joinChunk0 ? ", r == 0 ? gridDim.x : workers);\n" : ", workers);\n") +
                                 "  // every rank published chunk r of this part\n"
                                 "  " + sync +
                                 "  " + pullOf("edge(r), edge(r + 1)") + ";\n"
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
  if (oneShot)
    K << "  if constexpr (kProto == coconet_rt::kProtoLL) {\n"
      << "    coconet_rt::pushWholeLL<" << XT << ">(pt, stageWin, stageOff, P, me, rsIn, nSlice, llFlag);\n"
      << "  } else if constexpr (kProto == coconet_rt::kProtoLL128) {\n"
      << "    coconet_rt::pushWholeLL128<" << XT << ">(pt, stageWin, stageOff, P, me, rsIn, nSlice, llFlag);\n"
      << "  } else {\n"
      << "    " << barrier
      << "    coconet_rt::pushWhole<" << XT << ", V>(pt, stageWin, stageOff, P, me, rsIn, nSlice, 0, nSlice, vec);\n"
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
    const std::string certifies = !dg.pushes() ? "    // r = 0: every rank's copies arrived (they precede its launch); then every rank published chunk r-1\n"
                                               : "    // every rank pushed chunk r and published chunk r-1 of this block's elements\n";
    if (maySplit)
      K << "  // each round's barrier in two phases (arrive, then wait after the pull) or whole\n"
        << "  const bool splitBar = " << (split ? std::string("true") : "coconet_rt::devSplitBarriers(nSlice * P * static_cast<long long>(sizeof(" + XT + ")), rounds)") << ";\n"
        << loopHead << certifies
        << "    if (splitBar && r <= rounds) " << arrive
        << "    // pull chunk r-2 (published since the last round): split, while the arrivals land\n"
        << "    if (r >= 2) " << pull << ";\n"
        << "    if (r <= rounds) {\n"
        << "      if (splitBar) " << wait
        << "      else " << sync
        << "    }\n  }\n";
    else
      K << loopHead << "    if (r >= 2) " << pull << ";\n" << certifies << "    if (r <= rounds) " << sync << "  }\n";
  } else if (head && split)
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) {\n"
      << "      " << push << ";\n"
      << "      " << arrive
      << "    }\n"
      << "    if (r >= 1) compute(edge(r - 1), edge(r));\n"
      << "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots, unless\n"
      << "    // a later group of the call orders that: lastBarrier = 0)\n"
      << "    if (r < rounds) " << wait
      << "    else if (lastBarrier) " << sync << "  }\n";
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
      << "      " << arrive
      << "    }\n"
      << "    if (r >= 1) " << pull << ";\n"
      << "    // every rank published chunk r of this block's elements\n"
      << "    if (r < rounds) " << wait << "  }\n";
  else
    K << "  for (int r = 0; r <= rounds; ++r) {\n"
      << "    if (r < rounds) compute(edge(r), edge(r + 1));\n"
      << "    if (r >= 1) " << pull << ";\n"
      << "    // every rank published chunk r of this block's elements\n"
      << "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n  }\n";
  K << folds << "}\n\n";
  return kname;
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
      b << " &&\n" << ind << "    coconet_rt::aligned16(" << var(dg.ext[k]) << ", " << (L.oneShot ? "0" : "m" + std::to_string(k) + ".base" + plus) << ")";
    if (dg.acc[k] == Access::Modulo)
      b << " &&\n" << ind << "    " << countVar(dg.ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(dg.ext[k]) << ", 0)";
  }
  b << ";\n";
}

std::string Emitter::oneShotObstacle(const DevGroup& dg) const {
  if (!(dg.full() || dg.arHead)) return "it does not run from a reduce_scatter to an all_gather";
  if (!dg.folds.empty()) return "reduction '" + p_.stages[dg.folds.front()].name + "' is folded into its kernel";
  if (dg.chain >= 0) return "scalar chain '" + scalarChains_.at(dg.chain).name + "' runs in its kernel";
  // (an allreduce's members are whole tensors on every rank: each rank stores all of them)
  if (!dg.arHead && !dg.written.empty()) return "'" + p_.stages[dg.written.front()].name + "' is stored for later stages, a slice per rank";
  for (size_t k = 0; k < dg.ext.size(); ++k) {
    const TensorType& t = p_.stages[dg.ext[k]].type;
    if (dg.ext[k] != dg.rs && t.group && t.layout.kind != Layout::Replicated)
      return "it reads '" + p_.stages[dg.ext[k]].name + "', " + t.layout.str() + ": each rank holds its own";
  }
  for (int id : dg.calc)
    for (const ENode& e : p_.stages[id].expr.nodes)
      if (e.op == EOp::Rank || e.op == EOp::GroupIndex) return "'" + p_.stages[id].name + "' reads the rank's position";
  return "";
}

bool Emitter::oneShotAsked(const DevGroup& dg) { return dg.algo == "one_shot" || dg.algo == "ll" || dg.algo == "ll128"; }

int Emitter::oneShotMode(const DevGroup& dg) const {
  if (dg.algo == "two_shot" || dg.algo == "copy_engines" || !oneShotObstacle(dg).empty()) return -1;
  return oneShotAsked(dg) ? 1 : 0;
}

void Emitter::warnKnob(const std::string& target, const std::string& key, const std::string& msg) {
  if (!o_.diags || !knobWarned_.insert({target, key}).second) return;
  SourceLoc at;
  const std::optional<Knob> knob = knobNamed(key);
  if (const FusedGroup* f = p_.findFused(target)) {
    at = knob ? f->knobs.where(*knob).value_or(f->loc) : f->loc;
  } else if (int id = p_.find(target); id >= 0 && knob && p_.stages[id].knobs.where(*knob)) {
    at = *p_.stages[id].knobs.where(*knob);
  } else {
    return;
  }
  o_.diags->warning(at, msg, static_cast<uint32_t>(key.size()));
}

std::vector<Emitter::KnobUse> Emitter::tunedKnobs() const {
  std::vector<KnobUse> uses;
  auto collect = [&](const std::string& target, const Knobs& knobs) {
    for (auto& [knob, setting] : knobs.all()) uses.push_back({setting.loc, target, knob, setting.value.str()});
  };
  for (auto& f : p_.fused) collect(f.name, f.knobs);
  for (auto& s : p_.stages) collect(s.name, s.knobs);
  std::stable_sort(uses.begin(), uses.end(), [](const KnobUse& a, const KnobUse& b) {
    return std::tie(a.at.file, a.at.line, a.at.col) < std::tie(b.at.file, b.at.line, b.at.col);
  });
  return uses;
}

void Emitter::warnUnreadKnobs() {
  for (auto& k : tunedKnobs())
    if (const std::string msg = unreadKnob(p_, k.target, knobName(k.knob)); !msg.empty()) warnKnob(k.target, knobName(k.knob), msg);
}

void Emitter::warnKnobsWithoutDevice() {
  if (o_.deviceCollectives) return;
  for (auto& k : tunedKnobs()) {
    if (k.knob == Knob::Algorithm && (k.value == "nccl" || k.value == "ring")) continue;  // what runs anyway
    const std::string key = knobName(k.knob);
    if (!unreadKnob(p_, k.target, key).empty()) continue;  // warned at already
    const std::string knob = k.knob == Knob::Algorithm ? "'algorithm = " + k.value + "'" : quote(key);
    warnKnob(k.target, key,
             "tune knob " + knob + " has no effect on " + quote(k.target) +
                 ": --no-device-collectives keeps NCCL calls, which read no knob");
  }
}

std::string Emitter::oneShotRefused(const DevGroup& dg) const { return oneShotAsked(dg) ? oneShotObstacle(dg) : ""; }

void Emitter::warnOneShotNotTaken(const DevGroup& dg) {
  if (const std::string why = oneShotRefused(dg); !why.empty())
    warnKnob(dg.name, "algorithm", "tune knob 'algorithm = " + dg.algo + "' is not taken on " + quote(dg.name) + ": " + why +
                                       " (no one-shot form)");
}

std::string Emitter::oneShotNote(const DevGroup& dg, const std::string& ind) const {
  const std::string why = oneShotRefused(dg);
  return why.empty() ? "" : ind + "// tune(" + dg.name + ", algorithm = " + dg.algo + ") is not taken: " + why + "\n";
}

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
    if (!ifApart.empty()) b << ind << "// the input shares no byte with what the kernel stores\n" << ind << "const bool apart = " << ifApart << ";\n";
    const std::string guard = ifApart.empty() ? "" : "!apart ? " + barrierForm + "\n" + ind + "    : ";
    if (dg.algo == "ll" || dg.algo == "ll128")
      proto = ifApart.empty() ? (dg.algo == "ll" ? llForm : ll128Form) : "apart ? " + (dg.algo == "ll" ? llForm : ll128Form) + " : " + barrierForm;
    else
      proto = guard + bytes + " <= coconet_rt::llGroupMaxBytes(P_) ? " + llForm + "\n" + ind + "    : " + bytes +
              " <= coconet_rt::ll128GroupMaxBytes(P_) ? " + ll128Form + "\n" + ind + "    : " + barrierForm;
  }
  b << ind << "const int proto = " << proto << ";\n"
    << ind << "coconet_rt::Window& oneWin = proto == " << llForm << "      ? dev_->ll[" << gi << "]\n"
    << ind << "                             : proto == " << ll128Form << " ? dev_->ll128[" << gi << "]\n"
    << ind << "                                                                : dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
    << ind << "if (proto == " << llForm << "      ? coconet_rt::ensureZeroed(oneWin, comm_, stream_, coconet_rt::llWindowBytes(std::max<long long>(" << n
    << ", coconet_rt::kLLMaxBytes / sizeof(" << XT << ")), sizeof(" << XT << "), P_), " << prog << ", " << name << ")\n"
    << ind << "    : proto == " << ll128Form << " ? coconet_rt::ensureZeroed(oneWin, comm_, stream_, coconet_rt::ll128WindowBytes(" << n << ", sizeof("
    << XT << "), P_), " << prog << ", " << name << ")\n"
    << ind << "    : oneWin.ensure(comm_, stream_, 2 * static_cast<size_t>(P_) * std::max(" << bytes << ", coconet_rt::kOneShotMaxBytes), " << prog
    << ", " << name << "))\n"
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

std::string Emitter::twoShotObstacle(const DevGroup& dg) const {
  if (!dg.arHead) return "it does not start with an allreduce";
  if (oneShotAsked(dg) || dg.algo == "copy_engines")
    return "tune(" + dg.name + ", algorithm = " + dg.algo + ") asks for another form";
  if (std::string why = oneShotObstacle(dg); !why.empty()) return why;
  const int last = dg.run.back();
  for (int id : dg.written)
    if (id != last) return "'" + p_.stages[id].name + "' is stored for later stages: each rank would compute only its slice";
  if (std::find(dg.written.begin(), dg.written.end(), last) == dg.written.end()) return "'" + p_.stages[last].name + "' is not stored";
  return "";
}

Emitter::DevGroup Emitter::twoShotForm(const DevGroup& dg) const {
  DevGroup t = dg;
  t.ag = dg.run.back();  // gathered into its own storage
  t.agIsMember = true;
  t.written.clear();  // (the last member, the only one stored: twoShotObstacle)
  t.epilogueRounds = true;
  return t;
}

Emitter::DevGroup Emitter::onePassForm(const DevGroup& dg) const {
  DevGroup t = dg;
  t.preloaded = false;
  t.epilogueRounds = true;  // (rounds by size unless tune(f, chunks) sets them)
  readRoundKnobs(groupKnobs(p_.stages[dg.rs]), t);
  t.kernelTag = "_pass";  // (blocks, gather, tailPieces: read by emitChunked on the overlap's group only)
  return t;
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
    b << "two-shot (the members on this rank's slice of " << n << " / P_ elements, " << p_.stages[dg.run.back()].name << "'s slices gathered)"
      << (dg.algo == "two_shot" ? "" : " up to twoShotGroupMaxBytes(P_)");
  b << ";\n  // else the allreduce, then the members\n"
    << "  // (the same on every rank: all of them ask devReady, a collective, or none)\n"
    << "  const bool " << oneIf << " = ";
  if (mode < 0) b << "false;\n";
  else b << "!coconet_rt::soloRanks(P_) && " << n << " > 0" << (mode ? "" : " && " + bytes + " <= coconet_rt::oneShotMaxBytes(P_)") << ";\n";
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
  if (auto da = devAR_.find(dg.rs); da != devAR_.end()) {
    emitDeviceAllReduce(da->second);
  } else {
    b << "  if (" << n << " > 0) {\n";
    emitStage(dg.rs);
    b << "  }\n";
  }
  for (int id : dg.run) {
    if (auto it = runOf_.find(id); it != runOf_.end() && it->second.front() != id) continue;
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
      b << ind << "int movers = rounds >= " << (dg.roles == DevGroup::Roles::Auto ? "coconet_rt::kRolesAutoRounds" : "2") << " ? " << (dg.movers > 0 ? std::to_string(dg.movers) : std::string("coconet_rt::kDevMovers")) << " : 0;\n";
    // a flags-pulling tail: the movers' tiles' units (0: fixed parts), and the instantiation of that form
    const bool tiles = flagsPulls(dg);
    if (tiles) b << ind << "const int pulled = coconet_rt::claimedPulls(P_, rounds);\n";
    auto inst = [&](const std::string& args) {  // the instantiation(s) after the one-rank form
      return tiles ? "(pulled > 0 ? &" + kname + "<" + args + ", true> : &" + kname + "<" + args + ", false>)" : "&" + kname + "<" + args + ">";
    };
    const std::string soloTiles = tiles ? ", false" : "";
    if (dg.occupancyByRanks())
      b << ind << "// the one-rank form, or tune(" << dg.name << ", occupancy = auto): blocks per SM by the ranks and the movers\n"
        << ind << "auto* const " << kname << "_k = coconet_rt::soloRanks(P_) ? &" << kname << "<1, true" << soloTiles << "> : coconet_rt::devAutoOccupancy(P_, movers) == 2 ? "
        << inst("2, false") << " : " << inst("1, false") << ";\n";
    else if (solo)
      b << ind << "auto* const " << kname << "_k = coconet_rt::soloRanks(P_) ? &" << kname << "<true" << soloTiles << "> : " << inst("false") << ";  // the one-rank form, or not\n";
    // (on one rank no barriers: as many blocks as fit at once; else a barrier per block, every
    // block resident)
    const std::string units = n + " / " + std::to_string(V) + ", ";
    grid = "coconet_rt::barrierBlocks(reinterpret_cast<const void*>(" + kptr + "), " + units + prog + ", " + name + ")";
    const std::string soloGrid = "coconet_rt::soloRanks(P_) ? coconet_rt::soloBlocks(reinterpret_cast<const void*>(" + kptr + "), " + units +
                                 prog + ", " + name + ") : " + grid;
    if (dg.splitRoles())
      b << ind << "const int workers = movers > 0 ? coconet_rt::roleBlocks(reinterpret_cast<const void*>(" << kptr << "), "
        << n << " / " << V << ", movers, " << prog << ", " << name << ") : 0;\n"
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
      b << ind << "red" << f << "_.ensure(static_cast<size_t>(" << foldBlocks << ") * sizeof(" << reduceOpStruct(f)
        << "::Acc), " << prog << ", \"" << p_.stages[f].name << "\");\n";
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
  b << "\n  // fused group '" << dg.name << "'" << dg.label() << ": one kernel over NCCL's device API where every rank is load/store reachable\n"
    << oneShotNote(dg, "  ");
  const std::string foldBlocks = foldBlocksVar(dg.first());
  if (!dg.folds.empty()) {
    b << "  int " << foldBlocks << " = 0;  // its blocks, where they wrote partial results of";
    for (int f : dg.folds) b << " " << p_.stages[f].name;
    b << "\n";
  }
  // (on one rank too where soloDevice())
  b << "  if (" << n << " > 0) {\n"
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
    b << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, "
      << (dg.halves() ? "2 * ((" + bytes + " + 255) / 256 * 256)" : bytes) << ", " << prog << ", " << name << ")"
      << (dg.head() ? " || grew" : "") << ")\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n";
    if (flagsPulls(dg))
      b << "      // the movers' flags (flagsPulls): zeroed on every rank before any rank counts a chunk in them, when made and\n"
        << "      // when the call's epoch wraps (nextFlagEpoch)\n"
        << "      const bool madeFlags = dev_->flags[" << gi << "].ensure(comm_, stream_, coconet_rt::tailFlagBytes(P_), " << prog << ", " << name
        << ");\n"
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
    b << "      if (!coconet_rt::soloRanks(P_)" << (oneShot ? "" : " && static_cast<size_t>(" + countVar(x) + ") * sizeof(" + storageType(p_.stages[x].type.dtype) +
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
    if (auto it = runOf_.find(id); it != runOf_.end() && it->second.front() != id) continue;
    b << "      {\n";
    emitStage(id);
    b << "      }\n";
  }
  b << "    }\n  }\n";
}

// The rounds of a device group by copy engines: tune(f, chunks = R), else by size (ceAutoRounds
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
    c.push = "          for (int j = 1; j <= P_ && hi > lo; ++j) {  // this rank's own slot last\n"
             "            const int q = (rank_ + j) % P_;\n"
             "            CHECK(cudaMemcpyAsync(static_cast<" + XT + "*>(stageBases[q]) + rank_ * " + n + " + lo, " + L.rsIn + " + q * " + n +
             " + lo, static_cast<size_t>(hi - lo) * sizeof(" + XT + "), cudaMemcpyDeviceToDevice, ceCopy_), " + name + ");\n"
             "          }\n";
  c.compute = "          " + kname + "<<<blocks, coconet_rt::kDevThreads, 0, stream_>>>(";
  for (size_t k = 0; k < hostArgs.size(); ++k) c.compute += (k ? ", " : "") + hostArgs[k];
  c.compute += ");\n          CHECK(cudaGetLastError(), " + name + ");\n";
  if (dg.tail()) {
    c.pullNote = "chunk r-1 of the other ranks' slices, behind chunk r's pushes";
    c.pullBounds = "          const long long lo = edge(r - 1), hi = edge(r);\n";
    c.pull = "          for (int j = 1; j < P_ && hi > lo; ++j) {\n"
             "            const int q = (rank_ + j) % P_;\n"
             "            CHECK(cudaMemcpyAsync(" + var(dg.ag) + " + q * " + L.gstride + " + lo, reinterpret_cast<const " + ST +
             "*>(static_cast<const char*>(sliceBases[q]) + sliceOff) + lo, static_cast<size_t>(hi - lo) * sizeof(" + ST +
             "), cudaMemcpyDeviceToDevice, ceCopy_), " + name + ");\n"
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

std::string Emitter::algorithmOf(const Stage& s) const {
  if (auto a = s.knobs.word(Knob::Algorithm)) return *a;
  return groupKnobs(s).word(Knob::Algorithm).value_or("");
}

void Emitter::planDeviceAllReduces() {
  if (!o_.deviceCollectives) return;
  auto fits = [&](const Stage& s) {
    return (!s.type.group || s.type.group->depth == 0) && s.op == ReduceOp::Sum &&
           (s.type.dtype == DType::F16 || s.type.dtype == DType::BF16 || s.type.dtype == DType::F32);
  };
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    int id = static_cast<int>(i);
    if (overlapped_.count(id) || chunked_.count(id)) continue;
    DevAllReduce d;
    if (s.kind == StageKind::AllReduce && fits(s)) {
      d.in = s.operands[0];
      d.name = s.name;
    } else if (auto pr = arPair_.find(id); pr != arPair_.end() && fits(p_.stages[pr->second]) &&
                                            !overlapped_.count(pr->second) && !chunked_.count(pr->second)) {
      d.in = p_.stages[pr->second].operands[0];
      d.name = s.fusedInto.empty() ? s.name : s.fusedInto;
    } else {
      continue;
    }
    d.algo = algorithmOf(s);
    if (d.algo == "nccl" || d.algo == "ring") continue;  // NCCL's algorithms asked for
    d.rounds = (s.knobs.has(Knob::Chunks) ? s.knobs : groupKnobs(s)).number(Knob::Chunks).value_or(2);
    d.out = id;
    d.index = devIndices_++;
    devAR_[id] = d;
  }
}

void Emitter::emitDeviceAllReduce(const DevAllReduce& d) {
  auto& b = body_;
  const Stage& s = p_.stages[d.out];
  std::string T = storageType(s.type.dtype), gi = std::to_string(d.index), n = countVar(d.out);
  std::string name = "\"" + d.name + "\"", prog = "\"" + p_.name + "\"";
  const int V = 16 / dtypeBytes(s.type.dtype);
  std::string in = var(d.in), out = var(d.out);
  const bool ce = d.algo == "copy_engines", twoShot = !ce && d.algo != "one_shot";
  std::string oneShot = d.algo == "one_shot"   ? "true"
                        : ce                   ? "false"
                        : d.algo == "two_shot" ? "(" + n + " % P_ != 0 && bytes <= coconet_rt::oneShotMaxBytes(P_))"
                                               : "bytes <= coconet_rt::oneShotMaxBytes(P_)";
  // the LL form (coconet_rt::dev_allreduce_ll): by default up to llMaxBytes(P), at every size as
  // asked; the LL128 form (dev_allreduce_ll128): by default past that up to ll128MaxBytes(P), at
  // every size as asked
  const std::string ll = d.algo == "ll" ? "true" : d.algo.empty() ? "bytes <= coconet_rt::llMaxBytes(P_)" : "";
  const std::string ll128 = d.algo == "ll128" ? "true" : d.algo.empty() ? "bytes <= coconet_rt::ll128MaxBytes(P_)" : "";
  b << "\n  " << stageComment(s) << ": allreduce over NCCL's device API where every rank is load/store reachable"
    << (d.algo.empty() ? "" : " (algorithm = " + d.algo + ")") << "\n";
  if (auto note = arGroupNotes_.find(d.out); note != arGroupNotes_.end()) b << "  // " << note->second << "\n";
  b << "  if (" << n << " > 0) {\n"
    << "    const size_t bytes = static_cast<size_t>(" << n << ") * sizeof(" << T << ");\n";
  // One no-barrier form's branch: its window (zeroed when it grows), its kernel, the next call's area.
  bool first = true;
  auto noBarrier = [&](const std::string& when, const std::string& window, const std::string& note, const std::string& winBytes,
                       const std::string& kernel, const std::string& blocks) {
    if (when.empty()) return;
    b << (first ? "    " : "    } else ") << "if (devReady(" << name << ") && " << when << ") {\n"
      << "      coconet_rt::Window& w = dev_->" << window << "[" << gi << "];  // two areas, used in turn" << note << "\n"
      << "      if (coconet_rt::ensureZeroed(w, comm_, stream_, " << winBytes << ", " << prog << ", " << name << "))\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      CHECK(coconet_rt::launchDependent(coconet_rt::" << kernel << "<" << T << ">, coconet_rt::" << blocks << "(" << n << ", sizeof(" << T
      << ")), coconet_rt::kDevThreads, stream_, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), P_, rank_, " << in << ", " << out
      << ", static_cast<long long>(" << n << "), coconet_rt::nextLLEpoch(dev_->epoch[" << gi << "]), static_cast<int>(coconet_rt::aligned8("
      << in << ") && coconet_rt::aligned8(" << out << "))), " << name << ");\n"
      << "      dev_->parity[" << gi << "] ^= 1;\n";
    first = false;
  };
  noBarrier(ll, "ll", "",
            "coconet_rt::llWindowBytes(std::max<long long>(" + n + ", coconet_rt::kLLMaxBytes / sizeof(" + T + ")), sizeof(" + T + "), P_)",
            "dev_allreduce_ll", "llBlocks");
  noBarrier(ll128, "ll128", " (not the LL form's: flags elsewhere)", "coconet_rt::ll128WindowBytes(" + n + ", sizeof(" + T + "), P_)",
            "dev_allreduce_ll128", "ll128Blocks");
  if (d.algo == "ll" || d.algo == "ll128") {  // no other device form asked for: NCCL where the device path is not usable
    b << "    } else {\n      CHECK(ncclAllReduce(" << in << ", " << out << ", " << n << ", " << ncclType(s.type.dtype)
      << ", ncclSum, comm_, stream_), " << name << ");\n    }\n  }\n";
    return;
  }
  b << (first ? "    " : "    } else ") << "if (devReady(" << name << ") && " << oneShot << ") {\n"
    << "      coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
    << "      if (w.ensure(comm_, stream_, 2 * static_cast<size_t>(P_) * std::max(bytes, coconet_rt::kOneShotMaxBytes), " << prog << ", "
    << name << "))\n        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "      const bool vec = " << n << " % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
    << ", 0);\n"
    << "      CHECK(coconet_rt::launchDependent(coconet_rt::dev_allreduce_one_shot<" << T << ", " << V << ">, coconet_rt::devBlocks(" << n << " / " << V
    << "), coconet_rt::kDevThreads, stream_, dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in << ", " << out
    << ", static_cast<long long>(" << n << "), static_cast<int>(vec)), " << name << ");\n"
    << "      dev_->parity[" << gi << "] ^= 1;\n";
  if (twoShot)
    b << "    } else if (dev_->dc.usable && " << n << " % P_ == 0" << (d.algo == "two_shot" ? "" : " && bytes <= coconet_rt::kTwoShotMaxBytes")
      << ") {\n"
      << "      const long long m = " << n << " / P_;\n"
      << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, bytes, " << prog << ", " << name << ");\n"
      << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, bytes / P_, " << prog << ", " << name << ") || grew)\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = m % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out << ", 0);\n"
      << "      CHECK(coconet_rt::launchDependent(coconet_rt::dev_allreduce_two_shot<" << T << ", " << V << ">, coconet_rt::devBlocks(m / " << V
      << "), coconet_rt::kDevThreads, stream_, dev_->dc.comm, dev_->stage[" << gi << "].win, dev_->slice[" << gi << "].win, " << in
      << ", " << out << ", m, static_cast<int>(vec)), " << name << ");\n";
  if (ce || d.algo.empty()) emitCopyEngineAllReduce(d, ce);
  b << "    } else {\n      CHECK(ncclAllReduce(" << in << ", " << out << ", " << n << ", " << ncclType(s.type.dtype)
    << ", ncclSum, comm_, stream_), " << name << ");\n    }\n  }\n";
}

// The allreduce by copy engines (from copyEngineMinBytes(P), or asked for): in R rounds (2, or
// tune(X, chunks = R)) of n / R elements each, every rank's copy engine pushes part q of the
// round (n / (R P) elements) into slot `me` of rank q's window, one after another (rank me+1
// first: at any moment each rank sends to one rank and receives from one); a barrier on the copy
// stream; rank q sums its part over the ranks (its own from its input) into its output and the
// window's result area (ce_sum_parts on stream_); a barrier there; the copy engines pull the
// other ranks' sums into the output. Round r+1's pushes are queued before round r's pulls, so
// they run while round r sums. Window: [round][rank] slots of a part, then the rounds' results.
// A barrier kernel on each stream (LSA barriers 0 and 1): nothing else device-API runs until
// stream_ waits for the copy stream at the end. Events: ceEv_[0] the input ready, [1] a round's
// pushes arrived, [3 + r % 2] round r summed everywhere (waited before its next record), [5] done.
void Emitter::emitCopyEngineAllReduce(const DevAllReduce& d, bool asked) {
  auto& b = body_;
  const Stage& s = p_.stages[d.out];
  const std::string T = storageType(s.type.dtype), gi = std::to_string(d.index), n = countVar(d.out);
  const std::string name = "\"" + d.name + "\"", prog = "\"" + p_.name + "\"", in = var(d.in), out = var(d.out);
  const std::string V = std::to_string(16 / dtypeBytes(s.type.dtype)), R = std::to_string(d.rounds);
  b << "    } else if (dev_->dc.usable && " << n << " % (" << R << " * P_) == 0" << (asked ? "" : " && bytes >= coconet_rt::copyEngineMinBytes(P_)")
    << ") {\n"
    << "      // copy engines, " << R << " round" << (d.rounds == 1 ? "" : "s")
    << ": pushes to the parts' owners, a barrier, sums, a barrier, pulls of the sums\n"
    << "      const int R = " << R << ";\n"
    << "      const long long piece = " << n << " / (R * P_);\n"
    << "      coconet_rt::Window& w = dev_->stage[" << gi << "];\n"
    << "      if (w.ensure(comm_, stream_, static_cast<size_t>(" << n << " + R * piece) * sizeof(" << T << "), " << prog << ", " << name
    << "))\n        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "      const std::vector<void*>& wins = w.peerBases(P_, stream_, " << prog << ", " << name << ");\n"
    << "      " << T << "* mine = static_cast<" << T << "*>(w.ptr);\n"
    << "      const bool vec = piece % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
    << ", 0);\n";
  CopyRounds c;
  c.bounds = "          const long long base = r * (" + n + " / R), at = base + rank_ * piece;\n";
  c.push = "          for (int j = 1; j < P_; ++j) {\n"
           "            const int q = (rank_ + j) % P_;\n"
           "            CHECK(cudaMemcpyAsync(static_cast<" + T + "*>(wins[q]) + (r * P_ + rank_) * piece, " + in +
           " + base + q * piece, static_cast<size_t>(piece) * sizeof(" + T + "), cudaMemcpyDeviceToDevice, ceCopy_), " + name + ");\n"
           "          }\n"
           "          coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, ceCopy_>>>(dev_->dc.comm, 0);  // round r's parts arrived\n"
           "          CHECK(cudaGetLastError(), " + name + ");\n";
  c.compute = "          coconet_rt::ce_sum_parts<" + T + ", " + V + "><<<coconet_rt::devBlocks(piece / " + V +
              "), coconet_rt::kDevThreads, 0, stream_>>>(" + out + " + at, mine + " + n + " + r * piece, " + in +
              " + at, mine + r * P_ * piece, piece, P_, rank_, vec);\n"
              "          CHECK(cudaGetLastError(), " + name + ");\n"
              "          coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, 1);  // every rank's sums of round r\n"
              "          CHECK(cudaGetLastError(), " + name + ");\n";
  c.pullNote = "round r-1's pulls, behind round r's pushes";
  c.pullBounds = "          const long long base = (r - 1) * (" + n + " / R);\n";
  c.pull = "          for (int j = 1; j < P_; ++j) {\n"
           "            const int q = (rank_ + j) % P_;\n"
           "            CHECK(cudaMemcpyAsync(" + out + " + base + q * piece, static_cast<const " + T + "*>(wins[q]) + " + n +
           " + (r - 1) * piece, static_cast<size_t>(piece) * sizeof(" + T + "), cudaMemcpyDeviceToDevice, ceCopy_), " + name + ");\n"
           "          }\n";
  emitCopyRounds(c, d.name);
}

void Emitter::planAllReducePairs() {
  for (auto& f : p_.fused) {
    if (f.members.size() != 2) continue;
    int rs = p_.find(f.members[0]), ag = p_.find(f.members[1]);
    if (rs < 0 || ag < 0) continue;
    if (rs > ag) std::swap(rs, ag);
    const Stage& r = p_.stages[rs];
    const Stage& a = p_.stages[ag];
    if (r.kind != StageKind::ReduceScatter || a.kind != StageKind::AllGather || a.operands[0] != rs) continue;
    if (r.type.group != a.type.group || r.type.layout.dim != 0 || isUsed(p_, rs, {ag})) continue;
    arPair_[ag] = rs;
    unstored_.insert(rs);
  }
}

bool Emitter::oneElement(const TensorType& t) {
  for (auto& d : t.shape)
    if (d.constantValue() != 1) return false;
  return true;
}

bool Emitter::scalarChainStage(int id) const {
  const Stage& s = p_.stages[id];
  if (!oneElement(s.type) || runOf_.count(id) || rowGroupOf_.count(id) || devMembers_.count(id) || devGroups_.count(id) || chunked_.count(id) ||
      overlapped_.count(id) || bagOf_.count(id) || arPair_.count(id) || unstored_.count(id) || devFallbackOnly_.count(id))
    return false;
  if (s.kind == StageKind::Reduce) return foldedInto_.count(id) > 0;
  if (s.kind == StageKind::AllReduce)
    return (!s.type.group || s.type.group->depth == 0) && (s.op == ReduceOp::Sum || s.op == ReduceOp::Max || s.op == ReduceOp::Min) &&
           (s.type.dtype == DType::F16 || s.type.dtype == DType::BF16 || s.type.dtype == DType::F32) && algorithmOf(s) != "nccl" &&
           algorithmOf(s) != "ring";
  if (s.kind != StageKind::Compute) return false;
  for (auto& n : s.expr.nodes)
    if (n.op == EOp::Dropout) return false;  // its key is the element's index in its own map
  for (int o : s.operands)
    if (!oneElement(p_.stages[o].type)) return false;
  return true;
}

// Sends, and all_to_alls, that no overlap or pipeline moves: each one device kernel with a
// window of its own where every rank is load/store reachable (coconet_rt::dev_send_recv,
// dev_all_to_all), NCCL's calls elsewhere or with tune(X, algorithm = nccl).
void Emitter::planDeviceExchanges(StageKind kind, std::map<int, int>& windows) {
  if (!o_.deviceCollectives) return;
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (p_.stages[i].kind == kind && !overlapped_.count(static_cast<int>(i)) && !chunked_.count(static_cast<int>(i)) &&
        algorithmOf(p_.stages[i]) != "nccl")
      windows[static_cast<int>(i)] = devIndices_++;
}

void Emitter::planScalarChains() {
  if (!o_.deviceCollectives) return;
  auto flush = [&](std::vector<int>& c) {
    bool hasAR = false;
    for (int id : c) hasAR = hasAR || p_.stages[id].kind == StageKind::AllReduce;
    if (c.size() >= 2 && hasAR) {
      ScalarChain sc;
      sc.stages = c;
      std::set<int> in(c.begin(), c.end()), done;
      // List scheduling: everything ready but the allreduces, then one exchange of the ready allreduces.
      std::vector<int> left = c;
      auto ready = [&](int id) {
        for (int o : p_.stages[id].operands)
          if (in.count(o) && !done.count(o)) return false;
        return true;
      };
      while (!left.empty()) {
        bool moved = true;
        while (moved) {
          moved = false;
          for (size_t k = 0; k < left.size(); ++k)
            if (p_.stages[left[k]].kind != StageKind::AllReduce && ready(left[k])) {
              sc.order.push_back(left[k]);
              done.insert(left[k]);
              left.erase(left.begin() + static_cast<long>(k));
              moved = true;
              break;
            }
        }
        std::vector<int> ex;
        for (int id : left)
          if (p_.stages[id].kind == StageKind::AllReduce && ready(id)) ex.push_back(id);
        if (ex.empty()) break;  // cannot happen: the chain is in program order
        sc.order.push_back(-1 - static_cast<int>(sc.exchanges.size()));
        for (int id : ex) {
          done.insert(id);
          left.erase(std::find(left.begin(), left.end(), id));
        }
        sc.width = std::max(sc.width, ex.size());
        sc.exchanges.push_back(ex);
      }
      for (int id : c) {
        if (p_.stages[id].kind != StageKind::Reduce)  // a folded reduction reads its blocks' partials
          for (int o : p_.stages[id].operands)
            if (!in.count(o) && std::find(sc.ext.begin(), sc.ext.end(), o) == sc.ext.end()) sc.ext.push_back(o);
        if (neededOutside(id, in)) sc.written.push_back(id);
      }
      std::string name;
      for (int id : c) name += (name.empty() ? "" : ", ") + p_.stages[id].name;
      sc.name = "scalars " + name;
      sc.index = devIndices_++;
      for (int id : c) {
        scalarChainOf_[id] = c.front();
        devAR_.erase(id);
      }
      scalarChains_[c.front()] = std::move(sc);
    }
    c.clear();
  };
  std::vector<int> cur;
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const int id = static_cast<int>(i);
    const Stage& s = p_.stages[i];
    if (s.kind == StageKind::Input || s.kind == StageKind::State || inlinedInto_.count(id)) continue;  // no code here
    if (scalarChainStage(id)) cur.push_back(id);
    else flush(cur);
  }
  flush(cur);
}

void Emitter::planChainPrologues() {
  for (auto& [first, sc] : scalarChains_) {
    // The next stage that makes code must be a device group's first: nothing runs between them.
    int next = -1;
    for (size_t i = static_cast<size_t>(sc.stages.back()) + 1; i < p_.stages.size() && next < 0; ++i) {
      const StageKind k = p_.stages[i].kind;
      if (k != StageKind::Input && k != StageKind::State && !inlinedInto_.count(static_cast<int>(i))) next = static_cast<int>(i);
    }
    auto it = devGroups_.find(next);
    if (it == devGroups_.end()) continue;
    DevGroup& dg = it->second;
    if (dg.preloaded || dg.copyEngines || dg.chain >= 0 || dg.arHead) continue;  // (a kernel per round, inside an overlap, one-shot only)
    std::set<int> inside(dg.run.begin(), dg.run.end());
    inside.insert(dg.calc.begin(), dg.calc.end());
    if (dg.head()) inside.insert(dg.rs);
    if (dg.tail()) inside.insert(dg.ag);
    // Only the group reads the chain's values, one element each (its blocks take them from registers).
    bool ok = true;
    for (int w : sc.written) {
      ok = ok && !neededOutside(w, inside);
      if (auto k = dg.extIndex.find(w); k != dg.extIndex.end()) ok = ok && dg.acc[static_cast<size_t>(k->second)] == Access::Scalar;
    }
    if (!ok) continue;
    sc.into = next;
    dg.chain = first;
  }
}

void Emitter::scalarChainSignature(const ScalarChain& sc, bool folded, std::vector<std::string>& params,
                                   std::vector<std::string>& args) const {
  const std::string gi = std::to_string(sc.index);
  if (folded) {
    params.insert(params.end(), {"ncclWindow_t chainWin", "size_t chainHalf", "unsigned chainEpoch"});
    args.insert(args.end(), {"dev_->oneShot[" + gi + "].win", "dev_->parity[" + gi + "] * (dev_->oneShot[" + gi + "].bytes / 2)",
                             "dev_->epoch[" + gi + "]"});
  } else {
    params.insert(params.end(), {"ncclDevComm dc", "ncclWindow_t win", "size_t half"});
    args.insert(args.end(), {"dev_->dc.comm", "w.win", "dev_->parity[" + gi + "] * (w.bytes / 2)"});
  }
  // Folded, the group takes the chain's values from registers (planChainPrologues: nothing else
  // reads them; the NCCL fallback computes them again): no stores.
  if (!folded)
    for (int id : sc.written) {
      params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + "* __restrict__ out" + std::to_string(id));
      args.push_back(var(id));
    }
  for (int o : sc.ext) {
    params.push_back("const " + std::string(storageType(p_.stages[o].type.dtype)) + "* __restrict__ " + (folded ? "ca" : "a") +
                     std::to_string(o));
    args.push_back(var(o));
  }
  for (int id : sc.stages)
    if (p_.stages[id].kind == StageKind::Reduce) {
      const std::string f = std::to_string(id), op = reduceOpStruct(id);
      params.insert(params.end(), {"const " + op + "::Acc* __restrict__ part" + f, "int blocks" + f, "double count" + f});
      args.insert(args.end(), {"static_cast<const " + op + "::Acc*>(red" + f + "_.ptr)", foldBlocksVar(foldedInto_.at(id)), reduceCount(id)});
    }
  std::vector<int> computes;
  for (int id : sc.stages)
    if (p_.stages[id].kind == StageKind::Compute) computes.push_back(id);
  std::vector<std::string> rp, ra;
  runParams(computes, rp, ra);
  for (size_t k = 0; k < rp.size(); ++k)  // folded: the group may take the same parameter already
    if (std::find(params.begin(), params.end(), rp[k]) == params.end()) {
      params.push_back(rp[k]);
      args.push_back(ra[k]);
    }
  if (!folded) {
    params.push_back("unsigned long long seed");
    args.push_back("seed");
  }
}

std::string Emitter::scalarChainCode(const ScalarChain& sc, bool folded) {
  std::ostringstream K;
  K << "  const unsigned long long key = 0;\n  (void)key;\n";
  std::set<int> known;
  const std::string extPrefix = folded ? "ca" : "a";
  auto value = [&](int o) { return known.count(o) ? "r" + std::to_string(o) : "coconet_rt::to_f(" + extPrefix + std::to_string(o) + "[0])"; };
  auto storeAs = [&](int id, const std::string& v) {
    const std::string T = storageType(p_.stages[id].type.dtype), i = std::to_string(id);
    return "  const " + T + " s" + i + " = coconet_rt::Store<" + T + ">::from(static_cast<double>(" + v + "));\n  const auto r" + i +
           " = coconet_rt::to_f(s" + i + ");\n  (void)r" + i + ";\n";
  };
  auto isReduce = [&](int step) { return step >= 0 && p_.stages[step].kind == StageKind::Reduce; };
  for (size_t j = 0; j < sc.order.size(); ++j) {
    const int step = sc.order[j];
    if (isReduce(step)) {
      // Reductions next to each other in the chain read their partial results in one loop, so that
      // their loads are in flight together (each thread adds its partials in the same order as
      // alone: the same bits).
      size_t end = j;
      while (end < sc.order.size() && isReduce(sc.order[end])) ++end;
      std::string cond, body;
      for (size_t r = j; r < end; ++r) {
        const std::string f = std::to_string(sc.order[r]), op = reduceOpStruct(sc.order[r]);
        K << "  " << op << "::Acc acc" << f << " = " << op << "::init();\n";
        cond += (r > j ? " || q < blocks" : "q < blocks") + f;
        body += end - j == 1 ? "acc" + f + " = " + op + "::combine(acc" + f + ", part" + f + "[q]);"
                             : "\n    if (q < blocks" + f + ") acc" + f + " = " + op + "::combine(acc" + f + ", part" + f + "[q]);";
      }
      K << "  for (int q = threadIdx.x; " << cond << "; q += blockDim.x)" << (end - j == 1 ? " " + body + "\n" : " {" + body + "\n  }\n");
      // then over the block, in one tree pass for all of them (blockReduceEach: the same bits)
      const std::vector<int> run(sc.order.begin() + static_cast<long>(j), sc.order.begin() + static_cast<long>(end));
      std::vector<std::string> ops;
      for (int r : run) ops.push_back(reduceOpStruct(r));
      K << "  {\n" << blockReduceEachCode(run, ops, "    ") << "  }\n";
      for (size_t r = j; r < end; ++r) {
        const std::string f = std::to_string(sc.order[r]), op = reduceOpStruct(sc.order[r]);
        K << storeAs(sc.order[r], op + "::finish(acc" + f + ", count" + f + ")");
        known.insert(sc.order[r]);
      }
      j = end - 1;
    } else if (step >= 0) {
      std::map<int, int> ids;
      for (int o : p_.stages[step].operands) ids[o] = o;
      K << runMembers({step}, ids, {}, "  ", value, [](int) { return std::string(); }, /*uniqueNames=*/true);
      known.insert(step);
    } else {
      const int e = -1 - step;
      const auto& ex = sc.exchanges[static_cast<size_t>(e)];
      const std::string es = std::to_string(e), w = std::to_string(sc.width);
      const std::string region = "(" + es + " * P + me) * " + w;
      if (folded) {
        // The stores and the waits are spread over threads so that their round trips overlap: one
        // store per thread of block 0, and warp 0 of every block waits for 32 ranks' slots at a
        // time. (One thread storing and waiting for every slot in turn cost LAMB's step 6-9 us on
        // 4 H200.) The values are combined in rank order, so the results are the same bits on every
        // rank.
        const std::string n = std::to_string(ex.size());
        std::string pick;  // value k of the exchange
        for (size_t k = 0; k + 1 < ex.size(); ++k) pick += "k == " + std::to_string(k) + " ? " + value(p_.stages[ex[k]].operands[0]) + " : ";
        pick += value(p_.stages[ex.back()].operands[0]);
        K << "  // exchange " << e << ": block 0's threads store this rank's value(s), with this call's epoch, into its slot on\n"
          << "  // every rank; warp 0 of every block waits until each rank's slot holds this call's epoch and combines\n"
          << "  // them in rank order; the block takes the results from shared memory\n"
          << "  if (blockIdx.x == 0)\n";
        if (ex.size() == 1)
          K << "    for (int p = threadIdx.x; p < P; p += blockDim.x)\n"
            << "      coconet_rt::putEpochSlot(chainWin, chainHalf + (" << region << " + 0) * sizeof(unsigned long long), p, " << pick
            << ", chainEpoch);\n";
        else
          K << "    for (int t = threadIdx.x; t < P * " << n << "; t += blockDim.x) {\n"
            << "      const int p = t / " << n << ", k = t - p * " << n << ";\n"
            << "      coconet_rt::putEpochSlot(chainWin, chainHalf + (" << region << " + k) * sizeof(unsigned long long), p, " << pick
            << ", chainEpoch);\n"
            << "    }\n";
        K << "  const unsigned long long* slots" << e << " = static_cast<const unsigned long long*>(ncclGetLocalPointer(chainWin, chainHalf)) + "
          << es << " * P * " << w << ";\n"
          << "  __shared__ float xs" << e << "[" << n << "];\n"
          << "  if (threadIdx.x < 32) {\n";
        for (size_t k = 0; k < ex.size(); ++k) {
          const Stage& a = p_.stages[ex[k]];
          const bool sum = a.op == ReduceOp::Sum;  // as sumSlot: from 0, in rank order
          const std::string comb = sum ? "__fadd_rn(x, y)" : a.op == ReduceOp::Max ? "fmaxf(x, y)" : "fminf(x, y)";
          K << "    {\n      float x = 0.0f;\n"
            << "      for (int p0 = 0; p0 < P; p0 += 32) {\n"
            << "        const float yl = coconet_rt::laneSlot(slots" << e << ", P, " << w << ", " << k << ", p0, chainEpoch);\n"
            << "        for (int q = 0; q < 32 && p0 + q < P; ++q) {\n"
            << "          const float y = __shfl_sync(0xffffffffu, yl, q);\n"
            << "          x = " << (sum ? comb : "p0 + q == 0 ? y : " + comb) << ";\n"
            << "        }\n      }\n"
            << "      if (threadIdx.x == 0) xs" << e << "[" << k << "] = x;\n    }\n";
        }
        K << "  }\n  __syncthreads();\n";
        for (size_t k = 0; k < ex.size(); ++k) {
          const std::string i = std::to_string(ex[k]);
          K << "  const float x" << i << " = xs" << e << "[" << k << "];\n" << storeAs(ex[k], "x" + i);
          known.insert(ex[k]);
        }
        continue;
      }
      K << "  // exchange " << e << ": this rank's slot on every rank, a barrier, then every rank's slots in rank order\n"
        << "  if (threadIdx.x == 0)\n    for (int p = 0; p < P; ++p) {\n";
      for (size_t k = 0; k < ex.size(); ++k)
        K << "      *coconet_rt::peerPtr<float>(win, half + (" << region << " + " << k << ") * sizeof(float), p) = "
          << value(p_.stages[ex[k]].operands[0]) << ";\n";
      K << "    }\n  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
        << "  const float* slots" << e << " = static_cast<const float*>(ncclGetLocalPointer(win, half)) + " << e << " * P * " << w << ";\n";
      for (size_t k = 0; k < ex.size(); ++k) {
        const Stage& a = p_.stages[ex[k]];
        const std::string i = std::to_string(ex[k]);
        const bool sum = a.op == ReduceOp::Sum;  // as sumSlot: from 0, in rank order
        const std::string comb = sum ? "__fadd_rn(x" + i + ", y)" : a.op == ReduceOp::Max ? "fmaxf(x" + i + ", y)" : "fminf(x" + i + ", y)";
        auto slot = [&](const std::string& p) {
          return "slots" + es + "[" + (p == "0" ? std::to_string(k) : p + " * " + w + " + " + std::to_string(k)) + "]";
        };
        K << "  float x" << i << " = " << (sum ? "0.0f" : slot("0")) << ";\n"
          << "  for (int p = " << (sum ? 0 : 1) << "; p < P; ++p) {\n    const float y = " << slot("p") << ";\n    x" << i << " = " << comb
          << ";\n  }\n"
          << storeAs(ex[k], "x" + i);
        known.insert(ex[k]);
      }
    }
  }
  if (!folded && !sc.written.empty()) {
    K << "  if (threadIdx.x == 0) {\n";
    for (int id : sc.written) K << "    out" << id << "[0] = s" << id << ";\n";
    K << "  }\n";
  }
  return K.str();
}

void Emitter::emitScalarChain(const ScalarChain& sc) {
  auto& b = body_;
  const std::string kname = "k_" + std::to_string(sc.stages.front()) + "_scalars";
  const std::string gi = std::to_string(sc.index), name = "\"" + p_.stages[sc.stages.front()].name + "\"",
                    prog = "\"" + p_.name + "\"";
  // Where not every rank is load/store reachable: the stages one by one (closes the device branch).
  auto fallback = [&] {
    b << "  } else {\n    // not every rank is load/store reachable: the stages one by one\n";
    for (int id : sc.stages) {
      b << "    // " << p_.stages[id].name << "\n    if (" << countVar(id) << " > 0) {\n";
      emitIndented("  ", [&] { emitStage(id); });
      b << "    }\n";
    }
    b << "  }\n";
  };
  if (sc.into >= 0) {
    // Computed at the start of the next group's kernel (its arguments: devSignature): here its
    // window, zeroed when made (so that no slot holds a stale epoch), and this call's epoch and half.
    b << "\n  // " << sc.name << ": computed first in every block of fused group '" << devGroups_.at(sc.into).name
      << "''s kernel where every rank is load/store reachable (exchanges through slots holding value and epoch)\n"
      << "  if (devReady(" << name << (soloDevice() ? ", true" : "") << ")) {\n"
      << "    coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "    if (w.ensure(comm_, stream_, 2 * ((static_cast<size_t>(P_) * " << sc.exchanges.size() * sc.width
      << " * sizeof(unsigned long long) + 255) / 256 * 256), " << prog << ", " << name << ")) {\n"
      << "      dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      CHECK(cudaMemsetAsync(w.ptr, 0, w.bytes, stream_), " << name << ");\n"
      << "      coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, 0);  // zeroed on every rank\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "    }\n"
      << "    if (++dev_->epoch[" << gi << "] == 0) dev_->epoch[" << gi << "] = 1;  // (0: a slot never written)\n"
      << "    dev_->parity[" << gi << "] ^= 1;\n";
    fallback();
    return;
  }
  std::vector<std::string> params, args;
  scalarChainSignature(sc, false, params, args);
  // The kernel.
  auto& K = kernels_;
  // One block: its threads combine the blocks' partials (a serial loop over a few hundred of them
  // cost LAMB's step about 15 us on 4 H200); every thread then computes the
  // scalars (the same values), thread 0 alone stores to peers and to the outputs.
  K << "// " << sc.name << ": one block (partials combined by its threads); the allreduces as " << sc.exchanges.size()
    << " exchange(s) of up to " << sc.width << " value(s) through a symmetric window (two halves, parity)\n";
  for (int id : sc.stages) {
    const Stage& s = p_.stages[id];
    K << "// " << s.name << " = "
      << (s.kind == StageKind::Reduce ? std::string(reduceKindName(s.reduce)) + "(" + p_.stages[s.operands[0]].name + ") from its blocks' partials"
          : s.kind == StageKind::AllReduce ? std::string("allreduce(") + reduceOpName(s.op) + ", " + p_.stages[s.operands[0]].name + ")"
                                           : exprTextFor(s))
      << "\n";
  }
  K << "__global__ void " << kname << "(";
  for (size_t k = 0; k < params.size(); ++k) K << (k ? ", " : "") << params[k];
  K << ") {\n  (void)seed;\n"
    << "  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, 0};\n"
    << "  const int P = dc.lsaSize, me = dc.lsaRank;\n"
    << scalarChainCode(sc, false) << "}\n\n";
  // Host code.
  b << "\n  // " << sc.name << ": one kernel over NCCL's device API where every rank is load/store reachable\n"
    << "  if (devReady(" << name << (soloDevice() ? ", true" : "") << ")) {\n"
    << "    coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
    << "    if (w.ensure(comm_, stream_, 2 * ((static_cast<size_t>(P_) * " << sc.exchanges.size() * sc.width
    << " * sizeof(float) + 255) / 256 * 256), " << prog << ", " << name << "))\n"
    << "      dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "    " << kname << "<<<1, coconet_rt::kDevThreads, 0, stream_>>>(";
  for (size_t k = 0; k < args.size(); ++k) b << (k ? ", " : "") << args[k];
  b << ");\n    CHECK(cudaGetLastError(), " << name << ");\n"
    << "    dev_->parity[" << gi << "] ^= 1;\n";
  fallback();
}

bool Emitter::storedBefore(int id, int before) const {
  const StageKind k = p_.stages[id].kind;
  if (k == StageKind::Input || k == StageKind::State) return true;
  return id < before && !unstored_.count(id) && !inlinedInto_.count(id) && !bagOf_.count(id) && !devFallbackOnly_.count(id) &&
         !devMembers_.count(id) && !devGroups_.count(id) && !chunked_.count(id) && !overlapped_.count(id);
}

void Emitter::planFoldedReductions() {
  for (auto& [first, dg] : devGroups_) {
    if (dg.arHead) continue;  // (its one-shot form folds nothing)
    const Stage& ref = p_.stages[dg.ref];
    const int last = dg.tail() ? dg.ag : dg.run.back();
    for (size_t i = last + 1; i < p_.stages.size() && dg.folds.size() < kMaxFolds; ++i) {
      const Stage& r = p_.stages[i];
      const int rid = static_cast<int>(i);
      if (r.kind != StageKind::Reduce || bagReduce_.count(rid) || chunked_.count(rid) || overlapped_.count(rid) || foldedInto_.count(rid) ||
          rowGroupOf_.count(rid))
        continue;
      const int x = r.operands[0];
      const TensorType& xt = p_.stages[x].type;
      if (!(r.dim < 0 || xt.rank() == 1) || xt.shape != ref.type.shape || xt.layout != ref.type.layout || xt.group != ref.type.group)
        continue;
      // The reduced elements: computed (an inlined source) or a value the kernel has.
      std::vector<int> chain, leaves{x};
      if (auto is = inlineSrc_.find(rid); is != inlineSrc_.end()) {
        chain = is->second.chain;
        leaves = is->second.ext;
      }
      std::set<int> have(dg.run.begin(), dg.run.end());
      std::vector<int> added;
      bool ok = true;
      for (int o : leaves) {
        if (have.count(o) || dg.extIndex.count(o) || std::find(added.begin(), added.end(), o) != added.end()) continue;
        ok = ok && storedBefore(o, dg.first()) && accessOf(o, ref) != Access::Mapped;
        added.push_back(o);
      }
      if (!ok) continue;
      for (int o : added) {
        dg.extIndex[o] = static_cast<int>(dg.ext.size());
        dg.ext.push_back(o);
        dg.acc.push_back(accessOf(o, ref));
      }
      dg.calc.insert(dg.calc.end(), chain.begin(), chain.end());
      dg.folds.push_back(rid);
      foldedInto_[rid] = first;
    }
    if (dg.folds.empty()) continue;
    // Members that only folded reductions read are not stored (the NCCL fallback stores them).
    std::set<int> inside(dg.calc.begin(), dg.calc.end());
    inside.insert(dg.folds.begin(), dg.folds.end());
    if (dg.tail()) inside.insert(dg.ag);
    dg.written.clear();
    for (int id : dg.run)
      if (neededOutside(id, inside)) dg.written.push_back(id);
    std::vector<int> m;
    if (dg.head()) m.push_back(dg.rs);
    m.insert(m.end(), dg.run.begin(), dg.run.end());
    markFallbackOnly(m, dg);
  }
}

}  // namespace coconet::backend::detail
