// The measured search (Measure.h): builds, checks and timings of configs, coordinate descent over
// their dimensions, the database kept after every measurement (a rerun resumes from it).
#include "tune/Measure.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <ostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "backend/CudaEmitter.h"
#include "backend/emit/Spelling.h"
#include "ir/Fallback.h"
#include "support/Files.h"
#include "tune/Enumerate.h"
#include "tune/Report.h"
#include "verify/Verify.h"

namespace coconet::tune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// A command's lines of standard output (none where it fails).
std::vector<std::string> outputLines(const std::string& cmd) {
  std::vector<std::string> lines;
  if (FILE* f = ::popen((cmd + " 2>/dev/null").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) {
      std::string line = buf;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      lines.push_back(line);
    }
    ::pclose(f);
  }
  return lines;
}
std::string firstLine(const std::string& cmd) {
  auto lines = outputLines(cmd);
  return lines.empty() ? "" : lines.front();
}

// A file's text ("" where it is missing: a folder not written yet).
std::string readAll(const fs::path& p) {
  std::string text, error;
  return readFileBounded(p.string(), kMaxSourceBytes, text, error) ? text : "";
}

// Why a candidate failed, from the log its record names ("FAILED (check.log)"): ": " and the log's
// first line that says error (else its last line), cut short; "" where there is none.
std::string logReason(const fs::path& dir, const std::string& what) {
  const auto open = what.rfind('('), close = what.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::istringstream lines(readAll(dir / what.substr(open + 1, close - open - 1)));
  std::string pick, last;
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    last = line;
    if (pick.empty() && (line.find("error") != std::string::npos || line.find("cannot") != std::string::npos)) pick = line;
  }
  if (pick.empty()) pick = last;
  if (pick.size() > 160) pick = pick.substr(0, 157) + "...";
  return pick.empty() ? "" : ": " + pick;
}

// p with its sizes bound to the shape timed (as -D binds them for verify).
ir::Program boundTo(const ir::Program& program, const std::map<std::string, int64_t>& sizes) {
  ir::Program p = ir::clone(program);
  for (auto& prm : p.params)
    if (auto it = sizes.find(prm.name); prm.isSize && it != sizes.end()) {
      prm.value = static_cast<double>(it->second);
      prm.ivalue = it->second;
    }
  return p;
}

}  // namespace

int64_t sizeValue(const std::string& text) {
  int64_t v = 1;
  std::stringstream ss(text);
  for (std::string f; std::getline(ss, f, '*');) {
    const auto caret = f.find('^');
    try {
      if (caret == std::string::npos) {
        v *= std::stoll(f);
      } else {
        int64_t b = std::stoll(f.substr(0, caret)), e = std::stoll(f.substr(caret + 1)), r = 1;
        while (e-- > 0) r *= b;
        v *= r;
      }
    } catch (const std::exception&) {
      return -1;
    }
  }
  return v;
}

namespace {

class Search {
public:
  Search(const ir::Program& base, const MeasureOptions& o, std::ostream& out, std::ostream& err)
      : base_(base), o_(o), out_(out), err_(err) {}

  int run(const std::string& handScript);

private:
  const ir::Program& base_;
  const MeasureOptions& o_;
  std::ostream &out_, &err_;
  bool measuredTable_ = false;
  const backend::tuning::Table& table_ = backend::tuning::forArch(o_.arch, measuredTable_);
  std::vector<ScheduleCandidate> schedules_;
  std::vector<ir::Program> programs_;  // the schedules applied
  std::map<std::string, int64_t> sizes_;
  json db_;  // {"gpu", "driver", ..., "records": {key: record}}
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int world_ = 1;
  size_t measured_ = 0;
  std::optional<Config> bestSoFar_;            // (at the world size searched: the progress lines)
  std::map<std::string, Config> codeRep_;      // code hash -> the config first seen with it
  std::map<std::string, std::string> codeOf_;  // config key -> its code hash

