// Schedule scripts: parsing, applying and printing back.
//
// A .sched file is a list of steps, each a primitive applied to named stages with optional
// knobs: `rs, ag = split(sum);`. Where a step takes a list of stages (reorder, fuse), a
// pattern `NAME.*` stands for every stage of the statement NAME: the stage NAME and those
// named `NAME.<anything>` (a call's inlined body, an expression's inner stages), in order. Schedules are plain data (a Script); `apply` runs the steps
// in order on a Program, removes dead stages after each, and records the applied steps in
// canonical form (every made name written out), so that the trace prints back as a script
// that replays to the same program.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace coconet::schedule {

struct Arg {
  std::string key;    // empty for a positional stage name
  std::string value;  // a stage name, or the knob's value; a pattern's text (`w_new.*`)
  SourceLoc loc;      // the value
  uint32_t length = 1;
  SourceLoc keyLoc;       // the knob's name
  bool pattern = false;   // `NAME.*` as written: apply() expands it to the stages it matches
  std::string matchedBy;  // a stage name that pattern expanded to: the pattern's text
};

struct Step {
  std::string primitive;
  SourceLoc loc;             // the primitive's name
  std::vector<Arg> targets;  // names the step gives to what it makes
  std::vector<Arg> args;
};

struct Script {
  std::vector<Step> steps;
};

// Parses a registered .sched file; nullopt after errors (already reported).
std::optional<Script> parseScript(const SourceManager& sm, uint32_t file, DiagnosticEngine& diags);

// Applies the script's steps in order. On a failed precondition, reports it at the step and
// returns false, leaving `p` as the last successful step left it. With `printAfterAll`, prints
// the IR after lowering and after every step (or "(unchanged)").
bool apply(ir::Program& p, const Script& s, DiagnosticEngine& diags, std::vector<Step>& trace, std::ostream* printAfterAll);

// The canonical script text of applied steps.
std::string printScript(const std::vector<Step>& steps);

}  // namespace coconet::schedule
