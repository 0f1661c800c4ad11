// coconetc: the command-line driver.
//   coconetc check PROG.cnet [-D NAME=VALUE]...
//   coconetc emit --stage ast|ir|sched|plan PROG.cnet [-D NAME=VALUE]...
//   coconetc verify PROG.cnet [--ranks 1,2,4] [--dump DIR] [--allow-skips]
//   coconetc compile PROG.cnet -o DIR
#include <CLI/CLI.hpp>
#include <cctype>
#include <charconv>
#include <iostream>
#include <sstream>

#include "driver/Compiler.h"
#include "support/Diagnostics.h"
#include "support/Files.h"
#include "support/Strings.h"

using namespace coconet::driver;

namespace {

// Parses NAME=VALUE; returns false for a malformed binding.
bool parseDefine(const std::string& s, std::pair<std::string, std::string>& out) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

// What a command printed must have reached standard output: a full disk or a closed pipe makes
// the command fail, whatever it computed.
int finish(int rc) {
  try {
    coconet::flushStdout();
  } catch (const coconet::FileError& e) {
    std::cerr << "coconetc: error: " << e.what() << "\n";
    return rc == kExitOk ? kExitUserError : rc;
  }
  return rc;
}

// The option an argument names ("--ranks" of "--ranks=2", "-D" of "-DN=4"), or "" for a value.
std::string optionName(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return "";
  if (arg[1] == '-') return arg.substr(0, arg.find('='));
  return arg.substr(0, 2);
}

bool takes(const CLI::App* app, const std::string& option) {
  for (const CLI::Option* o : app->get_options()) {
    for (auto& n : o->get_lnames())
      if ("--" + n == option) return true;
    for (auto& n : o->get_snames())
      if ("-" + n == option) return true;
  }
  return false;
}

std::vector<std::string> optionNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options())
    for (auto& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

// What is wrong with a command line that CLI11 refused, in the user's words: an unknown command
// or option named, with the nearest one; an option of another command said to be that one's.
// "" where CLI11's own message says it better (a missing value, a value out of range).
std::string usageProblem(CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  std::vector<std::string> commands;
  for (auto* s : subs) commands.push_back(s->get_name());
  std::string list;
  for (size_t i = 0; i < commands.size(); ++i) list += (i ? (i + 1 == commands.size() ? " or " : ", ") : "") + commands[i];
  auto ownerOf = [&](const std::string& option) -> std::string {
    for (auto* s : subs)
      if (takes(s, option)) return s->get_name();
    return "";
  };
  size_t i = 0;
  while (i < args.size() && (args[i] == "-h" || args[i] == "--help" || args[i] == "--version")) ++i;
  if (i == args.size()) return "no command given: coconetc COMMAND PROG.cnet [OPTIONS], where COMMAND is " + list;
  const std::string& first = args[i];
  if (first != "-" && first[0] == '-') {
    const std::string opt = optionName(first), owner = ownerOf(opt);
    if (!owner.empty())
      return "'" + coconet::printable(opt) + "' is an option of '" + owner + "': it follows the command (coconetc " + owner +
             " PROG.cnet " + coconet::printable(opt) + " ...)";
    const std::string near = coconet::closestMatch(opt, optionNames(&app));
    return "unknown option '" + coconet::printable(opt) + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?");
  }
  CLI::App* sub = nullptr;
  for (auto* s : subs)
    if (s->get_name() == first) sub = s;
  if (!sub) {
    const std::string near = coconet::closestMatch(first, commands);
    return "unknown command '" + coconet::printable(first) + "'" +
           (near.empty() ? "; the commands are " + list : "; did you mean '" + near + "'?");
  }
  for (size_t k = i + 1; k < args.size(); ++k) {
    const std::string opt = optionName(args[k]);
    if (opt.empty() || takes(sub, opt) || takes(&app, opt)) continue;
    const std::string owner = ownerOf(opt);
    if (!owner.empty()) return "'" + coconet::printable(opt) + "' is an option of '" + owner + "', not of '" + sub->get_name() + "'";
    const std::string near = coconet::closestMatch(opt, optionNames(sub));
    return "unknown option '" + coconet::printable(opt) + "' of '" + sub->get_name() + "'" +
           (near.empty() ? "" : "; did you mean '" + near + "'?");
  }
  return "";
}

}  // namespace

