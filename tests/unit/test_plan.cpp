// The backend plan's bookkeeping (src/backend/plan/Plan.h): one owner per stage, every stage
// owned, and the printed form `emit --stage plan` shows.
#include <catch2/catch.hpp>

#include "TestSupport.h"
#include "ir/Lower.h"
#include "backend/plan/Plan.h"
#include "support/Diagnostics.h"

using namespace coconet;
using backend::plan::Plan;
using backend::plan::Step;
using backend::plan::Storage;

namespace {

ir::Program lowerText(const std::string& text) { return test::checkText("plan.cnet", text)->lowered(); }

const char* kProgram =
    "program p(N: size) {\n"
    "  in x : f32[N] replicated;\n"
    "  y = x * 2.0;\n"
    "  z = y + 1.0;\n"
    "  return z;\n"
    "}\n";

}  // namespace

TEST_CASE("a stage claimed twice is an internal error naming both passes", "[plan]") {
  Plan plan(3);
  plan.claim(1, Step::RowGroup, 1, "planRowGroups");
  REQUIRE(plan.claimed(1));
  REQUIRE_FALSE(plan.claimed(2));
  try {
    plan.claim(1, Step::InDeviceGroup, 0, "planDeviceGroups");
    FAIL("no InternalError");
  } catch (const InternalError& e) {
    REQUIRE(std::string(e.what()) ==
            "plan: stage 1 claimed twice, as row-group by planRowGroups and as in device-group by planDeviceGroups");
  }
  REQUIRE(plan.at(1).step == Step::RowGroup);  // the first claim stands
  REQUIRE_THROWS_AS(plan.claim(3, Step::Stage, 3, "x"), InternalError);
  REQUIRE_THROWS_AS(plan.claim(-1, Step::Stage, -1, "x"), InternalError);
}

TEST_CASE("every stage needs an owner", "[plan]") {
  ir::Program p = lowerText(kProgram);
  Plan plan(p.stages.size());
  plan.claim(0, Step::Given, 0, "interface");
  plan.claim(1, Step::Stage, 1, "own");
  try {
    plan.checkComplete(p);
    FAIL("no InternalError");
  } catch (const InternalError& e) {
    REQUIRE(std::string(e.what()) == "plan: stage 2 ('z') has no owner");
  }
  plan.claim(2, Step::InRun, 1, "planRuns");
  REQUIRE_NOTHROW(plan.checkComplete(p));
}

TEST_CASE("the printed plan: a line a stage with its reasons and the launch count", "[plan]") {
  ir::Program p = lowerText(kProgram);
  Plan plan(p.stages.size());
  plan.claim(0, Step::Given, 0, "interface");
  plan.storageOf(0).storage = Storage::Input;
  auto& y = plan.claim(1, Step::Stage, 1, "own");
  y.why = "element-wise run\nof 2 stages\n";
  y.storage = Storage::InKernel;
  auto& z = plan.claim(2, Step::InRun, 1, "planRuns");
  z.storage = Storage::Direct;
  z.intoWhat = "output 'z'";
  REQUIRE(backend::plan::print(p, plan, "plan of p") ==
          "plan of p\n"
          "  %0 'x': given; storage input\n"
          "  %1 'y': launch stage compute; storage in-kernel\n"
          "      why: element-wise run; of 2 stages\n"
          "  %2 'z': in run of %1 'y'; storage direct into output 'z'\n"
          "  1 launch\n");
}
