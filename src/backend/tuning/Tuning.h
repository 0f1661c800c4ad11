// Tuning.h: the tuning tables of the CUDA backend. A table (tuning/*.json, embedded in the
// compiler) holds every constant that measurement chose for one GPU architecture family: byte
// limits of the collectives' forms, rounds by size, tile sizes, block counts. Each entry gives its
// value by rank count and size bucket (rules tried in order), its meaning and the measurement
// behind it. `--arch` selects the table; the planner reads it (Table::value) and the generated
// runtime reads it as coconet_tuning.h (header), written into every output folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coconet::backend::tuning {

// One rule: where its conditions hold (none: always), the entry's value.
struct Rule {
  std::optional<int64_t> ranks, ranksAtMost, bytesBelow;
  bool unlimited = false;  // the type's largest value ("unlimited")
  int64_t value = 0;
  bool holds(int64_t r, int64_t bytes) const {
    return (!ranks || *ranks == r) && (!ranksAtMost || r <= *ranksAtMost) && (!bytesBelow || bytes < *bytesBelow);
  }
};

struct Entry {
  std::string name;  // snake_case, as documented
  std::string cxx;   // its name in the generated runtime (coconet_rt::NAME)
  std::string type;  // "int", "long long" or "size_t"
  std::string args;  // "" (a constant), "ranks", "bytes" or "ranks, bytes": what the rules test
  std::string meaning, why;
  std::vector<Rule> rules;  // the last one without conditions
  // What `coconetc tune` tries: the values (empty: the entry is not tuned), and the runtime or
  // generated-code symbols whose presence in a program's generated code means it reads the entry
  // (its cxx name where empty).
  std::vector<int64_t> search;
  std::vector<std::string> readBy;
};

struct Table {
  std::string name, measuredOn, note;
  std::string tunedBy;  // a tuning file's entries replaced the table's (tuned()): its path
  // A tuning file's `unscheduled` rule: where the program's inputs (ir::inputBytes) hold fewer bytes
  // than this, it runs without its schedule (0: no rule), and the measurement that chose it.
  int64_t unscheduledBelowBytes = 0;
  std::string unscheduledWhy;
  std::vector<std::string> archs;  // the architectures it was measured for
  std::vector<Entry> entries;
  const Entry& entry(const std::string& name) const;  // InternalError where absent
  // The entry's value at `ranks` ranks and `bytes` bytes (the type's largest for "unlimited").
  int64_t value(const std::string& name, int64_t ranks = 0, int64_t bytes = 0) const;
};

// Parses and checks a table (JSON text): every entry named, typed and with rules that end in an
// unconditional one, conditions only on what its `args` name, values within the type. Errors
// name the table and the entry ("tuning table sm90: entry 'x': ..."); throws std::runtime_error.
Table parse(const std::string& json, const std::string& source);

// `base` with the entries of a tuning file (`coconetc tune`'s tuning.json, for `compile --tuning`):
// {"tuning": ..., "entries": [{"name", "rules", "why"}, ...], "unscheduled": {"bytes_below", "why"}},
// each entry one of base's with the rules and measurement the file gives, checked as parse()
// checks a table's; `unscheduled` (optional): below that many bytes of inputs the program runs
// without its schedule. Errors name the file
// and the entry; throws std::runtime_error.
Table tuned(const Table& base, const std::string& json, const std::string& source);

// The table for `arch` (an --arch value: sm_90a, sm_100, ...): the one measured for it, else the
// nearest measured one (`measured` false: its values were not measured on this architecture).
const Table& forArch(const std::string& arch, bool& measured);
// Every table the compiler holds.
const std::vector<Table>& tables();

// coconet_tuning.h for `arch` from table t: each entry as a constexpr constant or function of
// namespace coconet_rt, with its meaning and measurement as comments.
std::string header(const Table& t, const std::string& arch, bool measured);

}  // namespace coconet::backend::tuning
