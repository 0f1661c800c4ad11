// Planning reductions: embedding bags (the lookups gathered inside the reduction) and element-wise
// chains computed inside the reduction that reads them.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

void Emitter::planBags() {
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& r = p_.stages[i];
    if (r.kind != StageKind::Reduce || r.dim < 0) continue;
    int e = r.operands[0];
    const Stage& es = p_.stages[e];
    if (es.kind != StageKind::Embedding || r.dim >= es.type.rank() - 1) continue;  // an index dimension, not D
    if (isUsed(p_, e, {static_cast<int>(i)})) continue;                            // rows used elsewhere too
    plan_.bagOf[e] = static_cast<int>(i);
    plan_.bagReduce[static_cast<int>(i)] = e;
  }
}

bool Emitter::inlinable(int id, int consumer) const {
  const Stage& c = p_.stages[id];
  if (c.kind != StageKind::Compute || !c.fusedInto.empty() || plan_.runOf.count(id) || plan_.direct.count(id) || plan_.unstored.count(id) ||
      plan_.chunked.count(id) || plan_.overlapped.count(id) || plan_.devMembers.count(id) || plan_.bagOf.count(id) ||
      plan_.devFallbackOnly.count(id) || plan_.inlinedInto.count(id))
    return false;
  if (c.type.group && c.type.layout.kind == Layout::Sliced && c.type.layout.dim != 0) return false;
  return !isUsed(p_, id, {consumer});
}

void Emitter::planInlinedReductions() {
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& r = p_.stages[i];
    const int rid = static_cast<int>(i);
    if (r.kind != StageKind::Reduce || plan_.bagReduce.count(rid) || plan_.chunked.count(rid) || plan_.overlapped.count(rid) ||
        plan_.rowGroupOf.count(rid))
      continue;
    const int x = r.operands[0];
    if (!inlinable(x, rid)) continue;
    const TensorType& xt = p_.stages[x].type;
    std::set<int> chain{x};
    std::vector<int> work{x};
    while (!work.empty()) {
      int c = work.back();
      work.pop_back();
      for (int o : p_.stages[c].operands) {
        const TensorType& ot = p_.stages[o].type;
        if (!chain.count(o) && ot.shape == xt.shape && ot.layout == xt.layout && ot.group == xt.group && inlinable(o, c)) {
          chain.insert(o);
          work.push_back(o);
        }
      }
    }
    InlineSrc is;
    is.chain.assign(chain.begin(), chain.end());
    bool ok = true;
    for (int id : is.chain)
      for (int o : p_.stages[id].operands)
        if (!chain.count(o) && !is.extIndex.count(o)) {
          is.extIndex[o] = static_cast<int>(is.ext.size());
          is.ext.push_back(o);
          is.acc.push_back(accessOf(o, p_.stages[x]));
          ok = ok && is.acc.back() != Access::Mapped;
        }
    if (!ok) continue;
    for (int id : is.chain) plan_.inlinedInto[id] = rid;
    plan_.inlineSrc[rid] = std::move(is);
  }
}

}  // namespace coconet::backend::detail
