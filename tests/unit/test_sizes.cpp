// Symbolic size arithmetic: canonical forms, exact division, evaluation, overflow.
#include <catch2/catch.hpp>

#include "ast/Types.h"
#include "ir/IR.h"

using namespace coconet::ast;

TEST_CASE("size polynomials are canonical", "[sizes]") {
  auto B = SizeExpr::symbol("B"), S = SizeExpr::symbol("S"), H = SizeExpr::symbol("H");
  CHECK(B * S == S * B);
  CHECK((B + S) * H == B * H + S * H);
  CHECK((B * S * H).str() == "B*H*S");
  CHECK((B - B).constantValue() == 0);
  CHECK((B * SizeExpr::constant(2) - SizeExpr::constant(4)).str() == "2*B - 4");
  CHECK(SizeExpr::constant(0).str() == "0");
  CHECK((SizeExpr::constant(0) - B).str() == "-B");
}

TEST_CASE("size division is exact when it can be", "[sizes]") {
  auto B = SizeExpr::symbol("B"), H = SizeExpr::symbol("H"), P = SizeExpr::symbol("world.size");
  CHECK(SizeExpr::div(B * H * SizeExpr::constant(4), SizeExpr::constant(2)) == B * H * SizeExpr::constant(2));
  CHECK(SizeExpr::div(B * H, H) == B);
  CHECK(SizeExpr::div(H, H).constantValue() == 1);
  SizeExpr q = SizeExpr::div(H, P);
  CHECK_FALSE(q.isConstant());
  CHECK(q.str() == "H / world.size");
  CHECK(SizeExpr::mod(B * P, P).constantValue() == 0);
  CHECK(SizeExpr::mod(SizeExpr::constant(10), SizeExpr::constant(4)).constantValue() == 2);
  CHECK(SizeExpr::mod(H, P).str() == "H % world.size");
  CHECK(SizeExpr::div(B + H, SizeExpr::constant(2)).str() == "(B + H) / 2");
  CHECK_THROWS(SizeExpr::div(H, SizeExpr::constant(0)));
}

TEST_CASE("a remainder gives back its operands", "[sizes]") {
  auto H = SizeExpr::symbol("H"), P = SizeExpr::symbol("world.size");
  auto r = SizeExpr::mod(H, P).asRemainder();
  REQUIRE(r);
  CHECK(r->first == H);
  CHECK(r->second == P);
  auto c = SizeExpr::mod(H * SizeExpr::constant(3), SizeExpr::constant(8)).asRemainder();
  REQUIRE(c);
  CHECK(c->first.str() == "3*H");
  CHECK(c->second.constantValue() == 8);
  // not a lone remainder: scaled, summed, a quotient, a symbol, a constant
  CHECK_FALSE((SizeExpr::mod(H, P) * SizeExpr::constant(2)).asRemainder());
  CHECK_FALSE((SizeExpr::mod(H, P) + SizeExpr::constant(1)).asRemainder());
  CHECK_FALSE(SizeExpr::div(H, P).asRemainder());
  CHECK_FALSE(H.asRemainder());
  CHECK_FALSE(SizeExpr::constant(0).asRemainder());
}

TEST_CASE("sizes evaluate with bindings", "[sizes]") {
  auto H = SizeExpr::symbol("H"), P = SizeExpr::symbol("world.size");
  SizeExpr e = SizeExpr::div(H * SizeExpr::constant(3), P) + SizeExpr::mod(H, P);
  CHECK(e.evaluate({{"H", 10}, {"world.size", 4}}) == 7 + 2);
  CHECK_FALSE(e.evaluate({{"H", 10}}).has_value());
  CHECK_FALSE(e.evaluate({{"H", 10}, {"world.size", 0}}).has_value());
  CHECK(e.symbols() == std::vector<std::string>{"H", "world.size"});
}