// --seed and --ranks (verify, tune) into inv: false after a usage error, printed.
static bool seedAndRanks(const std::string& seed, const std::string& rankList, Invocation& inv) {
  auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), inv.seed);
  if (seed.empty() || !std::isdigit(static_cast<unsigned char>(seed[0])) || ec != std::errc() || end != seed.data() + seed.size()) {
    std::cerr << "coconetc: error: --seed " << coconet::printable(seed) << ": not a decimal integer from 0 to 2^64 - 1\n";
    return false;
  }
  inv.ranks.clear();
  if (rankList.empty()) {
    std::cerr << "coconetc: error: --ranks is empty; give rank counts, comma-separated (e.g. 1,2,4)\n";
    return false;
  }
  std::stringstream ss(rankList);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int v = 0;
    auto [ptr, ec2] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec2 != std::errc() || ptr != item.data() + item.size() || v < 1 || v > 1024) {
      std::cerr << "coconetc: error: --ranks " << coconet::printable(rankList) << ": '" << coconet::printable(item)
                << "' is not a rank count in [1, 1024]\n";
      return false;
    }
    inv.ranks.push_back(v);
  }
  return true;
}

// `coconetc tune`: the autotuner's options.
static CLI::App* addTune(CLI::App& app, const auto& addCommon, Invocation& inv, bool& list, std::string& ranks, std::string& seed,
                         std::string& gpus) {
  auto* tune = app.add_subcommand("tune",
                                  "the autotuner: times schedules, knobs and tuning-table entries on this machine's GPUs "
                                  "(-o DIR), or --list enumerates the schedules the primitives admit for the program "
                                  "(each kept once per distinct IR) and verifies each");
  addCommon(tune);
  tune->add_flag("--list", list, "enumerate and verify the candidate schedules, with the knob space of each; time nothing");
  tune->add_option("-o,--output", inv.outDir,
                   "without --list: time candidates on this machine's GPUs into DIR (tuning-db.json, best.sched, "
                   "tuning.json, report.md; a rerun resumes); -D gives the shape timed")
      ->type_name("DIR");
  tune->add_option("--gpus", gpus, "world sizes timed, comma-separated (processes on this machine)")->capture_default_str();
  tune->add_option("--budget", inv.tuneBudget, "minutes: no build or run starts after them")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  tune->add_option("--jobs", inv.tuneJobs, "builds at once (default: half the cores)")->check(CLI::Range(1, 256));
  tune->add_option("--schedules", inv.tuneSchedules,
                   "enumerated schedules timed besides the one beside the program and none, the cost model's first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  tune->add_option("--only", inv.tuneOnly,
                   "the dimensions searched, comma-separated: tuning-table entries (row_split_min) and knobs of targets "
                   "(f.rounds); default: every one the candidates read")
      ->delimiter(',')
      ->type_name("NAME,...");
  tune->add_option("--shapes", inv.tuneShapes,
                   "tune each shape of FILE (a line each: NAME=VALUE ..., with -D's values for the sizes it does not name) into "
                   "DIR/SHAPE; DIR/tuning.json then picks each entry's value by the bytes the code reads it at")
      ->type_name("FILE");
  tune->add_option("--repeats", inv.tuneRepeats, "timed runs (processes) per candidate")->capture_default_str()->check(CLI::Range(1, 100));
  tune->add_option("--iters", inv.tuneIters, "timed calls per run")->capture_default_str()->check(CLI::Range(1, 100000));
  tune->add_option("--batch", inv.tuneBatch,
                   "calls back to back in each timed call, its time divided by them (the driver's --bench --batch): a small "
                   "program's GPU time, not its launch gaps")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  tune->add_option("--arch", inv.arch, "GPU architecture (its tuning table is the one tuned)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a"}));
  tune->add_option("--runner", inv.tuneRunner,
                   "build and run candidates through PROGRAM (PROGRAM build SRC BUILD; PROGRAM check|bench BINARY ARGS...) "
                   "instead of cmake and the built driver: the tests' stand-in for a GPU machine")
      ->type_name("PROGRAM");
  tune->add_option("--depth", inv.tuneDepth, "steps per schedule at most")->capture_default_str()->check(CLI::Range(0, 12));
  tune->add_option("--limit", inv.tuneLimit, "candidates at most")->capture_default_str()->check(CLI::Range(1, 100000));
  tune->add_option("--ranks", ranks, "rank counts each candidate is verified at, comma-separated")->capture_default_str();
  tune->add_option("--seed", seed, "random seed for sizes and inputs, 0 to 2^64 - 1")->capture_default_str();
  tune->add_option("--json", inv.tuneJson, "also write the candidates (script, verification, knob values) to FILE as JSON")
      ->type_name("FILE");
  return tune;
}

