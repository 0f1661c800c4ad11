// The autotuner's search space (tune::enumerate): every candidate applies, no two make the same
// program, the order is fixed, and the bounds hold.
#include <set>

#include "TestSupport.h"
#include "tune/Enumerate.h"

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
