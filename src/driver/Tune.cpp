#include "driver/Tune.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/Files.h"
#include "tune/Enumerate.h"
#include "tune/Measure.h"
#include "tune/Shapes.h"
#include "verify/Verify.h"

namespace coconet::driver {

int tuneList(const Invocation& inv, const ir::Program& base, const ir::Program* hand, std::ostream& out, std::ostream& err) {
  tune::EnumerateOptions eo;
  eo.depth = inv.tuneDepth;
  eo.limit = inv.tuneLimit;
  const tune::Space space = tune::enumerate(base, eo);
  const std::string handKey = hand ? tune::programKey(*hand) : "";
  verify::Options vo;
  vo.ranks = inv.ranks;
  vo.seed = inv.seed;
  vo.allowSkips = true;  // (a schedule whose sizes some rank count cannot take is no wrong one)
  size_t failed = 0;
  int handAt = -1;
  nlohmann::json js{{"program", base.name},         {"source", inv.input},        {"depth", eo.depth}, {"limit", eo.limit},
                    {"truncated", space.truncated}, {"ranks_verified", vo.ranks}, {"seed", vo.seed}};
  js["candidates"] = nlohmann::json::array();
  out << "schedules of " << base.name << " (depth " << eo.depth << ", " << space.tried << " steps tried)\n";
  for (size_t k = 0; k < space.candidates.size(); ++k) {
    const tune::Candidate& c = space.candidates[k];
    ir::Program p = tune::applyScript(base, c.script);
    if (hand && tune::programKey(p) == handKey) handAt = static_cast<int>(k);
    std::ostringstream vout, verr;
    vo.scheduled = !c.script.empty();
    const bool ok = verify::verify(base, p, vo, vout, verr) == 0;
    failed += !ok;
    out << "candidate " << k << " (" << c.steps << (c.steps == 1 ? " step" : " steps") << "): " << (ok ? "verified" : "NOT verified")
        << "\n";
    std::istringstream lines(c.script.empty() ? std::string("(no schedule)\n") : c.script);
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    const tune::KnobSpace ks = tune::knobSpace(p);
    nlohmann::json jk = nlohmann::json::object();
    for (auto& [target, knobs] : ks.targets)
      for (auto& [knob, values] : knobs) jk[target][knob] = values;
    js["candidates"].push_back(
        {{"index", k}, {"steps", c.steps}, {"script", c.script}, {"verified", ok}, {"knobs", jk}, {"settings", ks.settings}});
    if (!ks.targets.empty()) {
      out << "  knobs:";
      for (auto& [target, knobs] : ks.targets) {
        out << " " << target << " (";
        for (size_t k = 0; k < knobs.size(); ++k) out << (k ? ", " : "") << knobs[k].first << " " << knobs[k].second.size();
        out << ")";
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, ks.settings < 1e9 ? "%.0f" : "%.3g", ks.settings);
      out << ": " << buf << " settings\n";
    }
    if (!ok) {
      std::istringstream why(vout.str() + verr.str());
      for (std::string line; std::getline(why, line);) out << "    | " << line << "\n";
    }
  }
  js["hand_candidate"] = handAt >= 0 ? nlohmann::json(handAt) : nlohmann::json(nullptr);
  if (!inv.tuneJson.empty()) writeFile(inv.tuneJson, js.dump(1) + "\n");
  if (hand)
    out << "the schedule beside the program (its knobs aside): " << (handAt >= 0 ? "candidate " + std::to_string(handAt) : "not among them")
        << "\n";
  if (space.truncated) out << "stopped at " << eo.limit << " candidates (--limit)\n";
  if (failed) {
    err << "coconetc: error: " << failed << " of " << space.candidates.size() << " schedules of " << base.name
        << " did not verify (a primitive changed a result: a compiler bug, please report it)\n";
    return kExitUserError;
  }
  out << space.candidates.size() << " schedules, each verified at ranks";
  for (size_t k = 0; k < vo.ranks.size(); ++k) out << (k ? ", " : " ") << vo.ranks[k];
  out << "\n";
  return kExitOk;
}

namespace {

// The shapes of --shapes FILE: a line each of NAME=VALUE words naming parameters of the program;
// '#' starts a comment. False after an error (at its line and column).
bool readShapes(const std::string& path, const ir::Program& base, SourceManager& sources, DiagnosticEngine& diags,
                std::vector<tune::Shape>& shapes, std::ostream& err) {
  std::string text, error;
  if (!readFileBounded(path, kMaxSourceBytes, text, error)) {
    err << "coconetc: error: tune: --shapes " << path << ": " << error << "\n";
    return false;
  }
  const uint32_t file = sources.add(path, text);
  std::set<std::string> params;
  for (auto& prm : base.params) params.insert(prm.name);
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const size_t stop = std::min(end, text.find('#', at));
    tune::Shape shape;
    std::set<std::string> named;
    for (size_t w = at; w < stop;) {
      if (std::isspace(static_cast<unsigned char>(text[w]))) {
        ++w;
        continue;
      }
      size_t e = w;
      while (e < stop && !std::isspace(static_cast<unsigned char>(text[e]))) ++e;
      const std::string word = text.substr(w, e - w);
      const size_t eq = word.find('=');
      const SourceLoc loc = sources.locOfOffset(file, w);
      const auto len = static_cast<uint32_t>(word.size());
      if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        diags.error(loc, "expected NAME=VALUE (a parameter of " + base.name + " and its value), not '" + word + "'", len);
      else if (!params.count(word.substr(0, eq)))
        diags.error(loc, "'" + word.substr(0, eq) + "' is not a parameter of " + base.name, static_cast<uint32_t>(eq));
      else if (!named.insert(word.substr(0, eq)).second)
        diags.error(loc, "'" + word.substr(0, eq) + "' is given twice in this shape", static_cast<uint32_t>(eq));
      else
        shape.emplace_back(word.substr(0, eq), word.substr(eq + 1));
      w = e;
    }
    if (!shape.empty()) shapes.push_back(std::move(shape));
    at = end + 1;
  }
  if (diags.hasErrors()) return false;
  if (shapes.empty()) {
    err << "coconetc: error: tune: --shapes " << path << " holds no shape (a line each: NAME=VALUE ...)\n";
    return false;
  }
  return true;
}

}  // namespace