// The options of every command that choose a derived program: --backward, --saving, --from-schedule, --wrt.
static void addDerivation(CLI::App* sub, Invocation& inv) {
  sub->add_flag("--backward", inv.backward,
                "the backward program instead: PROG_backward, the gradients of the outputs with respect to the inputs "
                "(its schedule: PROG.backward.sched beside the program)");
  sub->add_flag("--saving", inv.saving,
                "the forward that saves what its backward reads instead: PROG with those values as extra outputs "
                "(what PROG.backward.sched beside the program recomputes is not saved)");
  sub->add_flag("--from-schedule", inv.fromSchedule,
                "with --backward or --saving: differentiate the program as its schedule (PROG.sched) leaves it: a "
                "sequence-parallel forward's reduce-scatter gets an all-gather in the backward, its sliced values "
                "are saved sliced");
  sub->add_option("--wrt", inv.wrt, "with --backward or --saving: the inputs to differentiate (default: every floating-point input)")
      ->delimiter(',')
      ->type_name("NAME,...");
}

static int command(int argc, char** argv) {
  CLI::App app{"coconetc: a compiler for distributed machine-learning programs"};
  app.set_version_flag("--version", std::string("coconetc ") + COCONETC_VERSION);
  app.require_subcommand(1);

  Invocation inv;
  inv.exitAfter = true;
  std::vector<std::string> defines;
  auto addCommon = [&](CLI::App* sub) {
    sub->add_option("input", inv.input, "the .cnet program ('-': read it from standard input)")->required();
    sub->add_option("-D,--define", defines, "bind a program parameter: -D NAME=VALUE")->type_name("NAME=VALUE");
    sub->add_option("-I,--stdlib", inv.moduleDirs, "search this folder for imported modules first")->type_name("DIR");
    sub->add_option("--error-limit", inv.errorLimit, "stop after this many errors (0: no limit)");
    sub->add_option("--schedule", inv.schedule, "schedule script to apply (default: PROG.sched beside the program; 'none': none)")
        ->type_name("FILE|none");
    sub->add_flag("--print-after-all", inv.printAfterAll, "print the IR after lowering and after every schedule step");
    addDerivation(sub, inv);
    sub->add_option("--color", inv.color, "diagnostics in colour: auto (where standard error is a terminal), always or never")
        ->type_name("WHEN")
        ->check(CLI::IsMember({"auto", "always", "never"}));
  };
  auto* check = app.add_subcommand("check", "parse and type-check a program; silent when it is correct");
  addCommon(check);
  auto* emit = app.add_subcommand("emit", "print an intermediate form of a program");
  std::string stage;
  emit->add_option("--stage", stage,
                   "what to print: ast (the typed AST), ir (the scheduled IR), sched (the applied schedule) or "
                   "plan (the CUDA backend's plan: each stage's launch and storage, and why)")
      ->required()
      ->check(CLI::IsMember({"ast", "ir", "sched", "plan"}));
  addCommon(emit);
  emit->add_flag("--device-collectives,!--no-device-collectives", inv.deviceCollectives,
                 "with --stage plan: plan as `compile` does with this flag (default: on)");

  auto* verify = app.add_subcommand("verify",
                                    "run the program and its scheduled form on the CPU for "
                                    "several rank counts and compare every output and state");
  addCommon(verify);
  std::string ranks = "1,2,3,4,8";
  verify->add_option("--ranks", ranks, "rank counts to simulate, comma-separated")->capture_default_str();
  std::string seed = "1";
  verify->add_option("--seed", seed, "random seed for sizes, inputs and dropout, 0 to 2^64 - 1")->capture_default_str();
  verify->add_option("--dump", inv.dumpDir, "write inputs and expected results per rank count to DIR")->type_name("DIR");
  verify->add_flag("--allow-skips", inv.allowSkips,
                   "pass although some rank counts compare nothing (no sizes run with them, or only the program without its "
                   "schedule does); by default such a rank count fails the verification");

  std::string tuneRanks = "1,2,4";
  bool tuneList = false;
  std::string tuneGpus = "1";
  CLI::App* tune = addTune(app, addCommon, inv, tuneList, tuneRanks, seed, tuneGpus);

  auto* compile = app.add_subcommand("compile", "write CUDA code and a build manifest for the scheduled program");
  addCommon(compile);
  compile
      ->add_option("-o,--output", inv.outDir,
                   "output folder: new, empty, or an earlier compile's (whose files this one replaces or removes)")
      ->required()
      ->type_name("DIR");
  compile->add_flag("--force", inv.force, "write into an output folder that holds other files (same-named ones are replaced)");
  compile->add_option("--arch", inv.arch, "GPU architecture")
      ->capture_default_str()
      ->check(CLI::IsMember({"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a"}));
  compile->add_flag("--device-collectives,!--no-device-collectives", inv.deviceCollectives,
                    "collectives over the world as kernels over NCCL's device API: fused reduce_scatter -> "
                    "element-wise -> all_gather groups (also overlapped), allreduces, fused reduce_scatter + "
                    "all_gather pairs, with NCCL calls as the run-time fallback (default: on; "
                    "--no-device-collectives emits NCCL calls only)");
  static std::string target = "cuda";
  compile
      ->add_option("--target", target,
                   "what to write: cuda (the program's CUDA library, C interface and driver) or torch (that, and a "
                   "Python package pip builds against the installed torch: torch.ops.coconet.NAME)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cuda", "torch"}));
  compile
      ->add_option("--tuning", inv.tuningFile,
                   "a tuning file (coconetc tune's tuning.json): its measured entries replace those of the tuning "
                   "table --arch selects, in the generated coconet_tuning.h and the plan")
      ->type_name("FILE");
  compile->add_flag("--timeline", inv.timeline,
                    "record CUDA events after every stage, copy-engine round and overlap chunk of one call "
                    "(the COCONET_TIMELINE_CALL-th, default 10) and print their times to stderr");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string problem = usageProblem(app, std::vector<std::string>(argv + 1, argv + argc));
    std::cerr << "coconetc: error: " << (problem.empty() ? coconet::printable(e.what()) : problem) << "\n"
              << "Run 'coconetc --help' for usage.\n";
    return kExitUsage;
  }
  for (auto& d : defines) {
    std::pair<std::string, std::string> kv;
    if (!parseDefine(d, kv)) {
      std::cerr << "coconetc: error: -D " << coconet::printable(d) << ": expected NAME=VALUE\n";
      return kExitUsage;
    }
    inv.defines.push_back(kv);
  }
  if (inv.backward && inv.saving) {
    std::cerr << "coconetc: error: --backward and --saving: one program at a time (the backward, or the forward that saves for it)\n";
    return kExitUsage;
  }
  inv.backward = inv.backward || (!inv.wrt.empty() && !inv.saving);  // (--wrt names the inputs of a backward program)
  if (inv.fromSchedule && !inv.backward && !inv.saving) {
    std::cerr << "coconetc: error: --from-schedule: give --backward or --saving (it says which forward is differentiated)\n";
    return kExitUsage;
  }
  if (compile->parsed()) {
    inv.action = Action::Compile;
    inv.torchTarget = target == "torch";
    return run(inv, std::cout, std::cerr);
  }
  if (tune->parsed()) {
    if (tuneList == !inv.outDir.empty()) {
      std::cerr << "coconetc: error: tune: give -o DIR (time candidates on this machine's GPUs) or --list (enumerate them), "
                   "one of them\n";
      return kExitUsage;
    }
    if (tuneList && !inv.tuneShapes.empty()) {
      std::cerr << "coconetc: error: tune: --shapes times each shape (-o DIR); --list enumerates schedules at none\n";
      return kExitUsage;
    }
    if (!seedAndRanks(seed, tuneList ? tuneRanks : tuneGpus, inv)) return kExitUsage;
    if (!tuneList) inv.tuneGpus = inv.ranks;
    for (int i = 0; i < argc; ++i) inv.commandLine += (i ? " " : "") + std::string(i ? argv[i] : "coconetc");
    inv.action = tuneList ? Action::TuneList : Action::TuneMeasure;
    return run(inv, std::cout, std::cerr);
  }
  if (verify->parsed()) {
    if (!seedAndRanks(seed, ranks, inv)) return kExitUsage;
    inv.action = Action::Verify;
  } else
    inv.action = !emit->parsed()    ? Action::Check
                 : stage == "ir"    ? Action::EmitIR
                 : stage == "sched" ? Action::EmitSched
                 : stage == "plan"  ? Action::EmitPlan
                                    : Action::EmitAST;
  return run(inv, std::cout, std::cerr);
}

int main(int argc, char** argv) {
  coconet::checkedStdout();
  return finish(command(argc, argv));
}
