// Planning row groups (plan/Forms.h): which fused groups of element-wise members and reductions over
// the last dimension of one row shape run as one kernel, and why the others do not.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

namespace {

bool hasDropout(const Stage& s) {
  for (auto& n : s.expr.nodes)
    if (n.op == EOp::Dropout) return true;
  return false;
}

}  // namespace

std::optional<Emitter::RowGroup> Emitter::rowGroupOf(const FusedGroup& f, const std::vector<int>& m, std::string& why) const {
  // The members between the group's collectives.
  size_t lo = 0, hi = m.size();
  const StageKind k0 = p_.stages[m.front()].kind, k1 = p_.stages[m.back()].kind;
  if (k0 == StageKind::ReduceScatter || k0 == StageKind::AllReduce) ++lo;
  if (hi > lo && (k1 == StageKind::AllGather || k1 == StageKind::AllToAll)) --hi;
  RowGroup rg;
  rg.name = f.name;
  rg.members.assign(m.begin() + static_cast<long>(lo), m.begin() + static_cast<long>(hi));
  int firstReduce = -1;  // the first member reducing rows: a reduction or a normalization
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    if ((s.kind == StageKind::Reduce || isNormalizationKind(s.kind)) && firstReduce < 0) firstReduce = id;
    if (s.kind != StageKind::Compute && s.kind != StageKind::Reduce && !isNormalizationKind(s.kind))
      return std::nullopt;  // (fuse takes no other kinds)
  }
  if (firstReduce < 0) return std::nullopt;  // element-wise only: planRuns
  const Stage& r0 = p_.stages[firstReduce];
  const TensorType& rowT = p_.stages[r0.operands[0]].type;
  const int rank = rowT.rank();
  auto fail = [&](const std::string& w) -> std::optional<RowGroup> {
    why = w;
    return std::nullopt;
  };
  if (rank < 1 || (r0.kind == StageKind::Reduce && r0.dim != rank - 1))
    return fail(quote(r0.name) + " reduces dimension " + std::to_string(r0.dim) + " of its operand, not the last");
  Shape keep = rowT.shape, drop = rowT.shape;
  keep.back() = SizeExpr::constant(1);
  drop.pop_back();
  if (rowT.group && rowT.layout.kind == Layout::Sliced && rowT.layout.dim != 0)
    return fail("its rows are sliced along dimension " + std::to_string(rowT.layout.dim));
  if (rank == 1 && rowT.group && rowT.layout.kind == Layout::Sliced) return fail("its rows are sliced");
  std::set<int> in(rg.members.begin(), rg.members.end());
  auto isRowValue = [&](int id) { return in.count(id) && !rg.elems.count(id); };
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    if (s.type.group != rowT.group) return fail(quote(s.name) + " lives in another group than the rows");
    if (s.kind == StageKind::Reduce) {
      const TensorType& xt = p_.stages[s.operands[0]].type;
      if (plan_.bagReduce.count(id)) return fail(quote(s.name) + " is an embedding bag");
      if (xt.shape != rowT.shape || xt.layout != rowT.layout || s.dim != rank - 1)
        return fail(quote(s.name) + " does not reduce the last dimension of the rows");
      if (in.count(s.operands[0]) && !rg.elems.count(s.operands[0])) return fail(quote(s.name) + " reduces a row value");
      continue;
    }
    if (isNormalizationKind(s.kind)) {  // an element member whose rows' statistics take passes of their own
      const TensorType& xt = p_.stages[s.operands[0]].type;
      if (xt.shape != rowT.shape || xt.layout != rowT.layout) return fail(quote(s.name) + " normalizes other rows than the group's");
      rg.elems.insert(id);
      continue;
    }
    if (s.type.shape == rowT.shape) {
      if (s.type.layout != rowT.layout) return fail(quote(s.name) + " has another layout than the rows");
      rg.elems.insert(id);
    } else if (s.type.shape == keep || s.type.shape == drop) {
      if (hasDropout(s)) return fail(quote(s.name) + " draws dropout on row values");
    } else {
      return fail(quote(s.name) + " is " + s.type.str() + ", neither the rows' shape nor one value a row");
    }
  }
  // The reference stage of the row shape, and every operand from outside.
  rg.ref = rg.elems.empty() ? r0.operands[0] : *rg.elems.begin();
  const Stage& ref = p_.stages[rg.ref];
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    const bool elem = rg.elems.count(id) > 0;
    for (int o : s.operands) {
      if (in.count(o)) {
        if (elem && isRowValue(o) && p_.stages[o].type.shape != keep)
          return fail(quote(s.name) + " reads the row value " + quote(p_.stages[o].name) + " without its last dimension");
        continue;
      }
      // Element code (element members, the reductions) reads at the element's index, modulo a
      // length, one scalar, or one value a row ([..., 1]: at the row's index); a row value reads
      // one scalar or one value a row ([..., 1] or [...]). Each operand is read one way.
      const TensorType& ot = p_.stages[o].type;
      const bool rowValue = !elem && s.kind == StageKind::Compute;
      Access a = accessOf(o, ref);
      const bool wholeOrSame = ot.layout == rowT.layout || !ot.group || ot.layout.kind != Layout::Sliced;
      if (a != Access::Scalar && (rowBroadcast(ot, rowT) || (rowValue && ot.shape == drop && wholeOrSame))) a = Access::Row;
      if (a == Access::Mapped || (rowValue && a != Access::Scalar && a != Access::Row))
        return fail(quote(s.name) + " reads " + quote(p_.stages[o].name) + " other than at its " +
                    (rowValue ? "row's index" : "elements' index"));
      if (auto it = rg.extIndex.find(o); it != rg.extIndex.end()) {
        if (rg.acc[static_cast<size_t>(it->second)] != a) return fail(quote(p_.stages[o].name) + " is read both per row and per element");
        continue;
      }
      rg.extIndex[o] = static_cast<int>(rg.ext.size());
      rg.ext.push_back(o);
      rg.acc.push_back(a);
    }
  }
  for (int id : rg.members)
    if (neededOutside(id, in)) rg.written.push_back(id);
  return rg;
}

void Emitter::planRowGroups() {
  for (auto& f : p_.fused) {
    std::vector<int> m;
    for (auto& n : f.members) m.push_back(p_.find(n));
    std::sort(m.begin(), m.end());
    if (m.empty() || m.front() < 0) continue;
    std::string why;
    auto rg = rowGroupOf(f, m, why);
    if (!rg) {
      if (!why.empty()) plan_.rowGroupWhyNot[f.name] = why;
      continue;
    }
    const int first = rg->members.front();
    std::set<int> written(rg->written.begin(), rg->written.end());
    for (int id : rg->members) {
      plan_.rowGroupOf[id] = first;
      if (!written.count(id)) plan_.unstored.insert(id);
    }
    plan_.rowGroups[first] = std::move(*rg);
  }
}

void Emitter::warnUnfusedRowGroups() {
  if (!o_.diags) return;
  for (auto& [name, why] : plan_.rowGroupWhyNot) {
    const FusedGroup* f = p_.findFused(name);
    bool taken = false;  // another form runs the group (an overlap's chunks, a device kernel)
    for (auto& n : f->members) {
      const int id = p_.find(n);
      taken = taken || plan_.overlapped.count(id) || plan_.chunked.count(id) || plan_.devMembers.count(id) || plan_.devGroups.count(id);
    }
    if (!taken) o_.diags->warning(f->loc, "fused group " + quote(name) + " runs stage by stage in the CUDA backend: " + why, 4);
  }
}

}  // namespace coconet::backend::detail
