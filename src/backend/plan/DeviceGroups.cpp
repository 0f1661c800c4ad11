// Planning collectives over NCCL's device API: which fused groups become one device kernel
// (and in which forms), which allreduces, [reduce_scatter, all_gather] pairs, sends and
// all_to_alls run over the device API.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

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
    if (id != dg.ag && !plan_.direct.count(id) && !plan_.unstored.count(id) && !plan_.bagOf.count(id) &&
        std::find(dg.written.begin(), dg.written.end(), id) == dg.written.end())
      plan_.devFallbackOnly.insert(id);
}

std::string Emitter::fallbackStorage(const std::vector<int>& ids, const std::string& ind) const {
  std::string text;
  for (int id : ids)
    if (plan_.devFallbackOnly.count(id))
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
  dg.rounds = knobs.number(Knob::Rounds).value_or(0);  // 0: chosen by size at run time (devRounds)
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
    for (int id : m) taken = taken || plan_.overlapped.count(id) || plan_.chunked.count(id) || plan_.arPair.count(id);
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
          plan_.arGroupNotes[dg.rs] =
              "tune(" + dg.name + ", algorithm = two_shot) is not taken: " + why + "; the allreduce, then the members";
          warnKnob(
              dg.name, "algorithm",
              "tune knob 'algorithm = two_shot' is not taken on " + quote(dg.name) + ": " + why + "; the allreduce runs, then the members");
        }
        continue;
      }
    }
    dg.index = plan_.devIndices++;
    markFallbackOnly(m, dg);
    plan_.devGroups[dg.first()] = dg;
    for (size_t k = 1; k < m.size(); ++k) plan_.devMembers.insert(m[k]);
  }
}

std::string Emitter::oneShotObstacle(const DevGroup& dg) const {
  if (!(dg.full() || dg.arHead)) return "it does not run from a reduce_scatter to an all_gather";
  if (!dg.folds.empty()) return "reduction '" + p_.stages[dg.folds.front()].name + "' is folded into its kernel";
  if (dg.chain >= 0) return "scalar chain '" + plan_.scalarChains.at(dg.chain).name + "' runs in its kernel";
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

std::string Emitter::twoShotObstacle(const DevGroup& dg) const {
  if (!dg.arHead) return "it does not start with an allreduce";
  if (oneShotAsked(dg) || dg.algo == "copy_engines") return "tune(" + dg.name + ", algorithm = " + dg.algo + ") asks for another form";
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
  t.epilogueRounds = true;  // (rounds by size unless tune(f, rounds) sets them)
  readRoundKnobs(groupKnobs(p_.stages[dg.rs]), t);
  t.kernelTag = "_pass";  // (blocks, gather, tailPieces: read by emitChunked on the overlap's group only)
  return t;
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
    if (plan_.overlapped.count(id) || plan_.chunked.count(id)) continue;
    DevAllReduce d;
    if (s.kind == StageKind::AllReduce && fits(s)) {
      d.in = s.operands[0];
      d.name = s.name;
    } else if (auto pr = plan_.arPair.find(id); pr != plan_.arPair.end() && fits(p_.stages[pr->second]) &&
                                                !plan_.overlapped.count(pr->second) && !plan_.chunked.count(pr->second)) {
      d.in = p_.stages[pr->second].operands[0];
      d.name = s.fusedInto.empty() ? s.name : s.fusedInto;
    } else {
      continue;
    }
    d.algo = algorithmOf(s);
    if (d.algo == "nccl" || d.algo == "ring") continue;  // NCCL's algorithms asked for
    d.rounds = (s.knobs.has(Knob::Rounds) ? s.knobs : groupKnobs(s)).number(Knob::Rounds).value_or(2);
    d.out = id;
    d.index = plan_.devIndices++;
    plan_.devAR[id] = d;
  }
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
    plan_.arPair[ag] = rs;
    plan_.unstored.insert(rs);
  }
}

// Sends, and all_to_alls, that no overlap or pipeline moves: each one device kernel with a
// window of its own where every rank is load/store reachable (coconet_rt::dev_send_recv,
// dev_all_to_all), NCCL's calls elsewhere or with tune(X, algorithm = nccl).
void Emitter::planDeviceExchanges(StageKind kind, std::map<int, int>& windows) {
  if (!o_.deviceCollectives) return;
  for (size_t i = 0; i < p_.stages.size(); ++i)
    if (p_.stages[i].kind == kind && !plan_.overlapped.count(static_cast<int>(i)) && !plan_.chunked.count(static_cast<int>(i)) &&
        algorithmOf(p_.stages[i]) != "nccl")
      windows[static_cast<int>(i)] = plan_.devIndices++;
}

}  // namespace coconet::backend::detail
