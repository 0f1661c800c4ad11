// slice: keep optimizer state sliced(0) between runs (ZeRO-style memory saving).
#include <algorithm>
#include <set>

#include "ir/Rewrite.h"
#include "schedule/Primitives.h"

namespace coconet::schedule {

using namespace ir;

bool sliceState(StepContext& c) {
  // Step 1. Check every precondition.
  if (!c.expectShape({}, 1, -1, 0)) return false;
  Program& p = c.p;
  auto users = p.users();
  struct Change {
    StateInfo* st;
    int newExit;
  };
  std::vector<Change> changes;
  std::set<std::string> seen;
  for (const Arg* a : c.positional()) {
    StateInfo* st = nullptr;
    for (auto& s : p.states)
      if (s.name == a->value) st = &s;
    if (!st) {
      int id = p.resolve(a->value);
      return c.fail(a, a->value,
                    id >= 0 ? "it is " + describe(p.stages[id]) + ", not a state" : "there is no state named " + quote(a->value));
    }
    if (!seen.insert(st->name).second) return c.fail(a, a->value, "it is listed twice");
    const TensorType& t = st->type;
    if (t.layout.kind == Layout::Sliced) return c.fail(a, a->value, "it is already " + t.layout.str());
    if (t.layout.kind == Layout::Local) return c.fail(a, a->value, "it is local: each rank's value differs, so there is nothing to share");
    if (t.rank() == 0) return c.fail(a, a->value, "it is a scalar");
    if (t.group != p.world()) return c.fail(a, a->value, "it lives in group " + quote(t.group->name) + ", not the world");
    // Every reader of the entry value must read it on slices of dimension 0.
    for (int u : users[st->entry]) {
      const Stage& us = p.stages[u];
      int want = us.kind == StageKind::Reduce ? -2 : us.type.rank() - t.rank();  // aligned dimension 0
      bool onSlices = us.type.group && us.type.layout.kind == Layout::Sliced && us.type.layout.dim == want;
      if (us.kind == StageKind::Reduce) onSlices = us.type.layout.kind == Layout::Local;
      if (!onSlices)
        return c.fail(a, a->value, quote(us.name) + " reads the whole of " + quote(st->name) + "; reorder it onto slices first");
    }
    // Its new value: computed on slices, possibly then gathered.
    int exit = st->exit;
    if (exit != st->entry) {
      const Stage& es = p.stages[exit];
      if (es.kind == StageKind::AllGather && p.stages[es.operands[0]].type.layout == Layout::sliced(0))
        exit = es.operands[0];
      else if (!(es.type.group && es.type.layout == Layout::sliced(0)))
        return c.fail(a, a->value,
                      "its new value " + quote(es.name) + " is " + describe(es) +
                          " computed whole; "
                          "reorder it onto slices first");
    }
    changes.push_back({st, exit});
  }
  // Step 2. The state and its entry value become sliced(0); the new value is stored sliced.
  for (auto& ch : changes) {
    ch.st->type.layout = Layout::sliced(0);
    p.stages[ch.st->entry].type.layout = Layout::sliced(0);
    if (ch.st->exit != ch.st->entry) ch.st->exit = ch.newExit;
    requireDivisible(p, ch.st->type.shape[0], p.world()->size, "state " + quote(ch.st->name) + " is sliced over 'world'", c.step.loc,
                     /*even=*/true);
  }
  return true;
}

}  // namespace coconet::schedule
