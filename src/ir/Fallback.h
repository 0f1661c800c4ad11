// Whether a scheduled program can fall back to the program without its schedule.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::ir {

// What the program does for sizes that meet its own requirements but not those its schedule
// added (a split's scattered dimension, an overlap's chunks): it runs without the schedule,
// which computes the same values, provided the schedule left every tensor the caller passes
// (inputs, outputs, states) stored as the program declares it. A `slice` keeps states sliced
// between runs, so those programs have no fallback and such sizes remain an error. (The backend
// also runs the fallback where a schedule does not pay at the sizes of a run: CudaEmitter.h.)
struct Fallback {
  std::vector<const Requirement*> own;  // the schedule's requirements the program lacks
  bool sameStorage = false;             // the caller's tensors are stored alike in both
  bool possible = false;                // `own` is not empty and the storage is the same
  std::string whyNot;                   // where the storage differs: which tensor
};
Fallback unscheduledFallback(const Program& base, const Program& sched);

// The bytes of the program's inputs at their logical (whole) shapes, in its size parameters: the
// same on every rank, so that a choice between the program with and without its schedule by it
// (a tuning file's `unscheduled` rule) is taken alike by all ranks.
SizeExpr inputBytes(const Program& p);

}  // namespace coconet::ir