  bool overBudget() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > o_.budgetMinutes * 60;
  }
  std::string recordKey(const Config& c) const { return tune::recordKey(world_, c); }
  fs::path buildDir(const Config& c) const {
    const size_t h = std::hash<std::string>{}(base_.name + "|" + schedules_[c.schedule].script + "|" + c.settings());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016zx", h);
    return fs::path(o_.outDir) / "builds" / buf;
  }
  fs::path binary(const Config& c) const { return buildDir(c) / "build" / (backend::detail::className(base_.name) + "_main"); }

  void findSchedules(const std::string& handScript);
  bool emit(const Config& c, std::string* generated);
  bool build(std::vector<Config> cs);
  void measure(const Config& c);
  const json* record(const Config& c) const {
    auto it = db_["records"].find(recordKey(c));
    return it == db_["records"].end() ? nullptr : &*it;
  }
  double time(const Config& c) const {
    const json* r = record(c);
    return r && (*r)["check"] == "ok" ? (*r)["median_us"].get<double>() : 1e300;
  }
  void save() const { writeFile((fs::path(o_.outDir) / "tuning-db.json").string(), db_.dump(1) + "\n"); }
  Config descend(int schedule, const std::vector<Dimension>& dims);
  bool faster(const Config& a, const Config& b) const;
  bool notRead(const Config& c, const std::string& entry) const;
  std::string command(const Config& c, const std::string& what, const std::string& args, const fs::path& to) const;
  double benchOnce(const Config& c, const fs::path& log, json* r);
  bool confirmed(const Config& c, const Config& base);
  const Config& representative(const Config& c) const;
  void ablate(const Config& best);
};

void Search::findSchedules(const std::string& handScript) {
  schedules_.push_back({"none", "", 0});
  programs_.push_back(ir::clone(base_));
  std::set<std::string> keys{programKey(base_)};
  if (!handScript.empty()) {
    ir::Program p = applyScript(base_, handScript);
    keys.insert(programKey(p));
    schedules_.push_back({"hand", handScript, 0});
    programs_.push_back(std::move(p));
  }
  EnumerateOptions eo;
  eo.depth = o_.depth;
  eo.limit = o_.limit;
  std::vector<std::pair<ScheduleCandidate, ir::Program>> found;
  const Space space = enumerate(base_, eo);
  for (size_t k = 0; k < space.candidates.size(); ++k) {
    ir::Program p = applyScript(base_, space.candidates[k].script);
    if (!keys.insert(programKey(p)).second) continue;
    const double predicted = predictMicroseconds(p, sizes_);
    found.emplace_back(ScheduleCandidate{"enumerated " + std::to_string(k), space.candidates[k].script, predicted}, std::move(p));
  }
  std::stable_sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first.predicted < b.first.predicted; });
  for (size_t k = 0; k < found.size() && static_cast<int>(k) < o_.schedules; ++k) {
    schedules_.push_back(found[k].first);
    programs_.push_back(std::move(found[k].second));
  }
  for (size_t k = 0; k < schedules_.size(); ++k) schedules_[k].predicted = predictMicroseconds(programs_[k], sizes_);
}

