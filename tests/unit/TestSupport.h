// Shared set-up of the unit tests: a program's text checked by sema (no imports searched beside
// an input file), its diagnostics kept for the failure message, and lowered to IR; a schedule
// script applied to it.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "driver/Load.h"
#include "ir/IR.h"
#include "ir/Lower.h"
#include "schedule/Schedule.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

namespace coconet::test {

// A file of the source tree (`rel` from the repository root: docs/language.md, src/...) as text.
inline std::string sourceFile(const std::string& rel) {
  std::ifstream in(std::string(COCONETC_SOURCE_STDLIB) + "/../" + rel);
  INFO("reading " << rel);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A checked program. Not movable: the diagnostics engine refers to the sources and the stream.
struct Checked {
  sema::Compilation comp;
  std::ostringstream diagOut;
  DiagnosticEngine diags{comp.sources, diagOut};
  ir::Program lowered() const { return ir::lower(*comp.programs[0]); }
};

// `text` checked as file `name`; REQUIREs that it has no errors and holds one program.
inline std::unique_ptr<Checked> checkText(const std::string& name, const std::string& text) {
  auto c = std::make_unique<Checked>();
  driver::LoadOptions load;
  load.searchInputDir = false;
  driver::checkSource(c->comp, name, text, sema::Options{}, load, c->diags);
  INFO("diagnostics:\n" << c->diagOut.str());
  REQUIRE_FALSE(c->diags.hasErrors());
  REQUIRE(c->comp.programs.size() == 1);
  return c;
}

// A program and its form after a schedule script (the checked program stays alive: the IR
// points into it).
struct Scheduled {
  std::unique_ptr<Checked> checked;
  ir::Program base, sched;
};

// `program` checked as test.cnet and `script` applied to it as test.sched; REQUIREs that the
// script parses and applies (its diagnostics in the failure message).
inline Scheduled applySchedule(const std::string& program, const std::string& script) {
  Scheduled s;
  s.checked = checkText("test.cnet", program);
  s.base = s.checked->lowered();
  s.sched = ir::clone(s.base);
  uint32_t file = s.checked->comp.sources.add("test.sched", script);
  auto parsed = schedule::parseScript(s.checked->comp.sources, file, s.checked->diags);
  REQUIRE(parsed.has_value());
  std::vector<schedule::Step> trace;
  bool applied = schedule::apply(s.sched, *parsed, s.checked->diags, trace, nullptr);
  INFO("schedule diagnostics:\n" << s.checked->diagOut.str());
  REQUIRE(applied);
  return s;
}

}  // namespace coconet::test
