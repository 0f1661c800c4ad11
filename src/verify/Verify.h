// Verification that a schedule preserved a program's meaning.
//
// For each rank count, picks sizes that meet both programs' requirements (small random values,
// not always divisible, where the program admits that), draws random inputs and states, runs
// the unscheduled and the scheduled program in the reference interpreter, and compares every
// output and every final state as each rank sees it. Results must be bit-exact, unless the
// schedule re-associates a reduction (the IR records why); then each element must be within a
// tolerance derived from the accumulation precision and the number of ranks, which the report
// prints together with the reason.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::verify {

struct Options {
  std::vector<int> ranks{1, 2, 3, 4, 8};
  uint64_t seed = 1;
  std::string dumpDir;  // when set: inputs and expected results per rank, for GPU tests
};

// Returns 0 when every comparison passed, 1 when one failed or the program could not run.
int verify(const ir::Program& base, const ir::Program& scheduled, const Options& opts, std::ostream& out, std::ostream& err);

}  // namespace coconet::verify
