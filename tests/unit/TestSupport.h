// Shared set-up of the unit tests: a program's text checked by sema (no imports searched beside
// an input file), its diagnostics kept for the failure message, and lowered to IR.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <sstream>
#include <string>

#include "ir/Lower.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"

namespace coconet::test {

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
  sema::Options opts;
  opts.searchInputDir = false;
  sema::checkSource(c->comp, name, text, opts, c->diags);
  INFO("diagnostics:\n" << c->diagOut.str());
  REQUIRE_FALSE(c->diags.hasErrors());
  REQUIRE(c->comp.programs.size() == 1);
  return c;
}

}  // namespace coconet::test
