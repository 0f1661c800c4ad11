// libFuzzer target: parse + check arbitrary bytes as a .cnet program, and when the input
// holds a line "%%", the text after it as a schedule: lower, apply it, and verify the result
// for 2 ranks. Any crash, sanitizer report, internal compiler error or hang is a bug;
// diagnostics are the expected outcome.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "ir/Lower.h"
#include "schedule/Schedule.h"
#include "sema/Sema.h"
#include "support/Thread.h"
#include "verify/Verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size), sched;
  bool hasSchedule = false;
  if (auto at = text.find("\n%%\n"); at != std::string::npos) {
    sched = text.substr(at + 4);
    text.resize(at + 1);
    hasSchedule = true;
  }
  coconet::runOnLargeStack(size_t(256) << 20, [&] {
    coconet::sema::Compilation comp;
    std::ostringstream sink;
    coconet::DiagnosticEngine diags(comp.sources, sink);
    coconet::sema::Options opts;
    opts.searchInputDir = false;
    opts.moduleDirs = {COCONETC_SOURCE_STDLIB};
    try {
      coconet::sema::checkSource(comp, "fuzz.cnet", std::move(text), opts, diags);
      if (!hasSchedule || diags.hasErrors() || comp.programs.size() != 1) return;
      coconet::ir::Program base = coconet::ir::lower(*comp.programs[0]);
      coconet::ir::Program p = coconet::ir::clone(base);
      uint32_t file = comp.sources.add("fuzz.sched", sched);
      auto script = coconet::schedule::parseScript(comp.sources, file, diags);
      if (!script) return;
      std::vector<coconet::schedule::Step> trace;
      if (!coconet::schedule::apply(p, *script, diags, trace, nullptr)) return;
      coconet::verify::Options vo;
      vo.ranks = {2};
      std::ostringstream out, err;
      if (coconet::verify::verify(base, p, vo, out, err) != 0 && out.str().find("NOT verified") != std::string::npos) {
        std::cerr << "a schedule that applied does not verify:\n" << out.str() << err.str() << "\n--- schedule\n"
                  << sched << "\n";
        std::abort();
      }
    } catch (const coconet::InternalError& e) {
      std::cerr << "internal compiler error: " << e.what() << "\n";
      std::abort();
    }
  });
  return 0;
}
