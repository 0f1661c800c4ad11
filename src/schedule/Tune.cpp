// tune: knobs for the backend, stored as plain data.
#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "schedule/Primitives.h"

namespace coconet::schedule {

namespace {
// Knobs that take one of a few words; the others are integers in [1, 65535] but for those in
// kRanges.
const std::map<std::string, std::vector<std::string>> kChoices = {
    {"algorithm", {"one_shot", "two_shot", "ring", "nccl", "copy_engines"}},
    {"gather", {"pipelined", "after"}},
    {"merge", {"by_size", "never"}},
    {"roles", {"split", "shared", "auto"}},
};
// taper: the chunks at each end of a pipelined kernel halve this many times (0: all alike)
// occupancy: blocks of 512 threads per SM (an SM holds 2048 threads), or auto (by the ranks at
// run time: coconet_rt::devAutoOccupancy)
const std::map<std::string, std::pair<int, int>> kRanges = {{"taper", {0, 8}}, {"occupancy", {1, 4}}};
// integer knobs that also take a word
const std::map<std::string, std::string> kIntOrWord = {{"occupancy", "auto"}};
}  // namespace

bool tune(StepContext& c) {
  if (!c.expectShape({"blocks", "chunks", "algorithm", "gather", "tail", "merge", "roles", "movers", "taper", "occupancy"}, 1, 1, 0)) return false;
  const Arg& a = *c.positional()[0];
  ir::FusedGroup* group = nullptr;
  for (auto& f : c.p.fused)
    if (f.name == a.value) group = &f;
  int id = -1;
  if (!group && (id = c.stage(a)) < 0) return false;
  std::map<std::string, std::string> knobs;
  for (auto& k : c.step.args) {
    if (k.key.empty()) continue;
    if (auto e = kChoices.find(k.key); e != kChoices.end()) {
      const std::vector<std::string>& allowed = e->second;
      if (std::find(allowed.begin(), allowed.end(), k.value) == allowed.end()) {
        std::string list;
        for (auto& v : allowed) list += (list.empty() ? "" : ", ") + v;
        c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": " + k.key + " " + quote(k.value) + " is not one of " + list,
                      k.length);
        return false;
      }
    } else if (auto w = kIntOrWord.find(k.key); w != kIntOrWord.end() && k.value == w->second) {
      // (the word; checked below like the others)
    } else {
      auto range = kRanges.find(k.key);
      const auto [lo, hi] = range != kRanges.end() ? range->second : std::pair<int, int>{1, 65535};
      int v = 0;
      auto [ptr, ec] = std::from_chars(k.value.data(), k.value.data() + k.value.size(), v);
      if (ec != std::errc() || ptr != k.value.data() + k.value.size() || v < lo || v > hi) {
        const auto w = kIntOrWord.find(k.key);
        c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": " + k.key + " must be an integer in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "]" + (w != kIntOrWord.end() ? " or " + w->second : "") + ", got " +
                                 quote(k.value), k.length);
        return false;
      }
    }
    // Copy engines move an allreduce's parts, the slices of a fused group around a split
    // allreduce (it starts with the reduce_scatter or ends with the all_gather) and an all_to_all
    // pipeline's blocks; nothing else has them.
    auto kindOf = [&](const std::string& name) {
      const int s = c.p.find(name);
      return s < 0 ? ir::StageKind::Input : c.p.stages[s].kind;
    };
    const bool splitGroup = group && group->members.size() >= 2 && (kindOf(group->members.front()) == ir::StageKind::ReduceScatter ||
                                                                    kindOf(group->members.back()) == ir::StageKind::AllGather);
    const bool ceStage = !group && (c.p.stages[id].kind == ir::StageKind::AllToAll || c.p.stages[id].kind == ir::StageKind::AllReduce);
    if (k.key == "algorithm" && k.value == "copy_engines" && !splitGroup && !ceStage) {
      c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": algorithm 'copy_engines' applies to an allreduce, a fused group that starts with a reduce_scatter or ends with an all_gather, or an all_to_all (the one an all_to_all pipeline returns its results with)",
                    k.length);
      return false;
    }
    knobs[k.key] = k.value;
  }
  if (knobs.empty()) return c.fail(&a, a.value, "no knob given; tune takes blocks, chunks, algorithm, gather, tail, merge, roles, movers, taper or occupancy");
  auto& dst = group ? group->knobs : c.p.stages[id].knobs;
  for (auto& [k, v] : knobs) dst[k] = v;
  return true;
}

}  // namespace coconet::schedule
