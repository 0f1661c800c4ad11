// The tune knob schema (ir/Knobs.h): one entry per knob, found by name, printed by name, and every
// knob and word it takes documented in docs/language.md's `tune` section.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include <fstream>
#include <sstream>
#include <string>

#include "ir/Knobs.h"

using namespace coconet::ir;

TEST_CASE("every knob has one schema entry found by its name", "[knobs]") {
  const auto& schema = knobSchema();
  for (size_t i = 0; i < schema.size(); ++i) {
    INFO(schema[i].name);
    CHECK(static_cast<size_t>(schema[i].knob) == i);
    CHECK(knobNamed(schema[i].name) == schema[i].knob);
    CHECK((schema[i].lo <= schema[i].hi || !schema[i].words.empty()));
    if (i) CHECK(std::string(schema[i - 1].name) < schema[i].name);  // the printing order
  }
  CHECK_FALSE(knobNamed("chunk").has_value());
}

TEST_CASE("a target's knobs print by name with their values and places", "[knobs]") {
  Knobs k;
  CHECK(k.empty());
  k.set(Knob::Roles, {0, "split"}, {1, 2, 3});
  k.set(Knob::Rounds, {4, ""}, {1, 2, 9});
  k.set(Knob::Algorithm, {0, "ll128"}, {1, 3, 1});
  CHECK(k.str() == "algorithm = ll128, roles = split, rounds = 4");
  CHECK(k.number(Knob::Rounds) == 4);
  CHECK_FALSE(k.number(Knob::Roles).has_value());
  CHECK(k.word(Knob::Roles) == "split");
  CHECK(k.where(Knob::Rounds)->col == 9u);
  k.set(Knob::Rounds, {8, ""}, {1, 4, 1});  // a later tune replaces it
  CHECK(k.number(Knob::Rounds) == 8);
  CHECK_FALSE(k.has(Knob::Taper));
}

TEST_CASE("docs/language.md documents every knob and word", "[knobs]") {
  const std::string doc = coconet::test::sourceFile("docs/language.md");
  const size_t at = doc.find("#### 17.3.6 `tune`");
  REQUIRE(at != std::string::npos);
  const std::string section = doc.substr(at, doc.find("\n#### ", at + 1) - at);
  for (auto& s : knobSchema()) {
    INFO(s.name);
    CHECK(section.find("`" + std::string(s.name) + "`") != std::string::npos);
    for (auto& w : s.words) {
      INFO(w);
      CHECK(section.find("`" + w + "`") != std::string::npos);
    }
  }
}
