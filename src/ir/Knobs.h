// The tune knobs: one schema of every knob a schedule can set (its name, the integers and the
// words it takes, what it means), and typed values stored on stages and fused groups. `tune`
// validates against the schema; the IR printer and the backend read the typed values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/Diagnostics.h"

namespace coconet::ir {

// clang-format off
#define COCONET_KNOBS(X) \
  X(Algorithm, "algorithm") \
  X(Barriers, "barriers")   \
  X(Blocks, "blocks")       \
  X(Gather, "gather")       \
  X(Merge, "merge")         \
  X(Movers, "movers")       \
  X(Occupancy, "occupancy") \
  X(Roles, "roles")         \
  X(Rounds, "rounds")       \
  X(Tail, "tail")           \
  X(Taper, "taper")         \
  X(TaperEnds, "taper_ends")
// clang-format on

// (in the order of their names: the IR prints a target's knobs in this order)
enum class Knob : uint8_t {
#define X(k, name) k,
  COCONET_KNOBS(X)
#undef X
};

struct KnobSpec {
  Knob knob;
  const char* name;
  int lo = 0, hi = -1;             // the integers it takes (none where lo > hi)
  std::vector<std::string> words;  // the words it takes, in the order messages list them
  const char* meaning;
};

// Every knob, in Knob's order.
const std::vector<KnobSpec>& knobSchema();
const KnobSpec& knobSpec(Knob k);
std::optional<Knob> knobNamed(std::string_view name);
inline const char* knobName(Knob k) { return knobSpec(k).name; }

// A knob's value as tune set it: an integer of its range or one of its words.
struct KnobValue {
  int number = 0;
  std::string word;  // empty for an integer
  bool isWord() const { return !word.empty(); }
  std::string str() const { return isWord() ? word : std::to_string(number); }
  bool operator==(const KnobValue&) const = default;
};

// The knobs tuned on one stage or fused group, with where tune set each (the key's place).
struct KnobSetting {
  KnobValue value;
  SourceLoc loc;
};
class Knobs {
public:
  bool empty() const { return set_.empty(); }
  bool has(Knob k) const { return set_.count(k) != 0; }
  void set(Knob k, KnobValue v, SourceLoc at) { set_[k] = {std::move(v), at}; }
  void clear() { set_.clear(); }
  // The value of an integer knob, or of a word knob's word, where tuned.
  std::optional<int> number(Knob k) const;
  std::optional<std::string> word(Knob k) const;
  const KnobValue* value(Knob k) const;
  std::optional<SourceLoc> where(Knob k) const;
  const std::map<Knob, KnobSetting>& all() const { return set_; }
  // "algorithm = ring, blocks = 8" (the IR printer's and messages' form)
  std::string str() const;

private:
  std::map<Knob, KnobSetting> set_;
};

}  // namespace coconet::ir
