#include "driver/Compiler.h"
#include "driver/Load.h"
#include "driver/Output.h"
#include "driver/Tune.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

#include "sema/TypedASTPrinter.h"
#include "ir/Lower.h"
#include "autodiff/Backward.h"
#include "backend/CudaEmitter.h"
#include "backend/tuning/Tuning.h"
#include "ir/Fallback.h"
#include "ir/Rewrite.h"
#include "schedule/Schedule.h"
#include "verify/Verify.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Files.h"
#include "support/Thread.h"

namespace coconet::driver {
namespace {

// Whether standard error is a terminal that takes colours (as clang decides: not TERM=dumb).
bool stderrIsTerminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) && !(term && std::string(term) == "dumb");
}

constexpr size_t kCompilerStack = size_t(1) << 30;  // reserved, touched only as used

// "2 warnings generated." / "1 warning and 3 errors generated." (as clang counts them)
std::string countsLine(const DiagnosticEngine& diags) {
  const unsigned w = diags.warningCount(), e = diags.errorCount();
  std::string line;
  if (w) line += std::to_string(w) + (w == 1 ? " warning" : " warnings");
  if (w && e) line += " and ";
  if (e) line += std::to_string(e) + (e == 1 ? " error" : " errors");
  return line + " generated.\n";
}

int errorsGenerated(const DiagnosticEngine& diags, std::ostream& err) {
  err << countsLine(diags);
  return kExitUserError;
}

// What a command that ends the process leaves to the OS instead of freeing piece by piece (freeing
// a 200,000-statement program's AST and IR takes a good part of the time that building them
// does; clang's -disable-free does the same). Reachable from here: leak checkers do not count it.
struct Kept {
  std::vector<std::unique_ptr<sema::Compilation>> compilations;
  std::vector<ir::Program> programs;
};
Kept& kept() {
  static Kept* k = new Kept;
  return *k;
}

// verify (--backward: the gradients first; a wrong one ends it, and the last line says so)
int verifyAction(const Invocation& inv, const ir::Program& forward, const ir::Program& saving, const ir::Program& base,
                 const ir::Program& sched, bool scheduled, std::ostream& out, std::ostream& err) {
  verify::Options vo;
  if (inv.backward) vo.saving = &saving;
  vo.ranks = inv.ranks;
  vo.seed = inv.seed;
  vo.dumpDir = inv.dumpDir;
  vo.allowSkips = inv.allowSkips;
  vo.scheduled = scheduled;
  if (inv.backward && verify::verifyGradients(forward, base, vo, out, err) != 0) {
    out << "NOT verified: the gradients of " << forward.name << " (above)\n";
    return kExitUserError;
  }
  return verify::verify(base, sched, vo, out, err) != 0 ? kExitUserError : kExitOk;
}

// The file beside the program with extension `ext` (".sched", ".backward.sched") where there is
// one, else "" (also for a program read from standard input).
std::string besideProgram(const std::string& input, const char* ext) {
  if (input == "-") return "";
  auto beside = std::filesystem::path(input).replace_extension(ext);
  std::error_code ec;
  return std::filesystem::is_regular_file(beside, ec) ? beside.string() : "";
}

// A schedule script, registered with the sources; nullopt after an error (reported).
std::optional<schedule::Script> loadScript(sema::Compilation& comp, const std::string& path, DiagnosticEngine& diags, std::ostream& err) {
  std::string text, error;
  if (!readFileBounded(path, kMaxSourceBytes, text, error)) {
    err << "coconetc: error: " << error << "\n";
    return std::nullopt;
  }
  uint32_t file = comp.sources.add(path, std::move(text));
  auto script = schedule::parseScript(comp.sources, file, diags);
  if (!script) errorsGenerated(diags, err);
  return script;
}

