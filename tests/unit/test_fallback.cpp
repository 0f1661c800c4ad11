// ir::unscheduledFallback: which requirements a schedule adds, and whether the program can
// run without its schedule for sizes that break only those (the caller's tensors stored alike).
#include "TestSupport.h"
#include "ir/Fallback.h"
#include "ir/Rewrite.h"
#include "schedule/Schedule.h"

using namespace coconet;

namespace {

using test::applySchedule;

const char* kRow = R"(program row(B: size, H: size) {
  in x : f32[B, H] sliced(1);
  in w : f32[H, H] sliced(0);
  partial = matmul(x, w);
  y = allreduce(+, partial);
  out = y * 2.0;
  return out;
})";

const char* kSgd = R"(program sgd(N: size, lr: f32 = 0.1) {
  in g : f32[N] local;
  state w : f32[N] replicated;
  s = allreduce(+, g);
  w_new = w - lr * s;
  update w = w_new;
})";

}  // namespace

TEST_CASE("a split's scattered dimension is the schedule's own requirement", "[fallback]") {
  auto s = applySchedule(kRow, "rs, ag = split(y);\nreorder(ag, out);\n");
  auto f = ir::unscheduledFallback(s.base, s.sched);
  REQUIRE(f.own.size() == 1);
  CHECK(f.own[0]->str() == "B % world.size == 0");
  CHECK(f.possible);
  CHECK(f.whyNot.empty());
  // The program's own requirement (H over the ranks) is not the schedule's.
  REQUIRE(s.base.requirements.size() == 1);
  CHECK(s.base.requirements[0].sameCondition(s.sched.requirements[0]));
  CHECK_FALSE(f.own[0]->sameCondition(s.base.requirements[0]));
}

TEST_CASE("a schedule that adds no requirement needs no fallback", "[fallback]") {
  auto s = applySchedule(kRow, "f = fuse(y, out);\n");
  auto f = ir::unscheduledFallback(s.base, s.sched);
  CHECK(f.own.empty());
  CHECK_FALSE(f.possible);
  CHECK(f.sameStorage);  // the backend may still run the program unscheduled where the schedule does not pay
}

TEST_CASE("states kept sliced rule the fallback out", "[fallback]") {
  auto s = applySchedule(kSgd, "rs, ag = split(s);\nreorder(ag, w_new);\nslice(w);\n");
  auto f = ir::unscheduledFallback(s.base, s.sched);
  REQUIRE(f.own.size() == 1);
  CHECK_FALSE(f.possible);
  CHECK_FALSE(f.sameStorage);
  CHECK(f.whyNot.find("state 'w'") != std::string::npos);
  CHECK(f.whyNot.find("sliced(0)") != std::string::npos);
  // Without slice the state stays replicated: the fallback applies.
  auto t = applySchedule(kSgd, "rs, ag = split(s);\nreorder(ag, w_new);\n");
  CHECK(ir::unscheduledFallback(t.base, t.sched).possible);
}
