// split: allreduce -> reduce_scatter + all_gather.
#include "ir/Rewrite.h"
#include "schedule/Primitives.h"

namespace coconet::schedule {

using namespace ir;

bool split(StepContext& c) {
  // Step 1. Check every precondition.
  if (!c.expectShape({}, 1, 1, 2)) return false;
  const Arg& a = *c.positional()[0];
  int id = c.stage(a);
  if (id < 0) return false;
  const Stage& ar = c.p.stages[id];
  if (ar.kind != StageKind::AllReduce) return c.fail(&a, a.value, "it is " + describe(ar) + ", not an allreduce");
  if (ar.type.rank() == 0) return c.fail(&a, a.value, "it reduces a scalar, which cannot be scattered");
  if (!ar.fusedInto.empty()) return c.fail(&a, a.value, "it is fused into " + quote(ar.fusedInto) + "; split before fusing");
  if (!ar.knobs.empty()) {
    // Knobs of an allreduce (its algorithm, its blocks) mean nothing for the two halves: say so
    // rather than drop them.
    return c.fail(&a, a.value,
                  "it carries tune knobs (" + ar.knobs.str() + "); split before tune, then tune the halves or their fused group");
  }
  for (auto& o : c.p.overlaps)
    if (o.consumer == ar.name) return c.fail(&a, a.value, "it is overlapped with " + quote(o.producer) + "; split before overlapping");
  std::string rsName = c.step.targets.size() > 0 ? c.step.targets[0].value : c.p.freshName(ar.name + ".rs");
  std::string agName = c.step.targets.size() > 1 ? c.step.targets[1].value : c.p.freshName(ar.name + ".ag");
  if (rsName == agName) return c.fail(&c.step.targets[1], "", "the two names must differ");

  // Step 2. Rewrite: the allreduce's slot becomes the reduce_scatter; the all_gather follows.
  std::string old = ar.name;
  Stage rs = ar;
  rs.kind = StageKind::ReduceScatter;
  rs.name = rsName;
  rs.dim = 0;
  rs.type.layout = Layout::sliced(0);
  rs.fusedInto.clear();
  Stage ag;
  ag.kind = StageKind::AllGather;
  ag.name = agName;
  ag.type = ar.type;
  ag.dim = 0;
  ag.operands = {id};
  ag.loc = ar.loc;
  SizeExpr rows = ar.type.shape[0], groupSize = ar.type.group->size;
  c.p.stages[id] = std::move(rs);
  insertStage(c.p, id + 1, std::move(ag));
  replaceUses(c.p, id, id + 1, {id + 1});
  if (old != rsName && old != agName) c.p.aliases[old] = agName;
  requireDivisible(c.p, rows, groupSize, "split of " + quote(old) + " scatters dimension 0 over " + quote(c.p.stages[id].type.group->name),
                   c.step.loc, /*even=*/true);
  c.made = {rsName, agName};
  return true;
}

}  // namespace coconet::schedule
