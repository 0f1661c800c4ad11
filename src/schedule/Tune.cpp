// tune: knobs for the backend, stored as plain data.
#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "schedule/Primitives.h"

namespace coconet::schedule {

bool tune(StepContext& c) {
  if (!c.expectShape({"blocks", "chunks", "algorithm", "gather", "tail", "merge", "roles", "movers", "taper", "taper_ends", "barriers", "occupancy"}, 1, 1, 0)) return false;
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
      c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": " + k.key + " " + quote(k.value) + " is not one of " + list,
                    k.length);
      return false;
    } else {
      int v = 0;
      auto [ptr, ec] = std::from_chars(k.value.data(), k.value.data() + k.value.size(), v);
      if (ec != std::errc() || ptr != k.value.data() + k.value.size() || v < spec.lo || v > spec.hi) {
        std::string words;
        for (auto& w : spec.words) words += " or " + w;
        c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": " + k.key + " must be an integer in [" + std::to_string(spec.lo) +
                                 ", " + std::to_string(spec.hi) + "]" + words + ", got " + quote(k.value), k.length);
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
    const bool splitGroup = group && group->members.size() >= 2 && (kindOf(group->members.front()) == ir::StageKind::ReduceScatter ||
                                                                    kindOf(group->members.back()) == ir::StageKind::AllGather);
    const bool ceStage = !group && (c.p.stages[id].kind == ir::StageKind::AllToAll || c.p.stages[id].kind == ir::StageKind::AllReduce);
    if (k.key == "algorithm" && k.value == "copy_engines" && !splitGroup && !ceStage) {
      c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": algorithm 'copy_engines' applies to an allreduce, a fused group that starts with a reduce_scatter or ends with an all_gather, or an all_to_all (the one an all_to_all pipeline returns its results with)",
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
      c.diags.error(k.loc, "cannot tune " + quote(a.value) + ": algorithm 'll128' applies to a fused group, or an allreduce in none" +
                               (inGroup() ? " (tune the group it is fused into)" : ""),
                    k.length);
      return false;
    }
    knobs[spec.knob] = {value, k.keyLoc};
  }
  if (knobs.empty()) return c.fail(&a, a.value, "no knob given; tune takes blocks, chunks, algorithm, gather, tail, merge, roles, movers, taper, taper_ends, barriers or occupancy");
  ir::Knobs& dst = group ? group->knobs : c.p.stages[id].knobs;
  for (auto& [k, v] : knobs) dst.set(k, v.first, v.second);
  if (c.knobSites)
    for (auto& k : c.step.args)
      if (!k.key.empty())
        c.knobSites->push_back({group ? group->name : c.p.stages[id].name, k.key, k.keyLoc, static_cast<uint32_t>(k.key.size())});
  return true;
}

