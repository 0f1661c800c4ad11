// Reading and parsing the files of a program: the main .cnet file and the modules it imports
// (found beside it, in the folders given, in $COCONETC_STDLIB and in stdlib/), then sema.
#pragma once

#include <string>
#include <vector>

#include "sema/Sema.h"
#include "support/Diagnostics.h"

namespace coconet::driver {

struct LoadOptions {
  std::vector<std::string> moduleDirs;  // searched in order for `import NAME`
  bool searchInputDir = true;           // search the main file's folder first
};

// Reads `path` (at most kMaxSourceBytes), parses it and its imports and checks every program in
// it. Diagnostics go to `diags`; the result is complete only when no error was reported.
void checkFile(sema::Compilation& c, const std::string& path, const sema::Options& opts, const LoadOptions& load, DiagnosticEngine& diags);

// The same for source text already in memory (`name` is used in diagnostics and names the
// folder searched first).
void checkSource(sema::Compilation& c, const std::string& name, std::string text, const sema::Options& opts, const LoadOptions& load,
                 DiagnosticEngine& diags);

}  // namespace coconet::driver
