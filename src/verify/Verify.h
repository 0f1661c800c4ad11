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

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::verify {

struct Options {
  std::vector<int> ranks{1, 2, 3, 4, 8};
  uint64_t seed = 1;
  std::string dumpDir;  // when set: inputs and expected results per rank, for GPU tests
  // A rank count that compares nothing (no sizes run with it, or only the program without its
  // schedule does) fails the verification unless this is set; a verification that compares at
  // no rank count fails even then.
  bool allowSkips = false;
  // With every size given (-D): the most elements a tensor may hold (0: verify's own bound, 1 << 24).
  // The interpreter's memory bound holds either way. The tuner raises it: it checks the shape it times.
  int64_t boundElements = 0;
  bool scheduled = true;  // false: no schedule (the program is compared with itself: it runs)
  // A backward program's: the forward that saves what it reads (ir::saving). Its saved inputs are
  // computed by this from the drawn inputs, not drawn (verifyGradients makes it where it is unset).
  const ir::Program* saving = nullptr;
};

// Returns 0 when every requested rank count compared and every comparison passed (or, with
// allowSkips, some rank counts compared and passed), 1 otherwise. The last line it prints is
// "verified: ..." (what was compared) or "NOT verified: ..." (why not).
int verify(const ir::Program& base, const ir::Program& scheduled, const Options& opts, std::ostream& out, std::ostream& err);

// The gradient check of a backward program (autodiff::backward of `forward`): at each rank
// count, random inputs and cotangents, run in exact (f64) arithmetic; for each gradient d_X and
// random directions V, <d_X, V> against the central finite difference of <dOUT, OUT> along V.
// Prints a line per rank count; returns 0 when every rank count compared within the tolerance.
int verifyGradients(const ir::Program& forward, const ir::Program& backward, const Options& opts, std::ostream& out, std::ostream& err);

}  // namespace coconet::verify
