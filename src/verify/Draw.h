// What verify draws for a run (sizes, scalars, inputs) and how it lays them out per rank, shared
// by the schedule check (Verify.cpp) and the gradient check (Gradients.cpp).
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "interp/Interpreter.h"
#include "ir/IR.h"

namespace coconet::verify::detail {

// Sizes (small, random, not always divisible) that meet both programs' requirements at c.ranks;
// false (with why) where none are found.
bool chooseSizes(const ir::Program& a, const ir::Program& b, interp::Config& c, std::mt19937_64& rng, std::string* why);
// The scalar parameters without a value: small random ones (roots: valid ranks).
void chooseScalars(const ir::Program& p, interp::Config& c, std::mt19937_64& rng);
// The logical values of every input and state: one tensor per group instance for replicated and
// sliced values, one per rank for local ones (indexed by world rank). Embedding indices index
// their tables in p and in `also` (a backward's forward).
std::map<std::string, std::vector<interp::Tensor>> drawInputs(const ir::Program& p, const interp::Config& c, std::mt19937_64& rng,
                                                              const ir::Program* also = nullptr);
// Each rank's storage of those values for program p.
interp::Values storageFor(const ir::Program& p, const std::map<std::string, std::vector<interp::Tensor>>& logical, const interp::Config& c);
// A backward program's saved inputs `names`: the values that `saving` (the forward that saves them)
// computes from the logical inputs, in place of those drawn. Throws interp::RunError.
void fillSaved(const ir::Program& saving, const std::vector<std::string>& names,
               std::map<std::string, std::vector<interp::Tensor>>& logical, const interp::Config& c);
// " N=5 M=3 t=2": the sizes and integer scalars of a run.
std::string sizesStr(const ir::Program& p, const interp::Config& c);

}  // namespace coconet::verify::detail
