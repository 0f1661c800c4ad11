// What a measured tuning run writes (Measure.h): the best schedule (best.sched), the tuning file
// of its table entries (tuning.json, for `compile --tuning`) and the report (report.md): the best,
// the schedule beside the program and the program unscheduled side by side, and how the cost
// model's ranking of the schedules compares with the measured one.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/Measure.h"

namespace coconet::tune {

// The search at one world size: each schedule's best config, and the best of all.
struct Result {
  int world = 1;
  bool found = false;
  Config best;
  std::vector<Config> perSchedule;
};

// "123.4 us", "12.3%"
std::string formatUs(double us);
std::string formatPercent(double fraction);

// Spearman's rank correlation of two lists of equal length (ties take their mean rank); 0 for
// fewer than two.
double rankCorrelation(const std::vector<double>& a, const std::vector<double>& b);

// Writes best.sched, tuning.json and report.md into o.outDir from the database's records of the
// results; prints the summary. Returns 0 when the first world size's best was measured, 1 when no
// candidate passed its check (errors to err).
int writeResults(const ir::Program& base, const backend::tuning::Table& table, const std::vector<ScheduleCandidate>& schedules,
                 const std::vector<Result>& results, const nlohmann::json& db, const MeasureOptions& o, std::ostream& out,
                 std::ostream& err);

}  // namespace coconet::tune