// Writes c's sources into its build folder (unless there); *generated gets the program's .cu text.
bool Search::emit(const Config& c, std::string* generated) {
  const fs::path dir = buildDir(c), src = dir / "src";
  const std::string cls = backend::detail::className(base_.name);
  if (readAll(dir / "key.txt") != c.settings() + "\n" + schedules_[c.schedule].script || !fs::exists(dir / "code.txt")) {
    ir::Program q;
    try {
      q = applyScript(base_, configScript(schedules_[c.schedule].script, c));
    } catch (const std::exception& e) {  // (a knob value the target does not take there: never built, never chosen)
      fs::remove_all(dir);
      fs::create_directories(dir);
      writeFile((dir / "emit.log").string(), std::string("the schedule does not apply: ") + e.what() + "\n");
      return false;
    }
    backend::tuning::Table t = table_;
    for (auto& [name, v] : c.entries)
      for (auto& e : t.entries)
        if (e.name == name) {
          backend::tuning::Rule r;
          r.value = v;
          e.rules = {r};
        }
    t.tunedBy = "coconetc tune (" + c.settings() + ")";
    backend::CompileOptions co;
    co.outDir = src.string();
    co.arch = o_.arch;
    co.tuning = &t;
    co.sourcePath = base_.name + ".cnet";
    co.scheduleText = configScript(schedules_[c.schedule].script, c);
    if (!schedules_[c.schedule].script.empty() && ir::unscheduledFallback(base_, q).sameStorage) co.unscheduled = &base_;
    fs::remove_all(dir);
    fs::create_directories(src);
    try {
      backend::emitCuda(q, co);
    } catch (const std::exception& e) {  // (recorded as not built: the message in emit.log)
      writeFile((dir / "emit.log").string(), std::string(e.what()) + "\n");
      return false;
    }
    writeFile((dir / "key.txt").string(), c.settings() + "\n" + schedules_[c.schedule].script);
    // the code without its comments (which name the settings): settings that change nothing
    // make the same code, built and timed once
    std::vector<fs::path> files;
    for (auto& f : fs::directory_iterator(src))
      if (f.path().filename() != "manifest.json") files.push_back(f.path());  // (which names the settings)
    std::sort(files.begin(), files.end());
    std::string code;
    for (auto& f : files) {
      std::istringstream lines(readAll(f));
      for (std::string line; std::getline(lines, line);)
        if (line.find_first_not_of(' ') == std::string::npos || line.compare(line.find_first_not_of(' '), 2, "//") != 0)
          code += line + "\n";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(code));
    writeFile((dir / "code.txt").string(), buf);
  }
  const std::string code = readAll(dir / "code.txt");
  codeRep_.emplace(code, c);
  codeOf_[c.key()] = code;
  if (generated) *generated = readAll(src / (cls + ".cu")) + readAll(src / (cls + "_unscheduled.cu"));
  return true;
}

// The config first seen with c's code (c itself where it was first).
const Config& Search::representative(const Config& c) const {
  auto it = codeOf_.find(c.key());
  return it == codeOf_.end() ? c : codeRep_.at(it->second);
}

// Builds the configs not built yet, `jobs` at once; false when over the budget before the end.
bool Search::build(std::vector<Config> cs) {
  std::vector<Config> todo;
  for (auto& c : cs)
    if (!record(c) && emit(c, nullptr) && representative(c).key() == c.key() && !fs::exists(binary(c))) todo.push_back(c);
  const int jobs = o_.jobs > 0 ? o_.jobs : std::max(1u, std::thread::hardware_concurrency() / 2);
  for (size_t at = 0; at < todo.size(); at += jobs) {
    if (overBudget()) return false;
    std::vector<std::thread> threads;
    for (size_t k = at; k < std::min(todo.size(), at + jobs); ++k)
      threads.emplace_back([this, d = buildDir(todo[k]), target = binary(todo[k]).filename().string()] {
        const std::string log = quote((d / "build.log").string()), src = quote((d / "src").string()), bld = quote((d / "build").string());
        const std::string cmd = o_.runner.empty()
                                    ? "cmake -S " + src + " -B " + bld + " -DCMAKE_BUILD_TYPE=Release > " + log +
                                          " 2>&1 && cmake --build " + bld + " --target " + target + " -j 2 >> " + log + " 2>&1"
                                    : quote(o_.runner) + " build " + src + " " + bld + " > " + log + " 2>&1";
        (void)std::system(cmd.c_str());
      });
    for (auto& t : threads) t.join();
  }
  return true;
}

// The command that runs c's driver (through --runner where given) with `args`, its output to `to`.
std::string Search::command(const Config& c, const std::string& what, const std::string& args, const fs::path& to) const {
  const fs::path bin = binary(c);
  std::string e = o_.runner.empty() ? quote(bin.string()) : quote(o_.runner) + " " + what + " " + quote(bin.string());
  return e + " --spawn " + std::to_string(world_) + " " + args + " > " + quote(to.string()) + " 2>&1";
}

