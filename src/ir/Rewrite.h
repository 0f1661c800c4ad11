// Editing a Program while keeping stage ids consistent: every helper remaps operands,
// outputs and state exits.
#pragma once

#include <set>
#include <vector>

#include "ir/IR.h"

namespace coconet::ir {

// Inserts `s` so that it gets id `pos`; ids >= pos move up by one. Returns pos.
int insertStage(Program& p, int pos, Stage s);
// Makes every reader of `from` (stages, outputs, state exits) read `to` instead, except the
// stages listed in `keep`.
void replaceUses(Program& p, int from, int to, const std::vector<int>& keep = {});
// Removes the given stages (none may still be used).
void eraseStages(Program& p, std::vector<int> ids);
// Puts the stages in the given order (a permutation of ids in which operands come first).
void permuteStages(Program& p, const std::vector<int>& order);
// True when some stage (other than those in `except`), output or state exit reads stage `id`.
bool isUsed(const Program& p, int id, const std::set<int>& except = {});
// Removes stages whose value nothing reads (inputs and states stay: they are the interface).
// Returns the names removed.
std::vector<std::string> eliminateDeadStages(Program& p);

// The forward that saves what `backward` (autodiff's, derived from p) reads: p with an output
// appended for each of backward's saved inputs (Program::savedInputs) that is not an output of p;
// Program::savedOutputs counts them.
Program saving(const Program& p, const Program& backward);

}  // namespace coconet::ir
