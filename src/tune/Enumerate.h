// The autotuner's search space: the schedules a program admits, found by applying the schedule
// primitives step by step (split, reorder, fuse, overlap, slice), each candidate kept once per
// distinct IR it produces and checked by the verifier. The steps proposed at each point come from
// the program's shape (collectives, their element-wise neighbours, matmuls, states); a proposal
// whose preconditions fail is dropped, so every candidate is a schedule `apply` accepts.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::tune {

struct EnumerateOptions {
  int depth = 5;                  // steps per schedule at most
  size_t limit = 1000;            // candidates at most (the search stops there, and says so)
  std::vector<int> chunks{2, 4};  // overlap chunk counts proposed
};

struct Candidate {
  std::string script;  // the canonical schedule text (schedule::printScript), "" for none
  int steps = 0;
};

struct Space {
  std::vector<Candidate> candidates;  // in the order found (breadth first), the unscheduled program first
  size_t tried = 0;                   // proposals applied
  bool truncated = false;             // the limit stopped the search
};

// The schedules of `base` (a lowered program), deterministic for a program and options.
Space enumerate(const ir::Program& base, const EnumerateOptions& opts);

// The program's IR with the names steps and statements made replaced by positions, and without
// knobs: equal for two schedules that make the same program under other names or settings.
std::string programKey(const ir::Program& p);

// The values the search tries for a knob: its words, and of its integers the lowest if not
// positive and the powers of two up to kLadderTop (the schema's ranges reach 65535).
constexpr int kLadderTop = 256;
std::vector<std::string> knobValues(const ir::KnobSpec& spec);

// The knob settings a candidate's program admits: for each target (fused group or collective) the
// knobs the backend reads there (backend::knobsRead) with the values knobValues tries; and how many
// settings they make together (saturated at 10^18).
struct KnobSpace {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>> targets;  // (target, (knob, values))
  double settings = 1;
};
KnobSpace knobSpace(const ir::Program& p);

// `base` with `script` applied (a candidate's: it applies).
ir::Program applyScript(const ir::Program& base, const std::string& script);

}  // namespace coconet::tune
