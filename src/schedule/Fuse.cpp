// fuse: a group of stages runs as one kernel.
#include <algorithm>
#include <set>

#include "ir/Rewrite.h"
#include "schedule/Primitives.h"

namespace coconet::schedule {

using namespace ir;

bool fuse(StepContext& c) {
  // Step 1. Check every precondition.
  if (!c.expectShape({}, 2, -1, 1)) return false;
  Program& p = c.p;
  std::vector<int> ids;
  std::map<int, const Arg*> argOf;
  for (const Arg* a : c.positional()) {
    int id = c.stage(*a);
    if (id < 0) return false;
    const Stage& s = p.stages[id];
    if (argOf.count(id)) return c.fail(a, a->value, "it is listed twice");
    if (!s.fusedInto.empty()) return c.fail(a, s.name, "it is already fused into " + quote(s.fusedInto));
    argOf[id] = a;
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  const GroupInfo* group = nullptr;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Stage& s = p.stages[ids[i]];
    const Arg* a = argOf[ids[i]];
    bool first = i == 0, last = i + 1 == ids.size();
    switch (s.kind) {
      case StageKind::Compute:
      case StageKind::Softmax:
      case StageKind::Layernorm:
      case StageKind::Rmsnorm: break;
      case StageKind::Reduce:
        if (s.dim < 0)
          return c.fail(a, s.name,
                        "it reduces the whole tensor, which needs all of it; fuse takes "
                        "reductions over one dimension");
        break;
      case StageKind::AllToAll:
        if (!last) return c.fail(a, s.name, "an all_to_all can only end a fused group");
        break;
      case StageKind::ReduceScatter:
      case StageKind::AllReduce:
        if (!first) return c.fail(a, s.name, describe(s) + " can only start a fused group");
        break;
      case StageKind::AllGather:
        if (!last) return c.fail(a, s.name, "an all_gather can only end a fused group");
        break;
      default:
        return c.fail(a, s.name,
                      "it is " + describe(s) +
                          "; fuse takes element-wise computes, reductions over "
                          "one dimension and normalizations, after at most one reduce_scatter or allreduce and "
                          "before at most one all_gather or all_to_all");
    }
    if (s.type.group) {
      if (group && group != s.type.group)
        return c.fail(a, s.name, "it lives in group " + quote(s.type.group->name) + ", other members in " + quote(group->name));
      group = s.type.group;
    }
  }
  // Convexity: no outside stage between members both reads from and feeds the set.
  int lo = ids.front(), hi = ids.back();
  std::set<int> members(ids.begin(), ids.end());
  std::vector<bool> fromSet(p.stages.size(), false), toSet(p.stages.size(), false);
  for (int i = lo; i <= hi; ++i) {
    for (int o : p.stages[i].operands)
      if (members.count(o) || (o >= lo && fromSet[o])) fromSet[i] = true;
  }
  for (int i = hi; i >= lo; --i) {
    auto users = p.users();
    for (int u : users[i])
      if (u <= hi && (members.count(u) || toSet[u])) toSet[i] = true;
  }
  for (int i = lo; i <= hi; ++i)
    if (!members.count(i) && fromSet[i] && toSet[i])
      return c.fail(nullptr, "",
                    quote(p.stages[i].name) +
                        " runs between the stages: it reads one member and another "
                        "member reads it, so they cannot run as one kernel");
  std::string name = c.step.targets.empty() ? p.freshName("fused") : c.step.targets[0].value;

  // Step 2. Make the members contiguous: outside stages that do not depend on the set move
  // before it, the ones that do move after it.
  std::vector<int> order;
  for (int i = 0; i < lo; ++i) order.push_back(i);
  for (int i = lo; i <= hi; ++i)
    if (!members.count(i) && !fromSet[i]) order.push_back(i);
  for (int i : ids) order.push_back(i);
  for (int i = lo; i <= hi; ++i)
    if (!members.count(i) && fromSet[i]) order.push_back(i);
  for (int i = hi + 1; i < static_cast<int>(p.stages.size()); ++i) order.push_back(i);
  std::vector<std::string> memberNames;
  for (int i : ids) memberNames.push_back(p.stages[i].name);
  permuteStages(p, order);
  for (auto& n : memberNames) p.stages[p.find(n)].fusedInto = name;
  p.fused.push_back({name, memberNames, {}, c.step.loc});
  c.made = {name};
  return true;
}

}  // namespace coconet::schedule
