// The autotuner's search space (tune::enumerate): every candidate applies, no two make the same
// program, the order is fixed, and the bounds hold; the measured search's configs, cost model,
// rank correlation, and the tuning files compile --tuning reads.
#include <set>

#include "TestSupport.h"
#include "backend/tuning/Tuning.h"
#include "tune/Enumerate.h"
#include "tune/Measure.h"
#include "tune/Report.h"
#include "tune/Shapes.h"

using namespace coconet;

namespace {

const char* kRow = R"(program row(B: size, H: size) {
  in x : f16[B, H] sliced(1);
  in w : f16[H, H] sliced(0);
  in bias : f16[H] replicated;
  y = allreduce(+, matmul(x, w));
  out = y + bias;
  return out;
})";

}  // namespace

TEST_CASE("tune: candidates apply once each and in a fixed order", "[tune]") {
  auto c = test::checkText("t.cnet", kRow);
  ir::Program base = c->lowered();
  tune::Space a = tune::enumerate(base, {});
  tune::Space b = tune::enumerate(base, {});
  REQUIRE(a.candidates.size() > 10);
  CHECK_FALSE(a.truncated);
  REQUIRE(a.candidates.size() == b.candidates.size());
  std::set<std::string> keys;
  for (size_t k = 0; k < a.candidates.size(); ++k) {
    CHECK(a.candidates[k].script == b.candidates[k].script);
    ir::Program p = tune::applyScript(base, a.candidates[k].script);
    CHECK(keys.insert(tune::programKey(p)).second);  // no program twice
  }
  CHECK(a.candidates[0].script.empty());  // the program unscheduled first
  // the split, its epilogue reordered and fused, and the matmul overlapped with the group
  bool found = false;
  for (auto& cand : a.candidates)
    found = found || (cand.script.find("split(") != std::string::npos && cand.script.find("reorder(") != std::string::npos &&
                      cand.script.find("fuse(") != std::string::npos && cand.script.find("overlap(") != std::string::npos);
  CHECK(found);
}

TEST_CASE("tune: depth and limit bound the search", "[tune]") {
  auto c = test::checkText("t.cnet", kRow);
  ir::Program base = c->lowered();
  tune::EnumerateOptions o;
  o.depth = 1;
  for (auto& cand : tune::enumerate(base, o).candidates) CHECK(cand.steps <= 1);
  o.depth = 5;
  o.limit = 3;
  tune::Space s = tune::enumerate(base, o);
  CHECK(s.candidates.size() == 3);
  CHECK(s.truncated);
}

TEST_CASE("tune: a program's key ignores the names schedules give", "[tune]") {
  auto c = test::checkText("t.cnet", kRow);
  ir::Program base = c->lowered();
  ir::Program a = tune::applyScript(base, "rs, ag = split(y);\nf = fuse(rs, ag);\n");
  ir::Program b = tune::applyScript(base, "r2, g2 = split(y);\ngroup = fuse(r2, g2);\n");
  CHECK(ir::print(a) != ir::print(b));
  CHECK(tune::programKey(a) == tune::programKey(b));
}

TEST_CASE("tune: configs and their scripts and the cost model", "[tune]") {
  tune::Config c;
  c.schedule = 2;
  c.knobs["f"]["rounds"] = "4";
  c.knobs["f"]["roles"] = "split";
  c.entries["row_split_min"] = 2048;
  CHECK(c.key() == "s2 f.roles=split f.rounds=4 row_split_min=2048");
  CHECK(tune::configScript("f = fuse(a, b);\n", c) == "f = fuse(a, b);\ntune(f, roles = split, rounds = 4);\n");
  tune::Config none;
  CHECK(none.key() == "s0");
  CHECK(tune::configScript("", none).empty());
  // the cost model: more bytes, more time; a fused group is one launch
  auto t = test::checkText("row.cnet", kRow);
  ir::Program p = t->lowered();
  const double small = tune::predictMicroseconds(p, {{"B", 8}, {"H", 64}}), large = tune::predictMicroseconds(p, {{"B", 8}, {"H", 4096}});
  CHECK(small > 0);
  CHECK(large > small);
  ir::Program fused = tune::applyScript(p, "rs, ag = split(y);\nreorder(ag, out);\nf = fuse(rs, out, ag);\n");
  CHECK(tune::predictMicroseconds(fused, {{"B", 8}, {"H", 64}}) <
        tune::predictMicroseconds(tune::applyScript(p, "rs, ag = split(y);\nreorder(ag, out);\n"), {{"B", 8}, {"H", 64}}));
}