int tuneMeasure(const Invocation& inv, const ir::Program& base, const std::string& handScript, SourceManager& sources,
                DiagnosticEngine& diags, std::ostream& out, std::ostream& err) {
  tune::MeasureOptions o;
  o.outDir = inv.outDir;
  o.sizes = inv.defines;
  o.gpus = inv.tuneGpus;
  o.budgetMinutes = inv.tuneBudget;
  o.jobs = inv.tuneJobs;
  o.schedules = inv.tuneSchedules;
  o.repeats = inv.tuneRepeats;
  o.iters = inv.tuneIters;
  o.batch = inv.tuneBatch;
  o.depth = inv.tuneDepth;
  o.limit = inv.tuneLimit;
  o.seed = inv.seed;
  o.arch = inv.arch;
  o.runner = inv.tuneRunner;
  o.only = inv.tuneOnly;
  o.command = inv.commandLine;
  if (inv.tuneShapes.empty()) return tune::measure(base, handScript, o, out, err) == 0 ? kExitOk : kExitUserError;
  std::vector<tune::Shape> shapes;
  if (!readShapes(inv.tuneShapes, base, sources, diags, shapes, err)) {
    if (diags.hasErrors()) err << diags.errorCount() << (diags.errorCount() == 1 ? " error" : " errors") << " generated.\n";
    return kExitUserError;
  }
  return tune::measureShapes(base, handScript, o, shapes, out, err) == 0 ? kExitOk : kExitUserError;
}

}  // namespace coconet::driver
