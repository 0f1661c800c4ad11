// Tuning at several shapes (Shapes.h).
#include "tune/Shapes.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ir/Fallback.h"
#include "support/Files.h"
#include "tune/Measure.h"
#include "tune/Report.h"

namespace coconet::tune {

namespace fs = std::filesystem;
using nlohmann::json;

std::string shapeText(const Shape& s) {
  std::string t;
  for (auto& [k, v] : s) t += (t.empty() ? "" : " ") + k + "=" + v;
  return t;
}

std::string shapeFolder(const Shape& s) {
  std::string f;
  for (auto& [k, v] : s) {
    f += (f.empty() ? "" : "_") + k;
    for (char c : v) f += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  }
  return f.empty() ? "shape" : f;
}

ShapeOutcome outcomeOf(const json& tf, const backend::tuning::Table& table, const std::string& shape) {
  ShapeOutcome o;
  o.shape = shape;
  const int world = tf.value("world", 1);
  auto known = [&](const std::string& name) {
    return std::any_of(table.entries.begin(), table.entries.end(), [&](const auto& e) { return e.name == name; });
  };
  if (tf.contains("best") && tf["best"].contains("table_reads"))
    for (auto& [name, range] : tf["best"]["table_reads"].items()) {
      if (!known(name) || !range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer())
        continue;
      o.reads[name] = {range[0].get<int64_t>(), range[1].get<int64_t>()};
      o.values[name] = table.value(name, world, range[0].get<int64_t>());
    }
  for (auto& e : tf.value("entries", json::array())) {
    const std::string name = e.at("name");
    if (!known(name)) throw std::runtime_error("entry '" + name + "' is not one of table " + table.name + "'s");
    o.values[name] = e.at("rules").at(0).at("value").get<int64_t>();
    o.why[name] = e.value("why", "");
  }
  return o;
}

namespace {

struct Bucket {
  int64_t lo, hi, value;
  std::string shape;
};

// A bytes_below bound between shapes read at `below` bytes and at `above` (below < above): the
// geometric middle of the gap, inside it.
int64_t gapBound(int64_t below, int64_t above) {
  const double mid = std::sqrt(static_cast<double>(below) * static_cast<double>(above));
  return std::clamp<int64_t>(std::llround(mid), below + 1, above);
}

// The value's rules over buckets sorted by bytes: a bytes_below bound where the value changes.
// `reach` is the most bytes a bucket so far was read at (its value the one in force there): a
// bucket that starts within it with another value takes that value, with a warning.
json rulesOf(std::vector<Bucket> buckets, const std::string& name, std::vector<std::string>& warnings) {
  std::sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) { return a.lo < b.lo; });
  size_t reach = 0;
  json rules = json::array();
  for (size_t i = 1; i < buckets.size(); ++i) {
    const Bucket& r = buckets[reach];
    if (buckets[i].value != r.value && buckets[i].lo <= r.hi) {
      warnings.push_back("entry '" + name + "': shapes " + r.shape + " and " + buckets[i].shape +
                         " read it at overlapping bytes and want " + std::to_string(r.value) + " and " + std::to_string(buckets[i].value) +
                         "; " + r.shape + "'s is kept for both");
      buckets[i].value = r.value;
    }
    if (buckets[i].value != r.value) {  // (then buckets[i].lo > r.hi: a gap) the geometric middle of the gap
      rules.push_back({{"bytes_below", gapBound(r.hi, buckets[i].lo)}, {"value", r.value}});
    }
    if (buckets[i].hi >= r.hi || buckets[i].value != r.value) reach = i;
  }
  rules.push_back({{"value", buckets[reach].value}});
  return rules;
}

}  // namespace

