// The autotuner's measurement: candidates (schedules, the knobs the backend reads under each, the
// tuning-table entries the generated code reads) built, checked against verify's vectors and
// timed on the GPUs of this machine; the results kept in a tuning database, the best written out
// as a schedule and a tuning file (`compile --tuning`), and a report.
//
// The search, per schedule: its setting as written first, then one dimension (a knob of a target,
// or a table entry) at a time, every value of it with the others at the best found so far
// (coordinate descent), each round's builds in parallel. Schedules come from tune::enumerate,
// ranked by a cost model (bytes moved, flops, launches) whose predictions the records keep beside
// the measurements; the one beside the program and the program unscheduled always run.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/tuning/Tuning.h"
#include "ir/IR.h"

namespace coconet::tune {

struct MeasureOptions {
  std::string outDir;                                      // the database, the builds, the results
  std::vector<std::pair<std::string, std::string>> sizes;  // -D NAME=VALUE: the shape timed (every size)
  std::vector<int> gpus{1};                                // world sizes timed (processes on this machine)
  double budgetMinutes = 30;                               // no build or run starts after it
  int jobs = 0;                                            // builds at once (0: half the cores)
  int schedules = 2;                                       // enumerated schedules timed besides the hand one and none
  int repeats = 3;                                         // timed processes per candidate (each --bench --iters K)
  int iters = 20;
  int batch = 10;                 // calls back to back in a timed call (the driver's --batch): the GPU's time, not launch gaps
  std::vector<std::string> only;  // the dimensions searched (entry names, TARGET.KNOB); empty: all
  int depth = 3;                  // the enumeration's bounds
  size_t limit = 200;
  uint64_t seed = 1;
  std::string arch = "sm_90a";
  // How candidates are built and run: empty: cmake, then the generated driver (NAME_main); else a
  // program run as `RUNNER build SRC BUILD`, `RUNNER check BIN ARGS...`, `RUNNER bench BIN ARGS...`
  // (the tests' stand-in for a GPU machine).
  std::string runner;
  std::string command;  // the command line, for the records
};

// One point of the space.
struct Config {
  int schedule = 0;                                                 // index into the schedules
  std::map<std::string, std::map<std::string, std::string>> knobs;  // target -> knob -> value
  std::map<std::string, int64_t> entries;                           // tuning-table entry -> value
  std::string key() const;                                          // "s1 f.rounds=4 row_split_min=2048": unique per point
  std::string settings() const;                                     // the same without the schedule
};

// A config's key in the tuning database at a world size ("p2 s1 f.rounds=4").
inline std::string recordKey(int world, const Config& c) { return "p" + std::to_string(world) + " " + c.key(); }

// A schedule the search times: "none" (the program unscheduled), "hand" (the one beside it), or
// "enumerated K" (tune::enumerate's candidate K); the cost model's prediction for it.
struct ScheduleCandidate {
  std::string name, script;
  double predicted = 0;
};

// A dimension of the search.
struct Dimension {
  std::string target, knob;  // a knob of a target (fused group or stage), or
  std::string entry;         // a tuning-table entry
  std::vector<std::string> values;
  std::string name() const { return entry.empty() ? target + "." + knob : entry; }
};

// A size as the driver takes it ("3*2^20" -> 3145728); -1 where it is not one.
int64_t sizeValue(const std::string& text);

// The cost model's prediction for a program at the sizes given, in microseconds: per launch (a
// fused group or a stage that is not an input, a view or a fused member) a fixed cost plus the
// bytes it reads and writes at memory bandwidth and its flops at the tensor cores' rate. Only
// the ranking matters.
double predictMicroseconds(const ir::Program& p, const std::map<std::string, int64_t>& sizes);

// The table entries `generated` (a program's generated .cu text) reads: those with search values
// whose read_by symbols (or cxx name) it names.
std::vector<const backend::tuning::Entry*> entriesRead(const backend::tuning::Table& t, const std::string& generated);

// The schedule script of a config: the schedule's text, then a tune line per target.
std::string configScript(const std::string& schedule, const Config& c);

// The whole run (`coconetc tune PROG -o DIR`). base: the program lowered with its sizes unbound;
// handScript: the schedule beside it ("" for none). Returns 0 when a best candidate was found and
// written, 1 otherwise (errors to err).
int measure(const ir::Program& base, const std::string& handScript, const MeasureOptions& o, std::ostream& out, std::ostream& err);

}  // namespace coconet::tune