TEST_CASE("tune: rank correlation and the entries a program's code reads", "[tune]") {
  CHECK(tune::rankCorrelation({1, 2, 3}, {10, 20, 30}) == Approx(1));
  CHECK(tune::rankCorrelation({1, 2, 3}, {30, 20, 10}) == Approx(-1));
  CHECK(tune::rankCorrelation({1, 1, 2}, {5, 5, 9}) == Approx(1));
  CHECK(tune::rankCorrelation({1}, {1}) == 0);
  bool measured = false;
  const auto& table = backend::tuning::forArch("sm_90a", measured);
  auto names = [](const std::vector<const backend::tuning::Entry*>& es) {
    std::set<std::string> s;
    for (auto* e : es) s.insert(e->name);
    return s;
  };
  CHECK(names(tune::entriesRead(table, "x = coconet_rt::rowSplitParts(rows, n, p, s);")) ==
        std::set<std::string>{"row_split_min", "row_split_blocks"});
  CHECK(names(tune::entriesRead(table, "if (M >= coconet_rt::gemvMinRows(M * K * 2))")) == std::set<std::string>{"gemv_min_rows"});
  // the entries that were environment switches: read by the calls the generated code makes
  CHECK(names(tune::entriesRead(table,
                                "R = coconet_rt::rowThreads(n / V, 8, coconet_rt::rowMaxPacks(bytes), coconet_rt::rowLong(bytes));")) ==
        std::set<std::string>{"row_max_packs", "row_long"});
  CHECK(names(tune::entriesRead(table,
                                "CHECK(coconet_rt::launchDependent(k, blocks, coconet_rt::claimedPushes(P_, n / rounds, movers, 8)));\n"
                                "const int pulled = coconet_rt::claimedPulls(P_, rounds);\n"
                                "coconet_rt::tailFlags() ? dev_->flagEpoch[1] : 0u")) ==
        std::set<std::string>{"pdl", "push_tile_units", "pull_tile_units", "tail_flags"});
  CHECK(tune::entriesRead(table, "nothing").empty());
}

TEST_CASE("tune: a tuning file replaces entries and is checked", "[tune]") {
  bool measured = false;
  const auto& table = backend::tuning::forArch("sm_90a", measured);
  auto t =
      backend::tuning::tuned(table, R"({"entries": [{"name": "row_split_min", "rules": [{"value": 2048}], "why": "a run"}]})", "t.json");
  CHECK(t.value("row_split_min") == 2048);
  CHECK(t.entry("row_split_min").why == "a run");
  CHECK(t.value("row_split_blocks") == table.value("row_split_blocks"));
  CHECK(t.tunedBy == "t.json");
  CHECK(backend::tuning::header(t, "sm_90a", true)
            .find("rowSplitMin(long long bytes) {\n  tableRead(\"row_split_min\", bytes);\n  return 2048LL;") != std::string::npos);
  auto fails = [&](const std::string& json, const std::string& what) {
    try {
      backend::tuning::tuned(table, json, "t.json");
      FAIL("accepted: " << json);
    } catch (const std::runtime_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  fails("[]", "tuning file t.json: not a tuning file");
  fails(R"({"entries": [{"name": "nope", "rules": [{"value": 1}], "why": "x"}]})", "entry 'nope': table sm90 has no such entry");
  fails(R"({"entries": [{"name": "row_split_min", "rules": [{"value": 1}]}]})", "entry 'row_split_min': no why");
  fails(R"({"entries": [{"name": "row_split_min", "rules": [{"value": -1}], "why": "x"}]})", "is not a count");
  fails(R"({"entries": [{"name": "one_shot_max_bytes", "rules": [{"ranks": 2, "value": 1}], "why": "x"}]})",
        "the last rule has conditions");
}

TEST_CASE("tune: per-shape values merge into rules by the bytes they are read at", "[tune]") {
  bool measured = false;
  const auto& table = backend::tuning::forArch("sm_90a", measured);
  auto shape = [](const std::string& name, int64_t lo, int64_t hi, std::map<std::string, int64_t> values, bool changed = true) {
    tune::ShapeOutcome o;
    o.shape = name;
    o.values = values;
    for (auto& [e, v] : values) {
      o.reads[e] = {lo, hi};
      if (changed) o.why[e] = "measured at " + name;
    }
    return o;
  };
  std::vector<std::string> warnings;
  // three shapes, two values: one bound, between the 2nd's most and the 3rd's least bytes
  auto es =
      tune::mergeOutcomes({shape("c", 1 << 26, 1 << 26, {{"row_split_min", 8192}}), shape("a", 1 << 20, 1 << 21, {{"row_split_min", 2048}}),
                           shape("b", 1 << 22, 1 << 22, {{"row_split_min", 2048}})},
                          table, warnings);
  REQUIRE(es.size() == 1);
  CHECK(es[0]["rules"].dump() == R"([{"bytes_below":16777216,"value":2048},{"value":8192}])");
  CHECK(warnings.empty());
  // every shape the same value: one rule; a shape that kept the table's value is a bucket too
  es = tune::mergeOutcomes({shape("a", 100, 100, {{"row_split_blocks", 4}}), shape("b", 10000, 10000, {{"row_split_blocks", 4}})}, table,
                           warnings);
  CHECK(es[0]["rules"].dump() == R"([{"value":4}])");
  es = tune::mergeOutcomes({shape("a", 100, 100, {{"row_split_blocks", 4}}), shape("b", 10000, 10000, {{"row_split_blocks", 2}}, false)},
                           table, warnings);
  CHECK(es[0]["rules"].dump() == R"([{"bytes_below":1000,"value":4},{"value":2}])");
  // a bound never leaves the gap: reads at 10 and 11 bytes
  es = tune::mergeOutcomes({shape("a", 10, 10, {{"row_stream", 0}}), shape("b", 11, 11, {{"row_stream", 1}})}, table, warnings);
  CHECK(es[0]["rules"].dump() == R"([{"bytes_below":11,"value":0},{"value":1}])");
  // no shape changed an entry: not in the file
  CHECK(tune::mergeOutcomes({shape("a", 1, 1, {{"row_stream", 2}}, false)}, table, warnings).empty());
  CHECK(warnings.empty());
  // overlapping reads that want different values: the fewer bytes' value, and a warning
  es = tune::mergeOutcomes({shape("a", 100, 200, {{"row_split_min", 2048}}), shape("b", 150, 300, {{"row_split_min", 8192}})}, table,
                           warnings);
  CHECK(es[0]["rules"].dump() == R"([{"value":2048}])");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("shapes a and b read it at overlapping bytes") != std::string::npos);
  // a shape whose reads span the others' is an overlap too, not only its neighbour's
  warnings.clear();
  es = tune::mergeOutcomes({shape("wide", 1, 1000, {{"row_split_min", 2048}}), shape("b", 10, 20, {{"row_split_min", 2048}}),
                            shape("c", 30, 40, {{"row_split_min", 8192}})},
                           table, warnings);
  CHECK(es[0]["rules"].dump() == R"([{"value":2048}])");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("shapes wide and c read it at overlapping bytes") != std::string::npos);
  // an entry that takes no bytes cannot be bucketed: the first shape's value, and a warning
  warnings.clear();
  es = tune::mergeOutcomes({shape("a", 1, 1, {{"gather_batch_max_rows", 128}}), shape("b", 9, 9, {{"gather_batch_max_rows", 512}})}, table,
                           warnings);
  CHECK(es[0]["rules"].dump() == R"([{"value":128}])");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("it does not take bytes") != std::string::npos);
  CHECK(tune::shapeFolder({{"T", "8"}, {"H", "2^17"}}) == "T8_H2-17");
  CHECK(tune::shapeText({{"T", "8"}, {"H", "2^17"}}) == "T=8 H=2^17");
}