// The backward schedule's recompute steps, taken out of the script (the derivation applies them:
// they decide what the forward saves); false after an error (reported).
bool takeRecompute(schedule::Script& script, std::vector<schedule::Step>& taken, std::vector<autodiff::Recompute>& names,
                   DiagnosticEngine& diags) {
  std::vector<schedule::Step> rest;
  for (auto& step : script.steps) {
    if (step.primitive != "recompute") {
      rest.push_back(std::move(step));
      continue;
    }
    if (!step.targets.empty() || step.args.empty()) {
      diags.error(step.loc, "'recompute' takes the names of forward values and makes no names",
                  static_cast<uint32_t>(step.primitive.size()));
      return false;
    }
    for (auto& a : step.args) {
      if (!a.key.empty() || a.pattern) {
        diags.error(a.key.empty() ? a.loc : a.keyLoc,
                    "'recompute' takes the names of forward values, not " + std::string(a.pattern ? "patterns" : "knobs"),
                    a.key.empty() ? a.length : static_cast<uint32_t>(a.key.size()));
        return false;
      }
      names.push_back({a.value, a.loc, a.length});
    }
    taken.push_back(std::move(step));
  }
  script.steps = std::move(rest);
  return true;
}

// --saving: the recompute steps of the backward schedule beside the program (what the backward
// computes again is not saved); false after an error (reported).
bool loadBackwardRecompute(const Invocation& inv, sema::Compilation& comp, std::vector<schedule::Step>& steps,
                           std::vector<autodiff::Recompute>& names, DiagnosticEngine& diags, std::ostream& err) {
  const std::string beside = besideProgram(inv.input, ".backward.sched");
  if (beside.empty()) return true;
  auto script = loadScript(comp, beside, diags, err);
  if (!script) return false;
  if (takeRecompute(*script, steps, names, diags)) return true;
  errorsGenerated(diags, err);
  return false;
}

// compile, emit --stage plan: the CUDA backend on the scheduled program.
int compileAction(const Invocation& inv, const ir::Program& base, const ir::Program& sched, const std::vector<schedule::Step>& trace,
                  const std::string& schedPath, DiagnosticEngine& diags, std::ostream& out, std::ostream& err) {
  backend::CompileOptions co;
  co.outDir = inv.outDir;
  co.arch = inv.arch;
  co.deviceCollectives = inv.deviceCollectives;
  co.timeline = inv.timeline;
  co.torch = inv.torchTarget;
  co.sourcePath = inv.input;
  co.schedulePath = schedPath;
  co.scheduleText = schedule::printScript(trace);
  co.diags = &diags;
  std::optional<backend::tuning::Table> tuned;
  if (!inv.tuningFile.empty()) {
    std::string text, error;
    if (!readFileBounded(inv.tuningFile, kMaxSourceBytes, text, error)) {
      err << "coconetc: error: " << error << "\n";
      return kExitUserError;
    }
    bool measured = false;
    try {
      tuned = backend::tuning::tuned(backend::tuning::forArch(inv.arch, measured), text, inv.tuningFile);
    } catch (const std::runtime_error& e) {
      err << "coconetc: error: " << e.what() << "\n";
      return kExitUserError;
    }
    co.tuning = &*tuned;
  }
  // Sizes that meet the program's requirements but not those its schedule added run the
  // program unscheduled, where the schedule keeps the caller's tensors as declared.
  // (and, the backend decides, where the schedule does not pay at a run's sizes)
  if (!trace.empty() && ir::unscheduledFallback(base, sched).sameStorage) co.unscheduled = &base;
  try {
    if (inv.action == Action::EmitPlan) {
      out << backend::planText(sched, co);
    } else {
      OutputFolder folder(inv.outDir, inv.force);
      co.outDir = folder.scratch();
      auto files = folder.commit(backend::emitCuda(sched, co));
      out << "wrote " << files.size() << " files to " << inv.outDir << "\n";
    }
  } catch (const std::runtime_error& e) {
    err << "coconetc: error: " << e.what() << "\n";
    return kExitUserError;
  }
  return kExitOk;
}

