// Planning element-wise runs (a fused group's members as one kernel) and results written
// straight where the caller keeps them.
#include "backend/CudaEmitter.h"
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include "backend/Emitter.h"
#include "support/Files.h"

namespace coconet::backend::detail {

void Emitter::planRuns() {
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    if (s.kind != StageKind::Compute || s.fusedInto.empty() || plan_.runOf.count(static_cast<int>(i)) ||
        plan_.rowGroupOf.count(static_cast<int>(i)))
      continue;
    std::vector<int> run{static_cast<int>(i)};
    for (size_t j = i + 1; j < p_.stages.size(); ++j) {
      const Stage& t = p_.stages[j];
      if (t.kind != StageKind::Compute || t.fusedInto != s.fusedInto || t.type.shape != s.type.shape ||
          plan_.rowGroupOf.count(static_cast<int>(j)) || t.type.layout != s.type.layout || t.type.group != s.type.group)
        break;
      run.push_back(static_cast<int>(j));
    }
    if (run.size() < 2) continue;
    for (int id : run) plan_.runOf[id] = run;
    std::set<int> inRun(run.begin(), run.end());
    for (int id : run)
      if (!neededOutside(id, inRun)) plan_.unstored.insert(id);
  }
}

void Emitter::planDirect() {
  for (auto& st : p_.states) {
    int x = st.exit;
    if (x == st.entry || plan_.direct.count(x) || plan_.unstored.count(x)) continue;
    const Stage& ex = p_.stages[x];
    if (ex.kind == StageKind::Input || ex.kind == StageKind::State) continue;
    if (ex.type.shape != st.type.shape || ex.type.layout != st.type.layout || ex.type.group != st.type.group) continue;
    const std::vector<int>* run = nullptr;
    if (auto r = plan_.runOf.find(x); r != plan_.runOf.end()) run = &r->second;
    bool safe = true, sameKernel = false;
    for (size_t i = 0; i < p_.stages.size() && safe; ++i)
      for (int o : p_.stages[i].operands) {
        if (o != st.entry) continue;
        int ri = static_cast<int>(i);
        bool inKernel = ri == x || (run && std::find(run->begin(), run->end(), ri) != run->end());
        if (inKernel && ex.kind == StageKind::Compute) {
          // Same element only: the entry has the exit's type, so its index map is the identity.
          if (p_.stages[st.entry].type.shape != ex.type.shape) safe = false;
          sameKernel = true;
        } else if (ri >= x || (run && ri >= run->front())) {
          safe = false;
        }
      }
    if (!safe) continue;
    plan_.direct[x] = {st.name, "the storage of state '" + st.name + "'"};
    if (sameKernel) plan_.aliased.insert(st.entry);
  }
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    int x = p_.outputs[i];
    const Stage& ex = p_.stages[x];
    if (plan_.direct.count(x) || plan_.unstored.count(x) || ex.kind == StageKind::Input || ex.kind == StageKind::State) continue;
    plan_.direct[x] = {p_.outputNames[i], "output '" + p_.outputNames[i] + "'"};
  }
}

}  // namespace coconet::backend::detail