// One timed run of c's driver (--bench) into `log`: its median in microseconds; 0 where it printed
// no timing, -1 where it failed. The first run's table reads and NCCL version go to `r` / the DB.
double Search::benchOnce(const Config& c, const fs::path& log, json* r) {
  std::string args = "--bench --iters " + std::to_string(o_.iters) + " --batch " + std::to_string(o_.batch);
  for (auto& [k, v] : o_.sizes) args += " -D " + quote(k + "=" + v);
  if (std::system(command(c, "bench", args, log).c_str()) != 0) return -1;
  double t = 0;
  std::istringstream lines(readAll(log));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("{", 0) == 0) try {
        const json j = json::parse(line);
        t = j.at("median_us").get<double>();
        // the bytes the table's entries were read at (the bounds of per-shape values: --shapes)
        if (r && j.contains("table_reads") && !r->contains("table_reads")) (*r)["table_reads"] = j["table_reads"];
        if (j.contains("nccl")) db_["nccl"] = j["nccl"];  // (the version the candidates link)
      } catch (const std::exception&) {}
  return t;
}

// Whether c, faster than `base` by the search's rule, stays so when the two are timed again in
// turns (c, base, c, base, ...: o_.repeats runs each). Runs timed one candidate after another
// drift between builds and processes (on an H100, the same code's median moved 18% at 7 us), so a
// win is taken only where it holds side by side. The outcome is kept in c's record.
bool Search::confirmed(const Config& c, const Config& base) {
  if (time(base) >= 1e300) return true;  // (the base has no time: nothing to time against)
  const Config& cr = representative(c);
  const Config& br = representative(base);
  if (cr.key() == br.key()) return false;
  json& rec = db_["records"][recordKey(c)];
  const std::string against = recordKey(base);
  if (rec.contains("confirm") && rec["confirm"].value("against", "") == against) return rec["confirm"]["won"].get<bool>();
  std::vector<double> a, b;
  for (int k = 0; k < o_.repeats; ++k) {
    const double ta = benchOnce(cr, buildDir(cr) / ("confirm" + std::to_string(k) + ".log"), nullptr);
    const double tb = benchOnce(br, buildDir(br) / ("confirm" + std::to_string(k) + ".log"), nullptr);
    if (ta <= 0 || tb <= 0) break;
    a.push_back(ta), b.push_back(tb);
  }
  bool won = false;
  double ma = 0, mb = 0;
  if (a.size() == static_cast<size_t>(o_.repeats)) {
    std::sort(a.begin(), a.end()), std::sort(b.begin(), b.end());
    ma = a[a.size() / 2], mb = b[b.size() / 2];
    won = ma < mb && mb - ma > std::max(a.back() - a.front(), b.back() - b.front());
  }
  rec["confirm"] = {{"against", against}, {"runs_us", a}, {"base_runs_us", b}, {"won", won}};
  save();
  out_ << "p" << world_ << " " << schedules_[c.schedule].name << (c.settings().empty() ? "" : " " + c.settings())
       << ": timed in turns with " << (base.settings().empty() ? schedules_[base.schedule].name : base.settings()) << ": "
       << (a.size() == static_cast<size_t>(o_.repeats) ? formatUs(ma) + " against " + formatUs(mb) : std::string("a run failed")) << ", "
       << (won ? "faster" : "not faster: kept") << "\n";
  return won;
}