TEST_CASE("size arithmetic reports overflow", "[sizes]") {
  auto big = SizeExpr::constant(INT64_MAX);
  CHECK_THROWS_AS(big + SizeExpr::constant(1), SizeOverflow);
  CHECK_THROWS_AS(big * SizeExpr::constant(2), SizeOverflow);
  CHECK_THROWS_AS((SizeExpr::symbol("N") * SizeExpr::symbol("N")).evaluate({{"N", INT64_MAX}}), SizeOverflow);
  // INT64_MIN / -1 is the one quotient that overflows (it traps on x86); its remainder is 0.
  auto least = SizeExpr::constant(INT64_MIN), minusOne = SizeExpr::constant(-1);
  CHECK_THROWS_AS(SizeExpr::div(least, minusOne), SizeOverflow);
  CHECK(SizeExpr::mod(least, minusOne).constantValue() == 0);
  auto q = SizeExpr::div(SizeExpr::symbol("A"), SizeExpr::symbol("B"));
  CHECK_THROWS_AS(q.evaluate({{"A", INT64_MIN}, {"B", -1}}), SizeOverflow);
  CHECK(SizeExpr::mod(SizeExpr::symbol("A"), SizeExpr::symbol("B")).evaluate({{"A", INT64_MIN}, {"B", -1}}) == 0);
}

TEST_CASE("a shape's storage must count in 64 bits", "[sizes]") {
  auto c = [](int64_t v) { return SizeExpr::constant(v); };
  auto n = SizeExpr::symbol("N");
  CHECK(storageCountable({n, n, n}, DType::F64));
  CHECK(storageCountable({c(int64_t(1) << 30), c(int64_t(1) << 30)}, DType::F32));
  CHECK_FALSE(storageCountable({c(int64_t(1) << 32), c(int64_t(1) << 32)}, DType::F32));
  CHECK_FALSE(storageCountable({c(int64_t(1) << 61)}, DType::F64));  // elements fit, bytes do not
  CHECK(storageCountable({c(int64_t(1) << 61)}, DType::I8));
  CHECK_FALSE(storageCountable(Shape(64, c(2)), DType::U8));
  CHECK(storageCountable(Shape(62, c(2)), DType::U8));
  CHECK_FALSE(storageCountable({n * c(int64_t(1) << 40), c(int64_t(1) << 30)}, DType::F32));
  CHECK((c(-3) + n * c(5)).coefficientBound() == 8);
}

TEST_CASE("element types promote like PyTorch", "[types]") {
  CHECK(promote(DType::F16, DType::F16) == DType::F16);
  CHECK(promote(DType::F16, DType::F32) == DType::F32);
  CHECK(promote(DType::F16, DType::BF16) == DType::F32);
  CHECK(promote(DType::F16, DType::LitFloat) == DType::F16);
  CHECK(promote(DType::LitInt, DType::BF16) == DType::BF16);
  CHECK(promote(DType::I32, DType::LitFloat) == DType::F32);
  CHECK(promote(DType::I32, DType::I64) == DType::I64);
  CHECK(promote(DType::U8, DType::I8) == DType::I32);
  CHECK(promote(DType::I64, DType::F16) == DType::F16);
  CHECK_FALSE(promote(DType::Bool, DType::F32).has_value());
  CHECK(promote(DType::Bool, DType::Bool) == DType::Bool);
  CHECK(concrete(DType::LitInt) == DType::I32);
  CHECK(concrete(DType::LitFloat) == DType::F32);
  CHECK(dtypeFromName("bf16") == DType::BF16);
  CHECK_FALSE(dtypeFromName("int literal").has_value());
}

TEST_CASE("a sliced dimension is cut as torch.chunk cuts it", "[sizes]") {
  using coconet::ir::sliceBlock;
  auto blocks = [](int64_t n, int64_t parts) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t r = 0; r < parts; ++r) out.push_back({sliceBlock(n, parts, r).offset, sliceBlock(n, parts, r).extent});
    return out;
  };
  using V = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(blocks(8, 4) == V{{0, 2}, {2, 2}, {4, 2}, {6, 2}});
  CHECK(blocks(10, 4) == V{{0, 3}, {3, 3}, {6, 3}, {9, 1}});
  CHECK(blocks(5, 4) == V{{0, 2}, {2, 2}, {4, 1}, {5, 0}});
  CHECK(blocks(1, 3) == V{{0, 1}, {1, 0}, {1, 0}});
  CHECK(blocks(7, 1) == V{{0, 7}});
  // Every element in exactly one block, in rank order.
  for (int64_t n : {1, 2, 3, 33, 1001, 50257})
    for (int64_t parts : {1, 2, 3, 4, 5, 7, 8, 64}) {
      int64_t next = 0;
      for (auto [off, ext] : blocks(n, parts)) {
        CHECK(off == next);
        CHECK(ext >= 0);
        next = off + ext;
      }
      CHECK(next == n);
    }
}
