// libFuzzer target: parse + check arbitrary bytes as a .cnet program. Any crash, sanitizer
// report, internal compiler error or hang is a bug; diagnostics are the expected outcome.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "sema/Sema.h"
#include "support/Thread.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  coconet::runOnLargeStack(size_t(256) << 20, [&] {
    coconet::sema::Compilation comp;
    std::ostringstream sink;
    coconet::DiagnosticEngine diags(comp.sources, sink);
    coconet::sema::Options opts;
    opts.searchInputDir = false;
    opts.moduleDirs = {COCONETC_SOURCE_STDLIB};
    try {
      coconet::sema::checkSource(comp, "fuzz.cnet", std::move(text), opts, diags);
    } catch (const coconet::InternalError& e) {
      std::cerr << "internal compiler error: " << e.what() << "\n";
      std::abort();
    }
  });
  return 0;
}
