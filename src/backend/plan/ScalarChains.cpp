// Planning scalar chains (one-element stages as one single-thread kernel, or the prologue of a
// device group's kernel) and reductions folded into a device group's kernel.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

bool Emitter::oneElement(const TensorType& t) {
  for (auto& d : t.shape)
    if (d.constantValue() != 1) return false;
  return true;
}

bool Emitter::scalarChainStage(int id) const {
  const Stage& s = p_.stages[id];
  if (!oneElement(s.type) || plan_.runOf.count(id) || plan_.rowGroupOf.count(id) || plan_.devMembers.count(id) ||
      plan_.devGroups.count(id) || plan_.chunked.count(id) || plan_.overlapped.count(id) || plan_.bagOf.count(id) ||
      plan_.arPair.count(id) || plan_.unstored.count(id) || plan_.devFallbackOnly.count(id))
    return false;
  if (s.kind == StageKind::Reduce) return plan_.foldedInto.count(id) > 0;
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
      sc.index = plan_.devIndices++;
      for (int id : c) {
        plan_.scalarChainOf[id] = c.front();
        plan_.devAR.erase(id);
      }
      plan_.scalarChains[c.front()] = std::move(sc);
    }
    c.clear();
  };
  std::vector<int> cur;
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const int id = static_cast<int>(i);
    const Stage& s = p_.stages[i];
    if (s.kind == StageKind::Input || s.kind == StageKind::State || plan_.inlinedInto.count(id)) continue;  // no code here
    if (scalarChainStage(id))
      cur.push_back(id);
    else
      flush(cur);
  }
  flush(cur);
}

void Emitter::planChainPrologues() {
  for (auto& [first, sc] : plan_.scalarChains) {
    // The next stage that makes code must be a device group's first: nothing runs between them.
    int next = -1;
    for (size_t i = static_cast<size_t>(sc.stages.back()) + 1; i < p_.stages.size() && next < 0; ++i) {
      const StageKind k = p_.stages[i].kind;
      if (k != StageKind::Input && k != StageKind::State && !plan_.inlinedInto.count(static_cast<int>(i))) next = static_cast<int>(i);
    }
    auto it = plan_.devGroups.find(next);
    if (it == plan_.devGroups.end()) continue;
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

bool Emitter::storedBefore(int id, int before) const {
  const StageKind k = p_.stages[id].kind;
  if (k == StageKind::Input || k == StageKind::State) return true;
  return id < before && !plan_.unstored.count(id) && !plan_.inlinedInto.count(id) && !plan_.bagOf.count(id) &&
         !plan_.devFallbackOnly.count(id) && !plan_.devMembers.count(id) && !plan_.devGroups.count(id) && !plan_.chunked.count(id) &&
         !plan_.overlapped.count(id);
}

void Emitter::planFoldedReductions() {
  for (auto& [first, dg] : plan_.devGroups) {
    if (dg.arHead) continue;  // (its one-shot form folds nothing)
    const Stage& ref = p_.stages[dg.ref];
    const int last = dg.tail() ? dg.ag : dg.run.back();
    for (size_t i = last + 1; i < p_.stages.size() && dg.folds.size() < kMaxFolds; ++i) {
      const Stage& r = p_.stages[i];
      const int rid = static_cast<int>(i);
      if (r.kind != StageKind::Reduce || plan_.bagReduce.count(rid) || plan_.chunked.count(rid) || plan_.overlapped.count(rid) ||
          plan_.foldedInto.count(rid) || plan_.rowGroupOf.count(rid))
        continue;
      const int x = r.operands[0];
      const TensorType& xt = p_.stages[x].type;
      if (!(r.dim < 0 || xt.rank() == 1) || xt.shape != ref.type.shape || xt.layout != ref.type.layout || xt.group != ref.type.group)
        continue;
      // The reduced elements: computed (an inlined source) or a value the kernel has.
      std::vector<int> chain, leaves{x};
      if (auto is = plan_.inlineSrc.find(rid); is != plan_.inlineSrc.end()) {
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
      plan_.foldedInto[rid] = first;
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