namespace {

using ir::StageKind;

// What a knob applies to, as the CUDA backend reads it (docs/language.md, section 17.3.6).
std::string appliesTo(const std::string& key) {
  if (key == "algorithm") return "an allreduce, reduce_scatter, all_gather, all_to_all or send, or a fused group that holds one";
  if (key == "chunks" || key == "occupancy") return "a fused group that holds a collective" + std::string(key == "chunks" ? ", or an allreduce" : "");
  if (key == "blocks" || key == "gather" || key == "tail" || key == "merge") return "a fused group that an overlap pipelines";
  return "a fused group that starts with a reduce_scatter or an allreduce (its two-shot form) or ends with an all_gather";  // roles, movers, taper, taper_ends, barriers
}

bool overlapNames(const ir::Program& p, const std::string& name) {
  for (auto& o : p.overlaps)
    if (o.producer == name || o.consumer == name) return true;
  return false;
}

// The overlap whose consumer is `name` (a fused group or a stage), or null.
const ir::Overlap* consumedBy(const ir::Program& p, const std::string& name) {
  for (auto& o : p.overlaps)
    if (o.consumer == name) return &o;
  return nullptr;
}

bool roundKnob(const std::string& key) {
  return key == "chunks" || key == "roles" || key == "movers" || key == "taper" || key == "taper_ends" || key == "barriers" ||
         key == "occupancy";
}

// Why the backend reads `key` nowhere on the consumer of an overlap whose first collective is
// `first` and whose algorithm knob is `algo` ("" where it may read it). An overlap with an
// allreduce runs each chunk's allreduce as an NCCL call and the rest as one kernel per chunk:
// no knob. One with a reduce_scatter (and an all_gather) reads `chunks`, `roles`, `movers`,
// `taper` and `occupancy` only for its one-chunk kernel (Emitter::onePassForm), which
// copy_engines never runs (one_shot, ll and ll128 run it where the group has no one-shot form),
// and with nccl (or ring) runs NCCL calls per chunk.
std::string unreadOnOverlapConsumer(StageKind first, const std::string& algo, const std::string& key) {
  if (first == StageKind::AllReduce)
    return "pipelined by an overlap with its allreduce, which reads no knob (each chunk's allreduce is an NCCL call)";
  if (first != StageKind::ReduceScatter) return "";
  if ((algo == "nccl" || algo == "ring") && key != "algorithm")
    return "pipelined by an overlap with algorithm = " + algo + " (NCCL calls per chunk, which read no other knob)";
  if (roundKnob(key) && algo == "copy_engines")
    return "pipelined by an overlap with algorithm = " + algo + ", which never runs the one-chunk kernel that " + key + " sets";
  return "";
}

// Why the backend reads `key` nowhere on fused group g ("" where it may read it).
std::string unreadOnGroup(const ir::Program& p, const ir::FusedGroup& g, const std::string& key) {
  std::vector<StageKind> kinds;
  bool collective = false, overlapped = overlapNames(p, g.name);
  for (auto& m : g.members)
    if (int i = p.find(m); i >= 0) {
      kinds.push_back(p.stages[i].kind);
      collective = collective || ir::isCollectiveKind(p.stages[i].kind);
      overlapped = overlapped || overlapNames(p, m);
    }
  if (kinds.empty()) return "";
  if (!collective) return "a fused group with no collective (one element-wise kernel, which takes no knobs)";
  if (consumedBy(p, g.name)) {
    const auto first = std::find_if(kinds.begin(), kinds.end(), ir::isCollectiveKind);
    if (std::string why = unreadOnOverlapConsumer(*first, g.knobs.word(ir::Knob::Algorithm).value_or(""), key); !why.empty())
      return "a fused group " + why;
  }
  if (key == "blocks" || key == "gather" || key == "tail" || key == "merge")
    return overlapped ? "" : "a fused group that no overlap pipelines";
  if (key == "roles" || key == "movers" || key == "taper" || key == "taper_ends" || key == "barriers") {
    // (a group that starts with an allreduce may run in its two-shot form, the allreduce's
    // reduce-scatter in rounds, which reads them, unless its algorithm asks for another form)
    const auto algo = g.knobs.word(ir::Knob::Algorithm);
    const bool twoShot = kinds.front() == StageKind::AllReduce && (!algo || *algo == "two_shot");
    const bool rounds = kinds.front() == StageKind::ReduceScatter || kinds.back() == StageKind::AllGather || twoShot;
    return rounds || overlapped ? "" : "a fused group that neither starts with a reduce_scatter nor ends with an all_gather";
  }
  return "";  // algorithm, chunks, occupancy: read on a group that holds a collective
}

// Why the backend reads `key` nowhere on stage s ("" where it may read it).
std::string unreadOnStage(const ir::Program& p, const ir::Stage& s, const std::string& key) {
  // An allreduce or a reduce_scatter that an overlap pipelines on its own (no fused group):
  // each chunk's collective is an NCCL call.
  if (consumedBy(p, s.name) && (s.kind == StageKind::AllReduce || s.kind == StageKind::ReduceScatter))
    return describe(s) + " pipelined by an overlap, which reads no knob (each chunk's " + stageKindName(s.kind) + " is an NCCL call)";
  switch (s.kind) {
    case StageKind::AllReduce: case StageKind::ReduceScatter: case StageKind::AllGather:
      return key == "algorithm" || key == "chunks" ? "" : describe(s) + ", where only algorithm and chunks are read";
    case StageKind::AllToAll: case StageKind::Send:
      return key == "algorithm" ? "" : describe(s) + ", where only algorithm is read";
    default:
      return describe(s) + ", which takes no knobs";
  }
}

// Why stage s reads its algorithm knob's value nowhere ("" where it may): an all_to_all's or a
// send's exchange is a device kernel (an all_to_all's by copy engines in a pipeline) unless
// `nccl` asks for NCCL's pairs; the allreduces' forms mean nothing there.
std::string unreadAlgorithm(const ir::Stage& s) {
  const auto algo = s.knobs.word(ir::Knob::Algorithm);
  if (!algo || (s.kind != StageKind::AllToAll && s.kind != StageKind::Send)) return "";
  const bool a2a = s.kind == StageKind::AllToAll;
  if (*algo == "nccl" || (a2a && *algo == "copy_engines")) return "";
  return std::string(a2a ? "an all_to_all takes nccl or copy_engines" : "a send takes nccl");
}

// The warning that the backend reads `key` nowhere on `target` (a fused group or a stage) as the
// program leaves it, or "" where it may read it (or the knob is no longer there).
std::string unreadMessage(const ir::Program& p, const std::string& target, const std::string& key) {
  std::string why, hint;
  const ir::Knob knob = *ir::knobNamed(key);
  if (const ir::FusedGroup* g = p.findFused(target)) {
    if (!g->knobs.has(knob)) return "";
    why = unreadOnGroup(p, *g, key);
    // taper_ends chooses the tapered ends: nothing without a taper
    if (why.empty() && knob == ir::Knob::TaperEnds && g->knobs.number(ir::Knob::Taper).value_or(0) == 0)
      return "tune knob 'taper_ends' has no effect on " + quote(target) + ": its chunks are not tapered (tune(" + target +
             ", taper = K) with K from 1 to 8 tapers them)";
  } else if (int id = p.find(target); id >= 0 && p.stages[id].knobs.has(knob)) {
    const ir::Stage& s = p.stages[id];
    if (std::string v = key == "algorithm" ? unreadAlgorithm(s) : ""; !v.empty())
      return "tune knob 'algorithm = " + s.knobs.value(knob)->str() + "' has no effect on " + quote(target) + ": " + v;
    why = unreadOnStage(p, s, key);
    if (const ir::FusedGroup* g = p.findFused(s.fusedInto); g && !why.empty() && unreadOnGroup(p, *g, key).empty())
      hint = "; tune its fused group " + quote(g->name) + " instead";
  } else {
    return "";  // the stage is gone (dead, or rewritten by a later step)
  }
  if (why.empty()) return "";
  // (an overlap's consumer holds the right collective; its form reads no knob: no hint)
  const bool byOverlap = why.find(" pipelined by an overlap") != std::string::npos;
  return "tune knob " + quote(key) + " has no effect on " + quote(target) + ": it is " + why +
         (byOverlap ? "" : "; " + key + " applies to " + appliesTo(key) + hint);
}

}  // namespace

bool knobUnread(const ir::Program& p, const std::string& target, const std::string& key) {
  return !unreadMessage(p, target, key).empty();
}

void warnUnreadKnobs(const ir::Program& p, const std::vector<KnobSite>& sites, DiagnosticEngine& diags) {
  for (size_t i = 0; i < sites.size(); ++i) {
    const KnobSite& k = sites[i];
    bool later = false;  // a later tune of the same knob replaced this one
    for (size_t j = i + 1; j < sites.size() && !later; ++j) later = sites[j].target == k.target && sites[j].key == k.key;
    if (later) continue;
    if (const std::string msg = unreadMessage(p, k.target, k.key); !msg.empty()) diags.warning(k.loc, msg, k.length);
  }
}

}  // namespace coconet::schedule
