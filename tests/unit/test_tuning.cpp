// The tuning tables (src/backend/tuning): parsing and its checks, lookups by rank count and size,
// the table --arch selects, the generated coconet_tuning.h (and the copy the runtime's own tests
// include), and that every entry is read somewhere.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/tuning/Tuning.h"

using namespace coconet::backend;

namespace {

using coconet::test::sourceFile;

std::string parseError(const std::string& json) {
  try {
    tuning::parse(json, "t.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string table(const std::string& entry) {
  return R"({"table": "t", "archs": ["sm_90a"], "measured_on": "a GPU", "entries": [)" + entry + "]}";
}

}  // namespace

TEST_CASE("the sm90 table: values by rank count and size", "[tuning]") {
  bool measured = false;
  const tuning::Table& t = tuning::forArch("sm_90a", measured);
  REQUIRE(measured);
  REQUIRE(t.name == "sm90");
  CHECK(t.value("one_shot_max_bytes", 2) == 8 << 20);
  CHECK(t.value("one_shot_max_bytes", 4) == 512 << 10);
  CHECK(t.value("one_shot_max_bytes", 8) == 512 << 10);
  CHECK(t.value("ll128_max_bytes", 8) == 0);
  CHECK(t.value("two_shot_group_max_bytes", 4) == INT64_MAX);  // unlimited
  CHECK(t.value("two_shot_group_max_bytes", 8) == 16 << 20);
  // devAutoRounds' buckets: 1 below 16 MiB, then 2, 4, 8, 16 from 512 MiB
  CHECK(t.value("dev_auto_rounds", 0, (16 << 20) - 1) == 1);
  CHECK(t.value("dev_auto_rounds", 0, 16 << 20) == 2);
  CHECK(t.value("dev_auto_rounds", 0, 32 << 20) == 4);
  CHECK(t.value("dev_auto_rounds", 0, 128 << 20) == 8);
  CHECK(t.value("dev_auto_rounds", 0, int64_t{1} << 40) == 16);
  CHECK(t.value("dev_overlap_blocks") == 128);
  CHECK(t.value("gather_flops_per_byte") == 1700);
  CHECK_THROWS(t.value("no_such_entry"));
}

TEST_CASE("an architecture without a measured table takes the sm90 table marked so", "[tuning]") {
  bool measured = true;
  const tuning::Table& t = tuning::forArch("sm_80", measured);
  CHECK_FALSE(measured);
  CHECK(t.name == "sm90");
  std::string h = tuning::header(t, "sm_80", measured);
  for (size_t at; (at = h.find("\n// ")) != std::string::npos;) h.replace(at, 4, " ");  // the comment's lines as one
  CHECK(h.find("not on sm_80: its values are a starting point there") != std::string::npos);
  CHECK(tuning::forArch("sm_90", measured).name == "sm90");
  CHECK(measured);
}

TEST_CASE("a table's errors name the table and the entry", "[tuning]") {
  const std::string ok = R"({"name": "x", "cxx": "kX", "type": "int", "meaning": "m", "why": "w", )";
  CHECK(parseError("{").find("tuning table t.json: not JSON") == 0);
  CHECK(parseError(table(ok + R"("rules": []})")) == "tuning table t: entry 'x': no rules");
  CHECK(parseError(table(ok + R"("args": "ranks", "rules": [{"ranks": 2, "value": 1}]})")) ==
        "tuning table t: entry 'x': the last rule has conditions (it must give the value otherwise)");
  CHECK(parseError(table(ok + R"("rules": [{"bytes_below": 2, "value": 1}, {"value": 2}]})")) ==
        "tuning table t: entry 'x': condition 'bytes_below' on what the entry does not take (its args: '')");
  CHECK(parseError(table(ok + R"("rules": [{"value": 4294967296}]})")) ==
        "tuning table t: entry 'x': value 4294967296 is not a count of type int or \"unlimited\"");
  CHECK(parseError(table(ok + R"("rules": [{"value": -1}]})")).find("value -1 is not a count") != std::string::npos);
  CHECK(parseError(table(ok + R"("args": "ranks", "rules": [{"rank": 2, "value": 1}, {"value": 2}]})")) ==
        "tuning table t: entry 'x': unknown condition 'rank'");
  CHECK(parseError(table(ok + R"("rules": [{"value": 1}]}, )" + ok + R"("rules": [{"value": 1}]})")) ==
        "tuning table t: entry 'x': named twice");
  CHECK(parseError(table(R"({"name": "x", "cxx": "kX", "type": "float", "meaning": "m", "why": "w", "rules": [{"value": 1}]})")) ==
        "tuning table t: entry 'x': type 'float'");
  CHECK(parseError(table(R"({"name": "x", "cxx": "kX", "type": "int", "meaning": "m", "rules": [{"value": 1}]})")) ==
        "tuning table t: entry 'x': no why");
  CHECK(parseError(table(ok + R"("rules": [{"value": 1}]})")) == "(no error)");
}

TEST_CASE("the generated header: constants and functions of the rules", "[tuning]") {
  const tuning::Table t =
      tuning::parse(table(R"({"name": "a", "cxx": "kA", "type": "long long", "meaning": "m", "why": "w", "rules": [{"value": 5}]},
               {"name": "b", "cxx": "bOf", "type": "size_t", "args": "ranks, bytes", "meaning": "m", "why": "w",
                "rules": [{"ranks": 2, "bytes_below": 10, "value": 1}, {"ranks_at_most": 4, "value": "unlimited"}, {"value": 3}]})"),
                    "t.json");
  const std::string h = tuning::header(t, "sm_90a", true);
  CHECK(h.find("constexpr long long kA = 5LL;\n") != std::string::npos);
  // (an entry read at bytes reports them while the driver asks: tableRead)
  CHECK(h.find("inline size_t bOf(long long ranks, long long bytes) {\n"
               "  tableRead(\"b\", bytes);\n"
               "  return ranks == 2 && bytes < 10LL ? size_t{1ULL}\n"
               "         : ranks <= 4 ? ~size_t{0}\n"
               "         : size_t{3ULL};\n}\n") != std::string::npos);
  CHECK(t.value("b", 2, 9) == 1);
  CHECK(t.value("b", 2, 10) == INT64_MAX);
  CHECK(t.value("b", 8, 0) == 3);
}

TEST_CASE("the runtime's copy of coconet_tuning.h is sm90's for sm_90a", "[tuning]") {
  bool measured = false;
  const tuning::Table& t = tuning::forArch("sm_90a", measured);
  INFO("regenerate it: coconetc compile samples/adam/adam.cnet -o /tmp/x && cp /tmp/x/coconet_tuning.h src/backend/runtime/");
  CHECK(sourceFile("src/backend/runtime/coconet_tuning.h") == tuning::header(t, "sm_90a", measured));
}

TEST_CASE("every tuning entry is read by the runtime or the planner", "[tuning]") {
  std::string code;
  for (const char* dir : {"src/backend/runtime/common", "src/backend/runtime/device", "src/backend/emit", "src/backend/plan"})
    for (auto& e : std::filesystem::directory_iterator(std::string(COCONETC_SOURCE_STDLIB) + "/../" + dir))
      code += sourceFile(std::string(dir) + "/" + e.path().filename().string());
  code += sourceFile("src/backend/Emitter.h");
  bool measured = false;
  for (const auto& e : tuning::forArch("sm_90a", measured).entries) {
    INFO(e.name);
    CHECK((code.find(e.cxx) != std::string::npos || code.find("\"" + e.name + "\"") != std::string::npos));
  }
}
