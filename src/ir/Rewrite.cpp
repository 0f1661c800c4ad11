#include "ir/Rewrite.h"

#include <algorithm>
#include <set>

namespace coconet::ir {

static void remap(Program& p, const std::vector<int>& to) {
  for (auto& s : p.stages)
    for (auto& o : s.operands) o = to[o];
  for (auto& o : p.outputs) o = to[o];
  for (auto& st : p.states) {
    st.entry = to[st.entry];
    st.exit = to[st.exit];
  }
}

int insertStage(Program& p, int pos, Stage s) {
  std::vector<int> to(p.stages.size());
  for (size_t i = 0; i < to.size(); ++i) to[i] = static_cast<int>(i) + (static_cast<int>(i) >= pos ? 1 : 0);
  remap(p, to);
  p.stages.insert(p.stages.begin() + pos, std::move(s));
  return pos;
}

void replaceUses(Program& p, int from, int to, const std::vector<int>& keep) {
  for (size_t i = 0; i < p.stages.size(); ++i) {
    if (std::find(keep.begin(), keep.end(), static_cast<int>(i)) != keep.end()) continue;
    for (auto& o : p.stages[i].operands)
      if (o == from) o = to;
  }
  for (auto& o : p.outputs)
    if (o == from) o = to;
  for (auto& st : p.states)
    if (st.exit == from) st.exit = to;
}

void eraseStages(Program& p, std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::set<std::string> names;
  for (int id : ids) names.insert(p.stages[id].name);
  std::vector<int> to(p.stages.size(), -1);
  std::vector<Stage> kept;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    if (std::binary_search(ids.begin(), ids.end(), static_cast<int>(i))) continue;
    to[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(p.stages[i]));
  }
  p.stages = std::move(kept);
  remap(p, to);
  for (auto& s : p.stages)
    for (int o : s.operands)
      if (o < 0) internalError("IR rewrite: erased a stage that is still read by '" + s.name + "'");
  for (auto& f : p.fused)
    f.members.erase(std::remove_if(f.members.begin(), f.members.end(), [&](const std::string& m) { return names.count(m) > 0; }),
                    f.members.end());
  // A group left with one member (its others were dead) is no group.
  for (auto& f : p.fused)
    if (f.members.size() == 1)
      if (int id = p.find(f.members[0]); id >= 0) p.stages[id].fusedInto.clear();
  p.fused.erase(std::remove_if(p.fused.begin(), p.fused.end(), [](const FusedGroup& f) { return f.members.size() < 2; }), p.fused.end());
}

void permuteStages(Program& p, const std::vector<int>& order) {
  std::vector<int> to(p.stages.size());
  std::vector<Stage> ns;
  for (size_t i = 0; i < order.size(); ++i) {
    to[order[i]] = static_cast<int>(i);
    ns.push_back(std::move(p.stages[order[i]]));
  }
  p.stages = std::move(ns);
  remap(p, to);
  for (size_t i = 0; i < p.stages.size(); ++i)
    for (int o : p.stages[i].operands)
      if (o >= static_cast<int>(i)) internalError("IR rewrite: a permutation put a stage before its operand");
}

bool isUsed(const Program& p, int id, const std::set<int>& except) {
  for (size_t i = 0; i < p.stages.size(); ++i)
    if (!except.count(static_cast<int>(i)))
      for (int o : p.stages[i].operands)
        if (o == id) return true;
  for (int o : p.outputs)
    if (o == id) return true;
  for (auto& st : p.states)
    if (st.exit == id) return true;
  return false;
}

std::vector<std::string> eliminateDeadStages(Program& p) {
  std::vector<std::string> removed;
  for (;;) {
    std::vector<int> dead;
    for (size_t i = 0; i < p.stages.size(); ++i) {
      auto k = p.stages[i].kind;
      if (k == StageKind::Input || k == StageKind::State) continue;
      if (!isUsed(p, static_cast<int>(i))) dead.push_back(static_cast<int>(i));
    }
    if (dead.empty()) break;
    for (int d : dead) removed.push_back(p.stages[d].name);
    eraseStages(p, dead);
  }
  // Aliases to removed stages go too.
  for (auto it = p.aliases.begin(); it != p.aliases.end();) it = p.resolve(it->first) < 0 ? p.aliases.erase(it) : std::next(it);
  return removed;
}

// ---- The forward of a backward program that saves ---------------------------------------------
Program saving(const Program& p, const Program& backward) {
  Program f = clone(p);
  for (auto& name : backward.savedInputs) {
    if (std::find(f.outputNames.begin(), f.outputNames.end(), name) != f.outputNames.end()) continue;
    const int j = f.find(name);
    COCONET_ASSERT(j >= 0, "saving: '" + name + "' is not a value of '" + p.name + "'");
    f.outputs.push_back(j);
    f.outputNames.push_back(name);
    ++f.savedOutputs;
  }
  return f;
}

}  // namespace coconet::ir