// --backward, --saving: the derivation. `base` (the lowered program, or with a forward script the
// program as it leaves it, its trace in forwardTrace) becomes the backward program or the forward
// that saves; `forward` gets the program differentiated, `saving` the forward that saves.
int derive(const Invocation& inv, ir::Program& base, ir::Program& forward, ir::Program& saving, const schedule::Script* forwardScript,
           std::vector<schedule::Step>& forwardTrace, const std::vector<autodiff::Recompute>& recompute, DiagnosticEngine& diags,
           std::ostream& err) {
  if (!inv.wrt.empty() && inv.wrt.size() == 1 && inv.wrt[0].empty()) {
    err << "coconetc: error: --wrt: expected input names\n";
    return kExitUsage;
  }
  if (forwardScript && !schedule::apply(base, *forwardScript, diags, forwardTrace, nullptr)) return errorsGenerated(diags, err);
  auto derived = autodiff::backward(base, autodiff::Request{inv.wrt, recompute}, diags);
  if (!derived) return errorsGenerated(diags, err);
  saving = ir::saving(base, *derived);
  if (inv.backward) {
    forward = std::move(base);
    base = std::move(*derived);
    forwardTrace.clear();  // (the backward's own schedule is its trace)
  } else {
    base = std::move(saving);  // (verify reads `saving` for a backward only)
  }
  return kExitOk;
}