// Checks c against the schedule's vectors, then times it o_.repeats times; the record goes into
// the database, which is saved.
void Search::measure(const Config& c) {
  if (record(c) || overBudget()) return;
  if (const Config& rep = representative(c); rep.key() != c.key()) {  // (the same code: its record)
    measure(rep);
    if (const json* r = record(rep)) {
      json copy = *r;
      copy["settings"] = c.settings();
      copy["knobs"] = c.knobs;
      copy["entries"] = c.entries;
      copy["same_code_as"] = rep.settings();
      db_["records"][recordKey(c)] = copy;
      save();
    }
    return;
  }
  const fs::path dir = buildDir(c), bin = binary(c);
  json r{{"program", base_.name},
         {"world", world_},
         {"schedule", schedules_[c.schedule].name},
         {"script", schedules_[c.schedule].script},
         {"settings", c.settings()},
         {"predicted_us", schedules_[c.schedule].predicted}};
  r["knobs"] = c.knobs;
  r["entries"] = c.entries;
  r["sizes"] = json::object();
  for (auto& [k, v] : o_.sizes) r["sizes"][k] = v;
  std::string check = fs::exists(dir / "emit.log") ? "not emitted (emit.log)" : "no binary (build.log)";
  if (fs::exists(bin)) {
    const fs::path vectors =
        fs::path(o_.outDir) / "vectors" / ("s" + std::to_string(c.schedule)) / ("ranks" + std::to_string(world_));  // (verify --dump's)
    const int rc = std::system(command(c, "check", "--check " + quote(vectors.string()), dir / "check.log").c_str());
    check = rc == 0 ? "ok" : "FAILED (check.log)";
  }
  r["check"] = check;
  std::vector<double> medians;
  for (int k = 0; check == "ok" && k < o_.repeats; ++k) {
    const fs::path log = dir / ("bench" + std::to_string(k) + ".log");
    const double t = benchOnce(c, log, &r);
    if (t < 0) {
      r["check"] = "bench failed (" + log.filename().string() + ")";
      break;
    }
    if (t > 0) medians.push_back(t);
  }
  if (r["check"] == "ok" && medians.size() == static_cast<size_t>(o_.repeats)) {
    std::sort(medians.begin(), medians.end());
    r["runs_us"] = medians;
    r["median_us"] = medians[medians.size() / 2];
    r["spread"] = (medians.back() - medians.front()) / medians[medians.size() / 2];
  } else if (r["check"] == "ok") {
    r["check"] = "no timing in the bench logs";
  }
  db_["records"][recordKey(c)] = r;
  save();
  ++measured_;
  out_ << "[" << measured_ << "] p" << world_ << " " << schedules_[c.schedule].name << (c.settings().empty() ? "" : " " + c.settings())
       << ": ";
  if (r["check"] != "ok") {
    const std::string what = r["check"];
    out_ << what << logReason(dir, what) << "\n";
    return;
  }
  const double t = r["median_us"];
  // the best so far: the first timed, then each that wins by the search's rule (descend)
  if (!bestSoFar_) bestSoFar_ = c;
  out_ << formatUs(t) << " (spread " << formatPercent(r["spread"].get<double>()) << "); best so far " << formatUs(time(*bestSoFar_)) << ", "
       << schedules_[bestSoFar_->schedule].name << (bestSoFar_->settings().empty() ? "" : " " + bestSoFar_->settings()) << "\n";
}

// The best config of one schedule: its setting as written, then one dimension at a time.
Config Search::descend(int schedule, const std::vector<Dimension>& dims) {
  Config best;
  best.schedule = schedule;
  build({best});
  measure(best);
  if (time(best) < 1e300 && bestSoFar_ && faster(best, *bestSoFar_)) bestSoFar_ = best;  // (another schedule as written)
  // As written it ran but gave wrong results (or the check could not run): every setting would do
  // the same, so none is built (a wrong result is a compiler bug to report, not a setting to avoid).
  if (const json* r = record(best); r && (*r)["check"].get<std::string>().rfind("FAILED", 0) == 0) {
    out_ << "p" << world_ << " " << schedules_[schedule].name << ": as written it failed its check ("
         << (buildDir(best) / "check.log").string() << "); its settings are not searched\n";
    return best;
  }
  for (const Dimension& d : dims) {
    if (overBudget()) break;
    if (!d.entry.empty() && notRead(best, d.entry)) {
      out_ << "p" << world_ << " " << schedules_[schedule].name << ": " << d.entry
           << " is not read at this shape (the code takes another path): not searched\n";
      continue;
    }
    std::vector<Config> tries;
    for (const std::string& v : d.values) {
      Config c = best;
      if (!d.entry.empty() && std::stoll(v) == table_.value(d.entry, world_, 0))
        c.entries.erase(d.entry);  // (the table's own value: the point without the entry)
      else if (d.entry.empty())
        c.knobs[d.target][d.knob] = v;
      else
        c.entries[d.entry] = std::stoll(v);
      if (c.key() != best.key()) tries.push_back(c);
    }
    build(tries);
    for (auto& c : tries) {
      measure(c);
      if (faster(c, best) && confirmed(c, best)) {
        best = c;
        if (!bestSoFar_ || faster(best, *bestSoFar_)) bestSoFar_ = best;
      }
    }
  }
  return best;
}

