// tune: knobs for the backend, stored as plain data.
#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "schedule/Primitives.h"

namespace coconet::schedule {

bool tune(StepContext& c) {
  std::vector<std::string> names;  // the schema's knobs
  for (const ir::KnobSpec& spec : ir::knobSchema()) names.push_back(spec.name);
  if (!c.expectShape(names, 1, 1, 0)) return false;
  const Arg& a = *c.positional()[0];
  ir::FusedGroup* group = nullptr;
  for (auto& f : c.p.fused)
    if (f.name == a.value) group = &f;
  int id = -1;
  if (!group && (id = c.stage(a)) < 0) return false;
  std::map<ir::Knob, std::pair<ir::KnobValue, SourceLoc>> knobs;
  for (auto& k : c.step.args) {
    if (k.key.empty()) continue;
    // The schema (ir/Knobs.h): a knob takes one of its words or an integer of its range.
    const ir::KnobSpec& spec = ir::knobSpec(*ir::knobNamed(k.key));  // (expectShape admitted only schema names)
    ir::KnobValue value;
    const bool word = std::find(spec.words.begin(), spec.words.end(), k.value) != spec.words.end();
    if (word) {
      value.word = k.value;
    } else if (spec.lo > spec.hi) {
      std::string list;
      for (auto& v : spec.words) list += (list.empty() ? "" : ", ") + v;
      c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": " + k.key + " " + quote(k.value) + " is not one of " + list, k.length);
      return false;
    } else {
      int v = 0;
      auto [ptr, ec] = std::from_chars(k.value.data(), k.value.data() + k.value.size(), v);
      if (ec != std::errc() || ptr != k.value.data() + k.value.size() || v < spec.lo || v > spec.hi) {
        std::string words;
        for (auto& w : spec.words) words += " or " + w;
        c.diags.error(k.loc,
                      "cannot tune " + quote(a.value) + ": " + k.key + " must be an integer in [" + std::to_string(spec.lo) + ", " +
                          std::to_string(spec.hi) + "]" + words + ", got " + quote(k.value),
                      k.length);
        return false;
      }
      value.number = v;
    }
    // Copy engines move an allreduce's parts, the slices of a fused group around a split
    // allreduce (it starts with the reduce_scatter or ends with the all_gather) and an all_to_all
    // pipeline's blocks; nothing else has them.
    auto kindOf = [&](const std::string& name) {
      const int s = c.p.find(name);
      return s < 0 ? ir::StageKind::Input : c.p.stages[s].kind;
    };
    const bool splitGroup =
        group && group->members.size() >= 2 &&
        (kindOf(group->members.front()) == ir::StageKind::ReduceScatter || kindOf(group->members.back()) == ir::StageKind::AllGather);
    const bool ceStage = !group && (c.p.stages[id].kind == ir::StageKind::AllToAll || c.p.stages[id].kind == ir::StageKind::AllReduce);
    if (k.key == "algorithm" && k.value == "copy_engines" && !splitGroup && !ceStage) {
      c.diags.error(k.loc,
                    "cannot tune " + quote(a.value) +
                        ": algorithm 'copy_engines' applies to an allreduce, a fused group that starts with a reduce_scatter or ends with "
                        "an all_gather, or an all_to_all (the one an all_to_all pipeline returns its results with)",
                    k.length);
      return false;
    }
    // The LL128 form is a fused group's one-shot kernel's, or the runtime's allreduce kernel's
    // (dev_allreduce_ll128) for an allreduce in no fused group (a member's knob is its group's).
    auto inGroup = [&] {
      return std::any_of(c.p.fused.begin(), c.p.fused.end(), [&](const ir::FusedGroup& f) {
        return std::find(f.members.begin(), f.members.end(), a.value) != f.members.end();
      });
    };
    if (k.key == "algorithm" && k.value == "ll128" && !group && (c.p.stages[id].kind != ir::StageKind::AllReduce || inGroup())) {
      c.diags.error(k.loc,
                    "cannot tune " + quote(a.value) + ": algorithm 'll128' applies to a fused group, or an allreduce in none" +
                        (inGroup() ? " (tune the group it is fused into)" : ""),
                    k.length);
      return false;
    }
    knobs[spec.knob] = {value, k.keyLoc};
  }
  if (knobs.empty()) {
    std::string takes;
    for (size_t i = 0; i < names.size(); ++i) takes += (i ? i + 1 == names.size() ? " or " : ", " : "") + names[i];
    return c.fail(&a, a.value, "no knob given; tune takes " + takes);
  }
  ir::Knobs& dst = group ? group->knobs : c.p.stages[id].knobs;
  for (auto& [k, v] : knobs) dst.set(k, v.first, v.second);
  return true;
}

}  // namespace coconet::schedule
