// The compiler pipeline as the command line drives it. Later stages (ir, verify, compile)
// hang off the same entry point.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace coconet::driver {

enum class Action { Check, EmitAST, EmitIR, EmitSched, EmitPlan, Verify, Compile, TuneList, TuneMeasure };

struct Invocation {
  Action action = Action::Check;
  std::string input;
  std::vector<std::pair<std::string, std::string>> defines;
  std::vector<std::string> moduleDirs;  // --stdlib / -I, before the defaults
  unsigned errorLimit = 20;
  // Schedules: "" means NAME.sched beside the program if it exists; "none" means none.
  std::string schedule;
  bool printAfterAll = false;
  // The backward program (autodiff::backward) in place of the program; wrt: the inputs
  // differentiated (empty: every floating-point one).
  bool backward = false;
  std::vector<std::string> wrt;
  // The forward that saves what its backward reads (autodiff::saving; the backward's recompute
  // steps from PROG.backward.sched beside the program) in place of the program.
  bool saving = false;
  // With --backward or --saving: differentiate the program as its schedule leaves it (PROG.sched),
  // so that the backward's collectives are the adjoints of the scheduled forward's.
  bool fromSchedule = false;
  // Diagnostics in colour: "always", "never", or "auto" (where standard error is a terminal).
  std::string color = "auto";
  // verify
  std::vector<int> ranks{1, 2, 3, 4, 8};
  uint64_t seed = 1;
  std::string dumpDir;
  bool allowSkips = false;  // verify: rank counts that compare nothing do not fail it
  // tune --list: the search's bounds
  int tuneDepth = 5;
  std::string tuneJson;  // --json FILE: the candidates, their verification and knob values
  size_t tuneLimit = 20000;
  // tune (measuring, -o DIR): the world sizes timed, the budget, builds at once, enumerated
  // schedules timed, timed runs and calls per candidate, the stand-in for a GPU machine (tests)
  std::vector<int> tuneGpus{1};
  double tuneBudget = 30;
  int tuneJobs = 0, tuneSchedules = 2, tuneRepeats = 3, tuneIters = 20, tuneBatch = 10;
  std::string tuneRunner;
  std::vector<std::string> tuneOnly;  // --only: the dimensions searched
  std::string tuneShapes;             // --shapes FILE: a shape a line (NAME=VALUE ...), each tuned
  std::string commandLine;            // as typed, for the records
  // compile
  std::string outDir;
  std::string arch = "sm_90a";
  bool force = false;             // compile: write into a folder that holds files not of an earlier compile
  bool deviceCollectives = true;  // compile: collectives as kernels over NCCL's device API (--no-device-collectives: off)
  bool timeline = false;          // compile: events at the stages, rounds and chunks of one call, printed (--timeline)
  bool torchTarget = false;       // compile --target torch: also the PyTorch package
  std::string tuningFile;         // compile: --tuning FILE (coconetc tune's tuning.json)
  // The process ends after this run: its programs are left to the OS rather than freed (the
  // command-line driver sets it).
  bool exitAfter = false;
};

// Exit codes: 0 success, 1 errors in the user's input, 3 internal compiler error.
constexpr int kExitOk = 0, kExitUserError = 1, kExitUsage = 2, kExitInternal = 3;

// Runs the pipeline on a thread with a large stack (deeply nested input recurses), printing
// results to `out` and diagnostics to `err`.
int run(const Invocation& inv, std::ostream& out, std::ostream& err);

// The stdlib folders searched after the explicit ones: $COCONETC_STDLIB, the folder installed
// beside the executable, and the source tree's stdlib/.
std::vector<std::string> defaultModuleDirs();

}  // namespace coconet::driver