json mergeOutcomes(const std::vector<ShapeOutcome>& shapes, const backend::tuning::Table& table, std::vector<std::string>& warnings) {
  json entries = json::array();
  std::set<std::string> changed;
  for (auto& s : shapes)
    for (auto& [name, why] : s.why) changed.insert(name);
  for (const std::string& name : changed) {
    const backend::tuning::Entry& e = table.entry(name);
    std::vector<Bucket> buckets;
    std::set<int64_t> values;
    size_t valued = 0;  // shapes whose best read it
    std::string why;
    for (auto& s : shapes) {
      auto v = s.values.find(name);
      if (v == s.values.end()) continue;
      values.insert(v->second);
      ++valued;
      auto r = s.reads.find(name);
      std::string at = s.shape;
      if (r != s.reads.end()) {
        buckets.push_back({r->second.first, r->second.second, v->second, s.shape});
        at += " (read at " + std::to_string(r->second.first) +
              (r->second.second != r->second.first ? " to " + std::to_string(r->second.second) : "") + " bytes)";
      }
      auto w = s.why.find(name);
      why += (why.empty() ? "" : "; ") + at + ": " +
             (w != s.why.end() ? w->second : std::to_string(v->second) + ", the table's value, kept (no other measured faster)");
    }
    json rules;
    const int64_t first = shapes.front().values.count(name) ? shapes.front().values.at(name) : *values.begin();
    if (values.size() == 1) {
      rules = json::array({{{"value", *values.begin()}}});
    } else if (e.args.find("bytes") == std::string::npos || buckets.empty()) {
      rules = json::array({{{"value", first}}});
      warnings.push_back("entry '" + name + "': the shapes want different values but " +
                         (buckets.empty() ? "no shape's best reported the bytes it read it at" : "it does not take bytes") +
                         "; the first shape's is kept");
    } else {
      if (buckets.size() < valued) warnings.push_back("entry '" + name + "': a shape's best did not report the bytes it read it at");
      rules = rulesOf(buckets, name, warnings);
    }
    entries.push_back({{"name", name}, {"rules", rules}, {"why", "coconetc tune --shapes: " + why}});
  }
  return entries;
}