int pipeline(const Invocation& inv, std::ostream& out, std::ostream& err) {
  auto owned = std::make_unique<sema::Compilation>();
  sema::Compilation& comp = *owned;
  struct Keep {
    bool on;
    std::unique_ptr<sema::Compilation>& c;
    ~Keep() {
      if (on) kept().compilations.push_back(std::move(c));
    }
  } keep{inv.exitAfter, owned};
  DiagnosticEngine diags(comp.sources, err);
  diags.setErrorLimit(inv.errorLimit);
  diags.setColor(inv.color == "always" || (inv.color == "auto" && &err == &std::cerr && stderrIsTerminal()));
  sema::Options opts;
  if (inv.action != Action::TuneMeasure) opts.defines = inv.defines;  // (tune: the shape timed, given at run time)
  LoadOptions load;
  load.moduleDirs = inv.moduleDirs;
  for (auto& d : defaultModuleDirs()) load.moduleDirs.push_back(d);
  checkFile(comp, inv.input, opts, load, diags);
  if (diags.hasErrors()) return errorsGenerated(diags, err);
  if (inv.action == Action::EmitAST) {
    for (auto& p : comp.programs) sema::printTypedAST(out, *p, comp.sources);
    return kExitOk;
  }

  // Lower, then apply the schedule.
  std::string schedPath = inv.schedule.empty() ? besideProgram(inv.input, inv.backward ? ".backward.sched" : ".sched") : inv.schedule;
  if (schedPath == "none") schedPath.clear();
  std::optional<schedule::Script> script;
  std::vector<schedule::Step> recomputeSteps;  // (a backward's: applied by the derivation)
  std::vector<autodiff::Recompute> recompute;
  if (inv.saving && !loadBackwardRecompute(inv, comp, recomputeSteps, recompute, diags, err)) return kExitUserError;
  if (!schedPath.empty()) {
    script = loadScript(comp, schedPath, diags, err);
    if (!script) return kExitUserError;
    if (inv.backward && !takeRecompute(*script, recomputeSteps, recompute, diags)) return errorsGenerated(diags, err);
    if (comp.programs.size() > 1) {
      err << "coconetc: error: " << inv.input << " defines " << comp.programs.size()
          << " programs; a schedule applies to a file with one program\n";
      return kExitUserError;
    }
  }
  // --from-schedule: the forward's schedule (PROG.sched; with --saving the one given) is applied
  // before the derivation, and not again after it
  std::optional<schedule::Script> forwardScript;
  if (inv.fromSchedule) {
    const std::string path = inv.saving ? schedPath : besideProgram(inv.input, ".sched");
    if (path.empty()) {
      err << "coconetc: error: --from-schedule: " << inv.input << " has no schedule to differentiate after ("
          << (inv.saving ? "--schedule FILE or " : "") << "PROG.sched beside it)\n";
      return kExitUserError;
    }
    forwardScript = inv.saving ? std::move(script) : loadScript(comp, path, diags, err);
    if (!forwardScript) return kExitUserError;
    if (inv.saving) script.reset();
  }
  int rc = kExitOk;
  for (auto& cp : comp.programs) {
    ir::Program base = ir::lower(*cp);
    // --backward: the program differentiated (verify checks the gradients against it) and the
    // forward that saves what the backward reads (verify draws the saved values with it)
    ir::Program forward, saving;
    std::vector<schedule::Step> forwardTrace;  // (--from-schedule: the forward's schedule, applied first)
    if (inv.backward || inv.saving) {
      if (const int r = derive(inv, base, forward, saving, forwardScript ? &*forwardScript : nullptr, forwardTrace, recompute, diags, err);
          r != kExitOk)
        return r;
    }
    // The scheduled program: a copy where a schedule changes it or verify compares the two, else
    // the lowered program itself.
    const bool copy = (script && !script->steps.empty()) || inv.action == Action::Verify || inv.action == Action::TuneList ||
                      inv.action == Action::TuneMeasure;
    ir::Program copied = copy ? ir::clone(base) : ir::Program{};
    ir::Program& sched = copy ? copied : base;
    struct KeepPrograms {
      bool on;
      ir::Program &a, &b;
      ~KeepPrograms() {
        if (!on) return;
        kept().programs.push_back(std::move(a));
        kept().programs.push_back(std::move(b));
      }
    } keepPrograms{inv.exitAfter, base, copied};
    std::vector<schedule::Step> trace = forwardTrace;  // (--saving --from-schedule: applied already)
    if (script) {
      if (!schedule::apply(sched, *script, diags, trace, inv.printAfterAll ? &out : nullptr)) return errorsGenerated(diags, err);
    } else if (inv.printAfterAll) {
      out << "// ---- IR after lowering\n" << ir::print(base);
    }
    switch (inv.action) {
      case Action::EmitIR:
        if (!inv.printAfterAll) out << ir::print(sched);
        break;
      case Action::EmitSched:
        out << "// " << base.name << (schedPath.empty() ? " (no schedule)" : ", schedule " + schedPath) << "\n"
            << schedule::printScript(recomputeSteps) << schedule::printScript(trace);
        break;
      case Action::TuneMeasure: {
        const int r = tuneMeasure(inv, base, schedule::printScript(trace), comp.sources, diags, out, err);
        if (r != kExitOk) rc = r;
        break;
      }
      case Action::TuneList: {
        const int r = tuneList(inv, base, script && !script->steps.empty() ? &sched : nullptr, out, err);
        if (r != kExitOk) rc = r;
        break;
      }
      case Action::Verify:
        out << "verify " << base.name
            << (schedPath.empty() ? " (no schedule)"
                                  : " with " + schedPath + " (" + std::to_string(trace.size()) + (trace.size() == 1 ? " step)" : " steps)"))
            << "\n";
        if (verifyAction(inv, forward, saving, base, sched, !trace.empty(), out, err) != kExitOk) rc = kExitUserError;
        break;
      case Action::EmitPlan:
      case Action::Compile:
        if (compileAction(inv, base, sched, trace, schedPath, diags, out, err) != kExitOk) return kExitUserError;
        break;
      default: break;
    }
  }
  if (diags.warningCount()) err << countsLine(diags);
  return rc;
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
      err << "coconetc: internal compiler error: " << e.what() << "\nplease report this bug with the input that caused it\n";
      rc = kExitInternal;
    } catch (const FileError& e) {
      err << "coconetc: error: " << e.what() << "\n";
      rc = kExitUserError;
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