// Whether c's timed runs never read `entry`, one that takes bytes (the driver records each read of
// those: table_reads): its values would then time the same code with another constant in the
// header, and a value that "won" would be the noise between builds.
bool Search::notRead(const Config& c, const std::string& entry) const {
  if (table_.entry(entry).args.find("bytes") == std::string::npos) return false;  // (reads not recorded)
  const json* r = record(c);
  return r && r->contains("table_reads") && (*r)["table_reads"].is_object() && !(*r)["table_reads"].contains(entry);
}

// Whether a beats b by more than either's run-to-run range (a change that gains less is noise).
bool Search::faster(const Config& a, const Config& b) const {
  const double ta = time(a), tb = time(b);
  if (ta >= tb) return false;
  if (tb >= 1e300) return true;
  auto range = [&](const Config& c) {
    const json& runs = (*record(c))["runs_us"];
    return runs.back().get<double>() - runs.front().get<double>();
  };
  return tb - ta > std::max(range(a), range(b));
}

// The best with each of its table entries back at the table's value, one at a time: the evidence
// tuning.json gives for each entry it changes.
void Search::ablate(const Config& best) {
  std::vector<Config> tries;
  for (auto& [name, v] : best.entries) {
    Config c = best;
    c.entries.erase(name);
    tries.push_back(c);
  }
  build(tries);
  for (auto& c : tries) measure(c);
}

