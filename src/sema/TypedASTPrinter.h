// Prints a checked program as a typed AST: every node with its type, layout and location.
#pragma once

#include <ostream>

#include "sema/Sema.h"

namespace coconet::sema {

void printTypedAST(std::ostream& os, const sema::CheckedProgram& p, const SourceManager& sm);

}  // namespace coconet::sema
