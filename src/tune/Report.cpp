// A measured tuning run's results (Report.h).
#include "tune/Report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <numeric>
#include <ostream>
#include <sstream>

#include "support/Files.h"

namespace coconet::tune {

namespace fs = std::filesystem;
using nlohmann::json;

std::string formatUs(double us) {
  char buf[48];
  std::snprintf(buf, sizeof buf, us < 100 ? "%.2f us" : "%.1f us", us);
  return buf;
}

std::string formatPercent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

double rankCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = a.size();
  if (n < 2 || b.size() != n) return 0;
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2;
      i = j + 1;
    }
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

namespace {

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

const json* recordOf(const json& db, int world, const Config& c) {
  auto it = db["records"].find(recordKey(world, c));
  return it == db["records"].end() || (*it)["check"] != "ok" ? nullptr : &*it;
}

std::string sizesText(const MeasureOptions& o) {
  std::string s;
  for (auto& [k, v] : o.sizes) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

}  // namespace

int writeResults(const ir::Program& base, const backend::tuning::Table& table, const std::vector<ScheduleCandidate>& schedules,
                 const std::vector<Result>& results, const json& db, const MeasureOptions& o, std::ostream& out, std::ostream& err) {
  if (results.empty() || !results.front().found || !recordOf(db, results.front().world, results.front().best)) {
    err << "coconetc: error: tune: no candidate of " << base.name << " passed its check and was timed (see " << o.outDir
        << "/builds/*/build.log and check.log)\n";
    return 1;
  }
  const std::string gpu = db.value("gpu", ""), date = today();
  const Result& first = results.front();
  const int hand = schedules.size() > 1 && schedules[1].name == "hand" ? 1 : -1;
  auto timeOf = [&](int world, const Config& c) {
    const json* r = recordOf(db, world, c);
    return r ? (*r)["median_us"].get<double>() : -1.0;
  };
  // best.sched
  const json& bestRec = *recordOf(db, first.world, first.best);
  std::ostringstream sched;
  sched << "// coconetc tune: the fastest of " << db["records"].size() << " candidates timed for " << base.name << " at " << sizesText(o)
        << " on " << first.world << " x " << gpu << " (" << date << "): " << formatUs(bestRec["median_us"]) << ", median of " << o.repeats
        << " runs.\n"
        << configScript(schedules[first.best.schedule].script, first.best);
  writeFile((fs::path(o.outDir) / "best.sched").string(), sched.str());
  // tuning.json: the best's table entries that differ from the table
  Config asWritten;
  asWritten.schedule = first.best.schedule;
  json tf{{"tuning", "coconetc tune"},    {"program", base.name}, {"gpu", gpu},           {"driver", db.value("driver", "")},
          {"nccl", db.value("nccl", "")}, {"date", date},         {"command", o.command}, {"world", first.world},
          {"sizes", json::object()}};
  for (auto& [k, v] : o.sizes) tf["sizes"][k] = v;
  // the best, and the bytes its table entries were read at (what --shapes bounds its buckets by)
  tf["best"] = {{"schedule", schedules[first.best.schedule].name},
                {"settings", first.best.settings()},
                {"median_us", bestRec["median_us"]},
                {"default_us", timeOf(first.world, Config{})},
                {"table_reads", bestRec.value("table_reads", json::object())}};
  tf["entries"] = json::array();
  for (auto& [name, v] : first.best.entries) {
    const int64_t was = table.value(name, first.world, 0);
    if (v == was) continue;
    Config without = first.best;
    without.entries.erase(name);
    const double t0 = timeOf(first.world, without);
    tf["entries"].push_back({{"name", name},
                             {"rules", json::array({{{"value", v}}})},
                             {"why", "coconetc tune on " + std::to_string(first.world) + " x " + gpu + ", " + date + ", " + base.name +
                                         " at " + sizesText(o) + ": " + std::to_string(v) + " " + formatUs(bestRec["median_us"]) +
                                         (t0 > 0 ? ", the table's " + std::to_string(was) + " " + formatUs(t0) : "") + " (" +
                                         (fs::path(o.outDir) / "tuning-db.json").string() + ")"}});
  }
  writeFile((fs::path(o.outDir) / "tuning.json").string(), tf.dump(1) + "\n");
  // report.md
  std::ostringstream md;
  md << "# Tuning " << base.name << "\n\n"
     << "GPU: " << gpu << " (driver " << db.value("driver", "") << ", NCCL " << db.value("nccl", "") << "), " << date << ". Command: `"
     << o.command << "`.\n"
     << "Sizes: " << sizesText(o) << ". Each time is the median of " << o.repeats << " runs (each the median of " << o.iters
     << " timed calls of " << o.batch << " back to back, per call); the spread is the runs' range over their median.\n";
  for (const Result& res : results) {
    if (!res.found) continue;
    Config none, handC;
    handC.schedule = hand;
    const double tNone = timeOf(res.world, none);
    md << "\n## " << res.world << (res.world == 1 ? " GPU" : " GPUs")
       << "\n\n| candidate | schedule | settings | median | spread | vs default |\n|---|---|---|---|---|---|\n";
    auto row = [&](const std::string& what, const Config& c) {
      const json* r = recordOf(db, res.world, c);
      if (!r) return;
      const double t = (*r)["median_us"];
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.3fx", tNone > 0 ? tNone / t : 0.0);
      md << "| " << what << " | " << schedules[c.schedule].name << " | " << (c.settings().empty() ? "as written" : c.settings()) << " | "
         << formatUs(t) << " | " << formatPercent((*r)["spread"]) << " | " << (tNone > 0 ? ratio : "-") << " |\n";
    };
    row("default", none);
    if (hand >= 0) row("hand", handC);
    row("best", res.best);
    // the cost model: its ranking of the schedules (as written) against the measured one
    std::vector<double> predicted, measured;
    md << "\nThe cost model's ranking of the schedules as written, against the times:\n\n| schedule | predicted | measured "
          "|\n|---|---|---|\n";
    for (size_t k = 0; k < schedules.size(); ++k) {
      Config c;
      c.schedule = static_cast<int>(k);
      const double t = timeOf(res.world, c);
      md << "| " << schedules[k].name << " | " << formatUs(schedules[k].predicted) << " | " << (t > 0 ? formatUs(t) : "-") << " |\n";
      if (t > 0) predicted.push_back(schedules[k].predicted), measured.push_back(t);
    }
    char rho[32];
    std::snprintf(rho, sizeof rho, "%.2f", rankCorrelation(predicted, measured));
    md << "\nRank correlation (Spearman): " << rho << " over " << measured.size() << " schedules.\n";
    out << "p" << res.world << ": best " << schedules[res.best.schedule].name
        << (res.best.settings().empty() ? "" : " " + res.best.settings()) << " " << formatUs(timeOf(res.world, res.best)) << "; default "
        << (tNone > 0 ? formatUs(tNone) : "-");
    if (hand >= 0) {
      const double th = timeOf(res.world, handC);
      out << "; hand " << (th > 0 ? formatUs(th) : "-");
    }
    out << "\n";
  }
  writeFile((fs::path(o.outDir) / "report.md").string(), md.str());
  out << "wrote " << o.outDir << "/best.sched, tuning.json, report.md, tuning-db.json\n";
  return 0;
}

}  // namespace coconet::tune