TEST_CASE("tune: a shape's outcome from its run's tuning file", "[tune]") {
  bool measured = false;
  const auto& table = backend::tuning::forArch("sm_90a", measured);
  const auto tf = nlohmann::json::parse(R"({"world": 1,
    "best": {"table_reads": {"row_split_min": [100, 200], "row_stream": [300, 300], "bad": [1], "nope": [1, 2], "row_max_packs": ["a", 2]}},
    "entries": [{"name": "row_split_min", "rules": [{"value": 2048}], "why": "measured"}]})");
  const tune::ShapeOutcome o = tune::outcomeOf(tf, table, "T=8");
  CHECK(o.shape == "T=8");
  CHECK(o.values.at("row_split_min") == 2048);                            // changed by the run
  CHECK(o.values.at("row_stream") == table.value("row_stream", 1, 300));  // read, the table's kept
  CHECK(o.reads.at("row_split_min") == std::pair<int64_t, int64_t>{100, 200});
  CHECK(o.why.at("row_split_min") == "measured");
  CHECK(!o.why.count("row_stream"));
  CHECK(!o.values.count("bad"));  // (a malformed range, or a name the table lacks, is skipped)
  CHECK(!o.values.count("nope"));
  CHECK(!o.values.count("row_max_packs"));
  // a run whose best reported no reads: the changed entries only
  const tune::ShapeOutcome bare = tune::outcomeOf(nlohmann::json::parse(R"({"entries": []})"), table, "T=64");
  CHECK(bare.values.empty());
  // a changed entry the table lacks: an error (measureShapes names the file)
  CHECK_THROWS_WITH(tune::outcomeOf(nlohmann::json::parse(R"({"entries": [{"name": "nope", "rules": [{"value": 1}]}]})"), table, "T=1"),
                    Catch::Contains("entry 'nope' is not one of table sm90's"));
}