int Search::run(const std::string& handScript) {
  for (auto& [k, v] : o_.sizes) sizes_[k] = sizeValue(v);
  for (auto& prm : base_.params)
    if (prm.isSize && (!sizes_.count(prm.name) || sizes_[prm.name] <= 0)) {
      err_ << "coconetc: error: tune: give every size of " << base_.name << " with -D (the shape it times): " << prm.name
           << " has no value\n";
      return 1;
    }
  fs::create_directories(fs::path(o_.outDir) / "builds");
  const fs::path dbPath = fs::path(o_.outDir) / "tuning-db.json";
  if (fs::exists(dbPath)) try {
      db_ = json::parse(readAll(dbPath));
    } catch (const std::exception& e) {
      err_ << "coconetc: error: " << dbPath.string() << " is not a tuning database: " << e.what() << "\n";
      return 1;
    }
  if (!db_.contains("records")) db_["records"] = json::object();
  // What the records mean: this program (as lowered), its hand schedule, the shape, the arch, the
  // enumeration's bounds and the compiler. A folder that holds another's is not resumed.
  std::string what = ir::print(base_) + "|" + handScript + "|" + o_.arch + "|" + COCONETC_VERSION + "|" + std::to_string(o_.depth) + "|" +
                     std::to_string(o_.limit) + "|" + std::to_string(o_.schedules) + "|batch " + std::to_string(o_.batch);
  for (auto& [k, v] : o_.sizes) what += "|" + k + "=" + v;
  char fingerprint[32];
  std::snprintf(fingerprint, sizeof fingerprint, "%016zx", std::hash<std::string>{}(what));
  if (db_.contains("fingerprint") && db_["fingerprint"] != fingerprint) {
    err_ << "coconetc: error: " << dbPath.string()
         << " holds the tuning of another program, schedule, shape, arch, search bound, --batch or compiler version; give another -o "
            "folder (or remove that one)\n";
    return 1;
  }
  db_["fingerprint"] = fingerprint;
  db_["program"] = base_.name;
  db_["gpu"] = o_.runner.empty() ? firstLine("nvidia-smi --query-gpu=name --format=csv,noheader") : "(runner " + o_.runner + ")";
  db_["driver"] = o_.runner.empty() ? firstLine("nvidia-smi --query-gpu=driver_version --format=csv,noheader") : "";
  if (db_["gpu"] == "") db_["gpu"] = "an unknown GPU (nvidia-smi gave no name)";
  db_["arch"] = o_.arch;
  if (o_.runner.empty()) {  // (a world size past the GPUs here fails every candidate's check: say so first)
    int gpus = 0;
    for (const std::string& line : outputLines("nvidia-smi -L")) gpus += line.rfind("GPU ", 0) == 0;
    for (int P : o_.gpus)
      if (P > gpus) {
        err_ << "coconetc: error: tune: --gpus " << P << " needs " << P << (P == 1 ? " GPU" : " GPUs") << "; this machine has " << gpus
             << (gpus == 0 ? " (nvidia-smi lists none)" : "") << "\n";
        return 1;
      }
  }
  db_["command"] = o_.command;
  findSchedules(handScript);
  out_ << "tuning " << base_.name << " on " << db_["gpu"].get<std::string>() << ": " << schedules_.size() << " schedules, budget "
       << o_.budgetMinutes << " min\n";
  // each schedule's vectors (verify --dump at the world sizes timed), at the shape timed: the check
  // runs the candidate on the sizes it is timed at
  const ir::Program shaped = boundTo(base_, sizes_);
  for (size_t k = 0; k < schedules_.size(); ++k) {
    verify::Options vo;
    vo.ranks = o_.gpus;
    vo.seed = o_.seed;
    vo.scheduled = !schedules_[k].script.empty();
    vo.boundElements = std::numeric_limits<int64_t>::max();  // the shape timed, however large
    vo.dumpDir = (fs::path(o_.outDir) / "vectors" / ("s" + std::to_string(k))).string();
    std::ostringstream vout, verr;
    if (verify::verify(shaped, boundTo(programs_[k], sizes_), vo, vout, verr) != 0) {
      err_ << "coconetc: error: tune: schedule " << schedules_[k].name << " of " << base_.name << " did not verify:\n"
           << vout.str() << verr.str();
      return 1;
    }
  }
  std::vector<Result> results;
  for (int P : o_.gpus) {
    world_ = P;
    bestSoFar_.reset();
    Result res;
    res.world = P;
    for (size_t k = 0; k < schedules_.size(); ++k) {
      Config base;
      base.schedule = static_cast<int>(k);
      std::string generated;
      if (!emit(base, &generated)) continue;
      std::vector<Dimension> dims;
      for (auto& [target, knobs] : knobSpace(programs_[k]).targets)
        for (auto& [knob, values] : knobs) dims.push_back({target, knob, "", values});
      for (const auto* e : entriesRead(table_, generated)) {
        Dimension d{"", "", e->name, {}};
        for (int64_t v : e->search) d.values.push_back(std::to_string(v));
        dims.push_back(d);
      }
      if (!o_.only.empty())
        std::erase_if(dims, [&](const Dimension& d) { return std::find(o_.only.begin(), o_.only.end(), d.name()) == o_.only.end(); });
      const Config best = descend(static_cast<int>(k), dims);
      res.perSchedule.push_back(best);
      if (!res.found || faster(best, res.best)) res.best = best, res.found = true;
    }
    if (res.found) ablate(res.best);
    results.push_back(res);
  }
  return writeResults(base_, table_, schedules_, results, db_, o_, out_, err_);
}

}  // namespace

int measure(const ir::Program& base, const std::string& handScript, const MeasureOptions& o, std::ostream& out, std::ostream& err) {
  return Search(base, o, out, err).run(handScript);
}

}  // namespace coconet::tune
