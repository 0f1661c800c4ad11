#include "driver/Compiler.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "ast/ASTPrinter.h"
#include "ir/Lower.h"
#include "verify/Verify.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Thread.h"

namespace coconet::driver {
namespace {

constexpr size_t kCompilerStack = size_t(1) << 30;  // reserved, touched only as used

int pipeline(const Invocation& inv, std::ostream& out, std::ostream& err) {
  sema::Compilation comp;
  DiagnosticEngine diags(comp.sources, err);
  diags.setErrorLimit(inv.errorLimit);
  sema::Options opts;
  opts.defines = inv.defines;
  opts.moduleDirs = inv.moduleDirs;
  for (auto& d : defaultModuleDirs()) opts.moduleDirs.push_back(d);
  sema::checkFile(comp, inv.input, opts, diags);
  if (diags.hasErrors()) {
    unsigned n = diags.errorCount();
    err << n << (n == 1 ? " error" : " errors") << " generated.\n";
    return kExitUserError;
  }
  if (inv.action == Action::EmitAST)
    for (auto& p : comp.programs) ast::printTypedAST(out, *p, comp.sources);
  if (inv.action == Action::EmitIR)
    for (auto& p : comp.programs) out << ir::print(ir::lower(*p));
  if (inv.action == Action::Verify) {
    if (comp.programs.empty()) {
      err << "coconetc: error: " << inv.input << " defines no program to verify\n";
      return kExitUserError;
    }
    int rc = kExitOk;
    for (auto& p : comp.programs) {
      ir::Program base = ir::lower(*p);
      ir::Program sched = ir::clone(base);
      out << "verify " << base.name << " (no schedule)\n";
      verify::Options vo;
      vo.ranks = inv.ranks;
      vo.seed = inv.seed;
      vo.dumpDir = inv.dumpDir;
      if (verify::verify(base, sched, vo, out, err) != 0) rc = kExitUserError;
    }
    return rc;
  }
  return kExitOk;
}

}  // namespace

std::vector<std::string> defaultModuleDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("COCONETC_STDLIB"); env && *env) dirs.push_back(env);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share" / "coconetc" / "stdlib";
    if (std::filesystem::is_directory(installed, ec)) dirs.push_back(installed.string());
  }
  dirs.push_back(COCONETC_SOURCE_STDLIB);
  return dirs;
}

int run(const Invocation& inv, std::ostream& out, std::ostream& err) {
  int rc = kExitInternal;
  runOnLargeStack(kCompilerStack, [&] {
    try {
      rc = pipeline(inv, out, err);
    } catch (const InternalError& e) {
      err << "coconetc: internal compiler error: " << e.what()
          << "\nplease report this bug with the input that caused it\n";
      rc = kExitInternal;
    } catch (const std::bad_alloc&) {
      err << "coconetc: error: out of memory\n";
      rc = kExitUserError;
    } catch (const std::exception& e) {
      err << "coconetc: internal compiler error: unexpected exception: " << e.what()
          << "\nplease report this bug with the input that caused it\n";
      rc = kExitInternal;
    }
  });
  return rc;
}

}  // namespace coconet::driver
