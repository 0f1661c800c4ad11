#include "ir/Knobs.h"

namespace coconet::ir {

const std::vector<KnobSpec>& knobSchema() {
  constexpr int kMax = 65535;
  static const std::vector<KnobSpec> schema = {
      {Knob::Algorithm,
       "algorithm",
       0,
       -1,
       {"ll", "ll128", "one_shot", "two_shot", "ring", "nccl", "copy_engines"},
       "the form of a collective or of a fused group's kernel"},
      {Knob::Barriers,
       "barriers",
       0,
       -1,
       {"split", "sync", "auto"},
       "whether each round's barrier is split around the pull (split) or one wait (sync)"},
      {Knob::Blocks, "blocks", 1, kMax, {}, "blocks of an overlapped group's per-chunk kernels"},
      {Knob::Gather, "gather", 0, -1, {"pipelined", "after"}, "an overlap's all-gather: per chunk, or after the last"},
      {Knob::Merge, "merge", 0, -1, {"by_size", "never"}, "whether an overlap merges chunks whose copies would be small"},
      {Knob::Movers, "movers", 1, kMax, {}, "blocks that move data where the blocks take roles"},
      {Knob::Occupancy, "occupancy", 1, 4, {"auto"}, "blocks of 512 threads per SM (auto: by the ranks at run time)"},
      {Knob::Roles, "roles", 0, -1, {"split", "shared", "auto"}, "whether a kernel's blocks split into movers and workers"},
      {Knob::Rounds, "rounds", 1, kMax, {}, "pipelined rounds of a device kernel (or an allreduce's copy-engine rounds)"},
      {Knob::Tail, "tail", 1, kMax, {}, "pieces of an overlap's last chunk"},
      {Knob::Taper, "taper", 0, 8, {}, "how many times the chunks at a pipelined kernel's ends halve"},
      {Knob::TaperEnds, "taper_ends", 0, -1, {"both", "first", "last"}, "which ends a taper tapers"},
  };
  return schema;
}

const KnobSpec& knobSpec(Knob k) { return knobSchema()[static_cast<size_t>(k)]; }

std::optional<Knob> knobNamed(std::string_view name) {
  for (auto& s : knobSchema())
    if (name == s.name) return s.knob;
  return std::nullopt;
}

const KnobValue* Knobs::value(Knob k) const {
  auto it = set_.find(k);
  return it == set_.end() ? nullptr : &it->second.value;
}

std::optional<int> Knobs::number(Knob k) const {
  const KnobValue* v = value(k);
  if (!v || v->isWord()) return std::nullopt;
  return v->number;
}

std::optional<std::string> Knobs::word(Knob k) const {
  const KnobValue* v = value(k);
  if (!v || !v->isWord()) return std::nullopt;
  return v->word;
}

std::optional<SourceLoc> Knobs::where(Knob k) const {
  auto it = set_.find(k);
  if (it == set_.end()) return std::nullopt;
  return it->second.loc;
}

std::string Knobs::str() const {
  std::string s;
  for (auto& [k, setting] : set_) s += (s.empty() ? "" : ", ") + std::string(knobName(k)) + " = " + setting.value.str();
  return s;
}

}  // namespace coconet::ir
