#include "backend/plan/KnobUse.h"

#include <algorithm>
#include <vector>

namespace coconet::backend::detail {

using namespace ir;

namespace {

// What a knob applies to, as the CUDA backend reads it (docs/language.md, section 17.3.6).
std::string appliesTo(const std::string& key) {
  if (key == "algorithm") return "an allreduce, reduce_scatter, all_gather, all_to_all or send, or a fused group that holds one";
  if (key == "rounds" || key == "occupancy")
    return "a fused group that holds a collective" + std::string(key == "rounds" ? ", or an allreduce" : "");
  if (key == "blocks" || key == "gather" || key == "tail" || key == "merge") return "a fused group that an overlap pipelines";
  return "a fused group that starts with a reduce_scatter or an allreduce (its two-shot form) or ends with an all_gather";  // roles, movers, taper, taper_ends, barriers
}

bool overlapNames(const Program& p, const std::string& name) {
  for (auto& o : p.overlaps)
    if (o.producer == name || o.consumer == name) return true;
  return false;
}

// The overlap whose consumer is `name` (a fused group or a stage), or null.
const ir::Overlap* consumedBy(const Program& p, const std::string& name) {
  for (auto& o : p.overlaps)
    if (o.consumer == name) return &o;
  return nullptr;
}

bool roundKnob(const std::string& key) {
  return key == "rounds" || key == "roles" || key == "movers" || key == "taper" || key == "taper_ends" || key == "barriers" ||
         key == "occupancy";
}

// Why the backend reads `key` nowhere on the consumer of an overlap whose first collective is
// `first` and whose algorithm knob is `algo` ("" where it may read it). An overlap with an
// allreduce runs each chunk's allreduce as an NCCL call and the rest as one kernel per chunk:
// no knob. One with a reduce_scatter (and an all_gather) reads `rounds`, `roles`, `movers`,
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

}  // namespace

// Why the backend reads `key` nowhere on fused group g ("" where it may read it).
std::string unreadOnGroup(const Program& p, const FusedGroup& g, const std::string& key) {
  std::vector<StageKind> kinds;
  bool collective = false, overlapped = overlapNames(p, g.name);
  for (auto& m : g.members)
    if (int i = p.find(m); i >= 0) {
      kinds.push_back(p.stages[i].kind);
      collective = collective || isCollectiveKind(p.stages[i].kind);
      overlapped = overlapped || overlapNames(p, m);
    }
  if (kinds.empty()) return "";
  if (!collective) return "a fused group with no collective (one element-wise kernel, which takes no knobs)";
  if (consumedBy(p, g.name)) {
    const auto first = std::find_if(kinds.begin(), kinds.end(), isCollectiveKind);
    if (std::string why = unreadOnOverlapConsumer(*first, g.knobs.word(Knob::Algorithm).value_or(""), key); !why.empty())
      return "a fused group " + why;
  }
  if (key == "blocks" || key == "gather" || key == "tail" || key == "merge")
    return overlapped ? "" : "a fused group that no overlap pipelines";
  if (key == "roles" || key == "movers" || key == "taper" || key == "taper_ends" || key == "barriers") {
    // (a group that starts with an allreduce may run in its two-shot form, the allreduce's
    // reduce-scatter in rounds, which reads them, unless its algorithm asks for another form)
    const auto algo = g.knobs.word(Knob::Algorithm);
    const bool twoShot = kinds.front() == StageKind::AllReduce && (!algo || *algo == "two_shot");
    const bool rounds = kinds.front() == StageKind::ReduceScatter || kinds.back() == StageKind::AllGather || twoShot;
    return rounds || overlapped ? "" : "a fused group that neither starts with a reduce_scatter nor ends with an all_gather";
  }
  return "";  // algorithm, rounds, occupancy: read on a group that holds a collective
}

// Why the backend reads `key` nowhere on stage s ("" where it may read it).
std::string unreadOnStage(const Program& p, const Stage& s, const std::string& key) {
  // An allreduce or a reduce_scatter that an overlap pipelines on its own (no fused group):
  // each chunk's collective is an NCCL call.
  if (consumedBy(p, s.name) && (s.kind == StageKind::AllReduce || s.kind == StageKind::ReduceScatter))
    return describe(s) + " pipelined by an overlap, which reads no knob (each chunk's " + stageKindName(s.kind) + " is an NCCL call)";
  switch (s.kind) {
    case StageKind::AllReduce:
    case StageKind::ReduceScatter:
    case StageKind::AllGather:
      return key == "algorithm" || key == "rounds" ? "" : describe(s) + ", where only algorithm and rounds are read";
    case StageKind::AllToAll:
    case StageKind::Send: return key == "algorithm" ? "" : describe(s) + ", where only algorithm is read";
    default: return describe(s) + ", which takes no knobs";
  }
}

namespace {

// Why stage s reads its algorithm knob's value nowhere ("" where it may): an all_to_all's or a
// send's exchange is a device kernel (an all_to_all's by copy engines in a pipeline) unless
// `nccl` asks for NCCL's pairs; the allreduces' forms mean nothing there.
std::string unreadAlgorithm(const Stage& s) {
  const auto algo = s.knobs.word(Knob::Algorithm);
  if (!algo || (s.kind != StageKind::AllToAll && s.kind != StageKind::Send)) return "";
  const bool a2a = s.kind == StageKind::AllToAll;
  if (*algo == "nccl" || (a2a && *algo == "copy_engines")) return "";
  return std::string(a2a ? "an all_to_all takes nccl or copy_engines" : "a send takes nccl");
}

// The warning that the backend reads `key` nowhere on `target` (a fused group or a stage) as the
// program leaves it, or "" where it may read it (or the knob is no longer there).
std::string unreadMessage(const Program& p, const std::string& target, const std::string& key) {
  std::string why, hint;
  const Knob knob = *knobNamed(key);
  if (const FusedGroup* g = p.findFused(target)) {
    if (!g->knobs.has(knob)) return "";
    why = unreadOnGroup(p, *g, key);
    // taper_ends chooses the tapered ends: nothing without a taper
    if (why.empty() && knob == Knob::TaperEnds && g->knobs.number(Knob::Taper).value_or(0) == 0)
      return "tune knob 'taper_ends' has no effect on " + quote(target) + ": its chunks are not tapered (tune(" + target +
             ", taper = K) with K from 1 to 8 tapers them)";
  } else if (int id = p.find(target); id >= 0 && p.stages[id].knobs.has(knob)) {
    const Stage& s = p.stages[id];
    if (std::string v = key == "algorithm" ? unreadAlgorithm(s) : ""; !v.empty())
      return "tune knob 'algorithm = " + s.knobs.value(knob)->str() + "' has no effect on " + quote(target) + ": " + v;
    why = unreadOnStage(p, s, key);
    if (const FusedGroup* g = p.findFused(s.fusedInto); g && !why.empty() && unreadOnGroup(p, *g, key).empty())
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

std::string unreadKnob(const Program& p, const std::string& target, const std::string& key) { return unreadMessage(p, target, key); }

}  // namespace coconet::backend::detail

namespace coconet::backend {

std::vector<std::pair<std::string, std::vector<std::string>>> knobsRead(const ir::Program& p) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  auto add = [&](const std::string& target, auto&& unread) {
    std::vector<std::string> keys;
    for (auto& spec : ir::knobSchema())
      if (unread(spec.name).empty()) keys.push_back(spec.name);
    if (!keys.empty()) out.emplace_back(target, std::move(keys));
  };
  for (auto& g : p.fused) add(g.name, [&](const std::string& key) { return detail::unreadOnGroup(p, g, key); });
  for (auto& s : p.stages)
    if (s.fusedInto.empty() && ir::isCollectiveKind(s.kind))
      add(s.name, [&](const std::string& key) { return detail::unreadOnStage(p, s, key); });
  return out;
}

}  // namespace coconet::backend
