// libFuzzer target: parse + check arbitrary bytes as a .cnet program, lower it and derive its
// backward program; and when the input holds a line "%%", the text after it as a schedule: apply it, verify the result for 2
// ranks, and write its CUDA code (into a scratch folder, with device collectives on odd input
// sizes and NCCL calls only on even ones). Any crash, sanitizer report, internal compiler error
// or hang is a bug; diagnostics (and the backend's refusals, std::runtime_error) are the
// expected outcome.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "autodiff/Backward.h"
#include "backend/CudaEmitter.h"
#include "driver/Load.h"
#include "ir/Fallback.h"
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
    coconet::driver::LoadOptions load;
    load.searchInputDir = false;
    load.moduleDirs = {COCONETC_SOURCE_STDLIB};
    try {
      coconet::driver::checkSource(comp, "fuzz.cnet", std::move(text), coconet::sema::Options{}, load, diags);
      if (diags.hasErrors() || comp.programs.size() != 1) return;
      coconet::ir::Program base = coconet::ir::lower(*comp.programs[0]);
      // The backward program: derived (its structure checked) or refused with a diagnostic.
      coconet::autodiff::backward(base, coconet::autodiff::Request{}, diags);
      if (!hasSchedule) return;
      coconet::ir::Program p = coconet::ir::clone(base);
      uint32_t file = comp.sources.add("fuzz.sched", sched);
      auto script = coconet::schedule::parseScript(comp.sources, file, diags);
      if (!script) return;
      std::vector<coconet::schedule::Step> trace;
      if (!coconet::schedule::apply(p, *script, diags, trace, nullptr)) return;
      coconet::verify::Options vo;
      vo.ranks = {2};
      vo.allowSkips = true;  // (sizes that do not run with 2 ranks are no schedule's fault)
      std::ostringstream out, err;
      if (coconet::verify::verify(base, p, vo, out, err) != 0 &&
          out.str().find("NOT verified: the scheduled program differs") != std::string::npos) {
        std::cerr << "a schedule that applied does not verify:\n" << out.str() << err.str() << "\n--- schedule\n" << sched << "\n";
        std::abort();
      }
      // The backend: every scheduled program must give CUDA code or a refusal.
      // (emptied before each program, so that its folder holds one program's files; removed at exit)
      static const std::string& scratch = []() -> const std::string& {
        static const std::string d = (std::filesystem::temp_directory_path() / ("coconetc-fuzz-" + std::to_string(::getpid()))).string();
        std::atexit([] {
          std::error_code ec;
          std::filesystem::remove_all(d, ec);
        });
        return d;
      }();
      std::filesystem::remove_all(scratch);
      std::filesystem::create_directories(scratch);
      coconet::backend::CompileOptions co;
      co.outDir = scratch;
      co.deviceCollectives = size % 2 == 1;
      co.scheduleText = coconet::schedule::printScript(trace);
      if (!trace.empty() && coconet::ir::unscheduledFallback(base, p).sameStorage) co.unscheduled = &base;  // as the compiler does
      try {
        coconet::backend::emitCuda(p, co);
      } catch (const std::runtime_error&) {
        // a construct the CUDA backend refuses, with a message (the driver reports it)
      }
    } catch (const coconet::InternalError& e) {
      std::cerr << "internal compiler error: " << e.what() << "\n";
      std::abort();
    }
  });
  return 0;
}