int measureShapes(const ir::Program& base, const std::string& handScript, const MeasureOptions& o, const std::vector<Shape>& shapes,
                  std::ostream& out, std::ostream& err) {
  bool measured = false;
  const backend::tuning::Table& table = backend::tuning::forArch(o.arch, measured);
  std::vector<ShapeOutcome> outcomes;
  std::vector<json> files;
  std::vector<std::string> scheds;
  int failed = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    MeasureOptions so = o;
    so.sizes.clear();
    std::set<std::string> named;
    for (auto& [n, v] : shapes[k]) named.insert(n);
    for (auto& [n, v] : o.sizes)
      if (!named.count(n)) so.sizes.emplace_back(n, v);
    so.sizes.insert(so.sizes.end(), shapes[k].begin(), shapes[k].end());
    so.outDir = (fs::path(o.outDir) / shapeFolder(shapes[k])).string();
    out << "== shape " << k + 1 << " of " << shapes.size() << ": " << shapeText(so.sizes) << " (" << so.outDir << ")\n";
    if (measure(base, handScript, so, out, err) != 0) {
      ++failed;
      continue;
    }
    std::string text, error;
    json tf;
    try {
      if (!readFileBounded((fs::path(so.outDir) / "tuning.json").string(), kMaxSourceBytes, text, error)) throw std::runtime_error(error);
      tf = json::parse(text);
      outcomes.push_back(outcomeOf(tf, table, shapeText(shapes[k])));
    } catch (const std::exception& e) {
      err << "coconetc: error: tune: " << so.outDir << "/tuning.json: " << e.what() << "\n";
      ++failed;
      continue;
    }
    files.push_back(tf);
    std::string sched;
    (void)readFileBounded((fs::path(so.outDir) / "best.sched").string(), kMaxSourceBytes, sched, error);
    scheds.push_back(sched.substr(std::min(sched.size(), sched.find('\n') + 1)));  // (its first line names the shape)
  }
  if (failed) {
    err << "coconetc: error: tune: " << failed << " of " << shapes.size() << " shapes found no best (their folders say why)\n";
    return 1;
  }
  std::vector<std::string> warnings;
  json merged = files.front();
  merged.erase("best");
  merged.erase("sizes");
  merged["tuning"] = "coconetc tune --shapes";
  merged["shapes"] = json::array();
  for (auto& s : shapes) merged["shapes"].push_back(shapeText(s));
  merged["entries"] = mergeOutcomes(outcomes, table, warnings);
  writeFile((fs::path(o.outDir) / "tuning.json").string(), merged.dump(1) + "\n");
  const bool oneSchedule = std::all_of(scheds.begin(), scheds.end(), [&](const std::string& s) { return s == scheds.front(); });
  bool wroteBest = oneSchedule;
  std::string schedNote;  // (the report's line on the schedules)
  if (!oneSchedule) {
    // The program without a schedule fastest at the smaller shapes and one schedule at the larger,
    // by the inputs' bytes (the same on every rank): that schedule, and below the geometric middle
    // between the two groups the program without it (the tuning file's `unscheduled` rule).
    const ir::SizeExpr bytesExpr = ir::inputBytes(base);
    std::string scheduled;
    int64_t noneMax = 0, schedMin = INT64_MAX;
    bool split = true;
    std::string why;
    for (size_t k = 0; k < shapes.size() && split; ++k) {
      std::map<std::string, int64_t> env;
      for (auto& [n, v] : o.sizes) env[n] = sizeValue(v);
      for (auto& [n, v] : shapes[k]) env[n] = sizeValue(v);
      const std::optional<int64_t> b = bytesExpr.evaluate(env);
      const std::string& sc = scheds[k];
      const bool none = sc.find_first_not_of(" \t\n") == std::string::npos;
      if (!b)
        split = false;
      else if (none)
        noneMax = std::max(noneMax, *b), why += (why.empty() ? "" : "; ") + outcomes[k].shape + " (" + std::to_string(*b) + " bytes): none";
      else if (scheduled.empty() || sc == scheduled)
        scheduled = sc, schedMin = std::min(schedMin, *b);
      else
        split = false;
    }
    if (split && !scheduled.empty() && noneMax > 0 && noneMax < schedMin) {
      const int64_t bound = gapBound(noneMax, schedMin);
      merged["unscheduled"] = {{"bytes_below", bound},
                               {"why", "coconetc tune --shapes: the program without its schedule fastest at " + why + "; the schedule at " +
                                           std::to_string(schedMin) + " bytes and more"}};
      writeFile((fs::path(o.outDir) / "tuning.json").string(), merged.dump(1) + "\n");
      writeFile((fs::path(o.outDir) / "best.sched").string(),
                "// coconetc tune --shapes: the fastest schedule at the larger shapes; below " + std::to_string(bound) +
                    " bytes of inputs the program without it (tuning.json's `unscheduled`).\n" + scheduled);
      schedNote = "The program without a schedule is fastest below " + std::to_string(bound) +
                  " bytes of inputs, best.sched above: tuning.json's `unscheduled` rule makes the generated code choose by size.\n";
      wroteBest = true;
    }
  } else
    writeFile((fs::path(o.outDir) / "best.sched").string(),
              "// coconetc tune --shapes: the fastest schedule at every shape (" + std::to_string(shapes.size()) + ").\n" + scheds.front());
  std::ostringstream md;
  md << "# Tuning " << base.name << " at " << shapes.size() << " shapes\n\nGPU: " << merged.value("gpu", "") << ", "
     << merged.value("date", "") << ". Command: `" << o.command << "`. Each shape's run, with its own report, is in its folder.\n\n"
     << "| shape | best schedule | settings | best | default | vs default |\n|---|---|---|---|---|---|\n";
  for (size_t k = 0; k < files.size(); ++k) {
    const json& b = files[k]["best"];
    const double t = b.value("median_us", 0.0), t0 = b.value("default_us", -1.0);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3fx", t0 > 0 && t > 0 ? t0 / t : 0.0);
    md << "| " << outcomes[k].shape << " | " << b.value("schedule", "") << " | "
       << (b.value("settings", "").empty() ? "as written" : b.value("settings", "")) << " | " << formatUs(t) << " | "
       << (t0 > 0 ? formatUs(t0) : "-") << " | " << (t0 > 0 ? ratio : "-") << " |\n";
  }
  md << "\n## The tuning file's entries (`compile --tuning " << o.outDir << "/tuning.json`)\n\n";
  for (auto& e : merged["entries"]) md << "- " << e["name"].get<std::string>() << ": " << e["rules"].dump() << "\n";
  if (merged["entries"].empty()) md << "None: the table's values were the fastest at every shape.\n";
  md << "\n"
     << (!schedNote.empty() ? schedNote
         : oneSchedule      ? "Every shape's fastest schedule is the same: best.sched.\n"
                            : "The shapes' fastest schedules differ: each shape's best.sched is in its folder (the generated code takes "
                              "one schedule, or the program without it below a size; compile each shape's where they differ).\n");
  for (auto& w : warnings) md << "\nWarning: " << w << "\n";
  writeFile((fs::path(o.outDir) / "report.md").string(), md.str());
  for (auto& w : warnings) err << "coconetc: warning: tune: " << w << "\n";
  out << "wrote " << o.outDir << "/tuning.json, report.md" << (wroteBest ? ", best.sched" : "") << " (" << shapes.size() << " shapes)\n";
  return 0;
}

}  // namespace coconet::tune
