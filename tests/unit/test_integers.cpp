// The interpreter's integer arithmetic is exact in 64 bits: i64 values past 2^53 (which a double
// does not hold) keep every bit through literals, scalar parameters, element-wise arithmetic,
// reductions and collectives; sums and products wrap as two's complement, division and remainder
// truncate (by zero: 0; INT64_MIN / -1 wraps), and a conversion saturates.
#include <catch2/catch.hpp>

#include <cstdint>

#include "TestSupport.h"
#include "interp/Interpreter.h"

namespace {

using coconet::interp::Config;
using coconet::interp::Tensor;

const char* kProgram = R"(program ints(N: size, s: i64) {
  in x : i64[N] local;
  a = x + 9007199254740993 + s;
  b = x * 4611686018427387904;
  c = (x - 9223372036854775807 - 1) / (x - x - 1);
  d = (x - 9223372036854775807 - 1) % (x - x - 1);
  e = pow(x, 63);
  f = i32(x + 9007199254740993);
  g = x + 9007199254740993 > x + 9007199254740992;
  h = min(x + 9007199254740993, x + 9007199254740992);
  t = sum(x + 9007199254740993);
  r = allreduce(+, x + 9007199254740993);
  return a, b, c, d, e, f, g, h, t, r;
})";

constexpr int64_t k2p53 = int64_t(1) << 53;

Tensor i64(std::vector<int64_t> v) {
  Tensor t;
  t.shape = {static_cast<int64_t>(v.size())};
  for (int64_t x : v) t.data.push_back(static_cast<double>(x));
  t.exact = std::move(v);
  return t;
}

}  // namespace

TEST_CASE("i64 arithmetic is exact past 2^53 and wraps at 2^64", "[interp]") {
  auto c = coconet::test::checkText("ints.cnet", kProgram);
  auto p = c->lowered();
  Config cfg;
  cfg.ranks = 2;
  cfg.sizes = {{"N", 3}};
  cfg.integerScalars = {{"s", k2p53 + 7}};
  coconet::interp::Values in;
  in.inputs["x"] = {i64({0, 1, 2}), i64({3, 4, 5})};
  auto res = coconet::interp::run(p, cfg, in);
  REQUIRE(res.outputs.size() == 10);
  auto out = [&](int k, int r) -> const Tensor& { return res.outputs[k][r]; };
  // a = x + 2^53 + 1 + 2^53 + 7: every bit kept (in a double, 2^54 + 9 rounds to 2^54 + 8)
  CHECK(out(0, 0).exact == std::vector<int64_t>{2 * k2p53 + 8, 2 * k2p53 + 9, 2 * k2p53 + 10});
  // b = x * 2^62 wraps: 2 * 2^62 = 2^63 is INT64_MIN, 4 * 2^62 is 0
  CHECK(out(1, 0).exact == std::vector<int64_t>{0, int64_t(1) << 62, INT64_MIN});
  CHECK(out(1, 1).exact[1] == 0);
  // c = (x + INT64_MIN) / -1: INT64_MIN / -1 wraps to INT64_MIN; d: its remainder is 0
  CHECK(out(2, 0).exact == std::vector<int64_t>{INT64_MIN, INT64_MAX, INT64_MAX - 1});
  CHECK(out(3, 0).exact == std::vector<int64_t>{0, 0, 0});
  // e = pow(x, 63): 2^63 wraps to INT64_MIN; 3^63 mod 2^64 as the generated code's ipow computes it
  CHECK(out(4, 0).exact == std::vector<int64_t>{0, 1, INT64_MIN});
  uint64_t p3 = 1;
  for (int k = 0; k < 63; ++k) p3 *= 3;
  CHECK(out(4, 1).exact[0] == static_cast<int64_t>(p3));
  // f = i32(...) saturates
  CHECK(out(5, 0).data == std::vector<double>{2147483647, 2147483647, 2147483647});
  // g: 2^53 + 1 + x > 2^53 + x holds (as doubles both are 2^53 + x at x = 0)
  CHECK(out(6, 0).data == std::vector<double>{1, 1, 1});
  CHECK(out(7, 0).exact[0] == k2p53);
  // t = sum over rank 0's x of x + 2^53 + 1
  CHECK(out(8, 0).exact == std::vector<int64_t>{3 * (k2p53 + 1) + 3});
  // r = allreduce of x + 2^53 + 1 over both ranks
  CHECK(out(9, 0).exact == std::vector<int64_t>{2 * (k2p53 + 1) + 3, 2 * (k2p53 + 1) + 5, 2 * (k2p53 + 1) + 7});
  CHECK(out(9, 1).exact == out(9, 0).exact);
}

TEST_CASE("integer helpers saturate and wrap as documented", "[interp]") {
  using namespace coconet::interp;
  CHECK(toInt64(1e300) == INT64_MAX);
  CHECK(toInt64(-1e300) == INT64_MIN);
  CHECK(toInt64(9223372036854775808.0) == INT64_MAX);
  CHECK(toInt64(-2.9) == -2);
  CHECK(integerPow(2, 64) == 0);
  CHECK(integerPow(-1, -3) == -1);
  CHECK(integerPow(1, -3) == 1);
  CHECK(integerPow(2, -1) == 0);
  CHECK(saturateInteger(coconet::ir::DType::U8, -5) == 0);
  CHECK(saturateInteger(coconet::ir::DType::I8, 1000) == 127);
}
