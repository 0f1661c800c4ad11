// Lowering of a checked program (typed AST) to the dataflow IR.
#pragma once

#include "ir/IR.h"
#include "sema/Sema.h"

namespace coconet::ir {

Program lower(const sema::CheckedProgram& p);

}  // namespace coconet::ir
