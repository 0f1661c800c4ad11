// Tuning at several shapes (`coconetc tune --shapes FILE`): one measured run per shape, each in its
// own folder, then one tuning file whose entries take each shape's value by the bytes the
// generated code reads them at (a decode shape and a training shape can want different splits of
// a row or thresholds of a GEMV). The bucket bounds come from the runs themselves: the driver
// reports, for the best candidate of each shape, the bytes each entry was read at (table_reads).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tuning/Tuning.h"
#include "tune/Measure.h"

namespace coconet::tune {

using Shape = std::vector<std::pair<std::string, std::string>>;  // NAME=VALUE, as -D gives them

// "T=8 H=131072"; its folder's name ("T8_H131072").
std::string shapeText(const Shape& s);
std::string shapeFolder(const Shape& s);

// One shape's outcome: the value of each entry its best candidate read (the table's where the run
// kept it), the least and most bytes it was read at, and the run's own account of each change.
struct ShapeOutcome {
  std::string shape;                                         // shapeText
  std::map<std::string, int64_t> values;                     // entry -> value
  std::map<std::string, std::pair<int64_t, int64_t>> reads;  // entry -> least, most bytes
  std::map<std::string, std::string> why;                    // entry -> the run's measurement
};

// The outcome of a run's tuning.json (what writeResults wrote) against the table.
ShapeOutcome outcomeOf(const nlohmann::json& tuningFile, const backend::tuning::Table& table, const std::string& shape);

// The entries of the merged tuning file: each entry some shape changed, with rules by bytes
// (bytes_below: the geometric middle between the shapes' reads) where the shapes want different
// values; adjacent buckets with one value merge. Where shapes that want different values read an
// entry at overlapping bytes, or the entry takes no bytes, the first shape's value is kept and a
// warning says so.
nlohmann::json mergeOutcomes(const std::vector<ShapeOutcome>& shapes, const backend::tuning::Table& table,
                             std::vector<std::string>& warnings);

// The whole run: measure() at each shape (o.sizes joined with the shape's), into o.outDir/FOLDER,
// then o.outDir/tuning.json (merged), report.md (a row per shape) and best.sched (where every
// shape's best schedule is the same; else each shape's stays in its folder). Returns 0 when every
// shape found a best.
int measureShapes(const ir::Program& base, const std::string& handScript, const MeasureOptions& o, const std::vector<Shape>& shapes,
                  std::ostream& out, std::ostream& err);

}  // namespace coconet::tune
