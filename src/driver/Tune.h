// `coconetc tune --list`: the schedules the autotuner would time, each verified.
#pragma once

#include <iosfwd>

#include "driver/Compiler.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace coconet::driver {

// Enumerates base's schedules (tune::enumerate) and verifies each against base at inv.ranks;
// `hand`, when given, is the program with the schedule beside it (its candidate is named). Returns
// kExitOk when every candidate verified.
int tuneList(const Invocation& inv, const ir::Program& base, const ir::Program* hand, std::ostream& out, std::ostream& err);

// `coconetc tune PROG -D sizes -o DIR`: the measured search (tune::measure) over base (lowered
// with its sizes unbound; inv.defines are the shape timed) from the schedule beside the program
// (handScript, "" for none). With --shapes FILE (read into `sources`, its errors through `diags`
// at their line and column), each shape's search and the merged tuning file (tune::measureShapes).
int tuneMeasure(const Invocation& inv, const ir::Program& base, const std::string& handScript, SourceManager& sources,
                DiagnosticEngine& diags, std::ostream& out, std::ostream& err);

}  // namespace coconet::driver
