// ir::exchangeChain: which stages an all_to_all pipeline (overlap(x, back) with x an
// all_to_all) runs, and the first one that cannot run rank block by rank block.
#include <catch2/catch.hpp>
#include <sstream>

#include "TestSupport.h"
#include "ir/Lower.h"

using namespace coconet;

namespace {

ir::Program lowerText(const std::string& text) { return test::checkText("chain.cnet", text)->lowered(); }

std::vector<std::string> names(const ir::Program& p, const std::vector<int>& ids) {
  std::vector<std::string> r;
  for (int id : ids) r.push_back(p.stages[id].name);
  return r;
}

}  // namespace

TEST_CASE("the chain is every stage between that reads an exchanged value", "[ir][overlap]") {
  ir::Program p = lowerText(
      "program c(T: size, H: size) {\n"
      "  in x : f32[nranks, T, H] local;\n  in w : f32[H, H] replicated;\n  in b : f32[H] replicated;\n"
      "  d = all_to_all(x);\n  other = b * 2.0;\n  m = matmul(d, w);\n  e = m + other;\n  r = all_to_all(e);\n"
      "  return r;\n}\n");
  ir::ExchangeChain ch = ir::exchangeChain(p, p.find("d"), p.find("r"));
  CHECK(ch.bad == -1);
  CHECK(ch.why == ir::ExchangeChain::Why::None);
  CHECK(names(p, ch.stages) == std::vector<std::string>{"m", "e"});  // not `other`: it reads no exchanged value
}

TEST_CASE("a rank-2 left operand's blocks are its rows", "[ir][overlap]") {
  ir::Program p = lowerText(
      "program c(T: size, H: size) {\n"
      "  in x : f32[nranks * T, H] local;\n  in w : f32[H, H] replicated;\n  in w3 : f32[2, H, H] replicated;\n"
      "  d = all_to_all(x);\n  m = matmul(d, w);\n  r = all_to_all(m);\n  q = matmul(d, w3);\n  return r, q;\n}\n");
  CHECK(ir::exchangeChain(p, p.find("d"), p.find("r")).bad == -1);
  // A batched weight would index the rows' blocks by its own dimension 0.
  ir::Program p3 = lowerText(
      "program c(T: size, H: size) {\n"
      "  in x : f32[nranks * T, H] local;\n  in w3 : f32[2, H, H] replicated;\n"
      "  d = all_to_all(x);\n  q = matmul(d, w3);\n  return q;\n}\n");
  ir::ExchangeChain ch = ir::exchangeChain(p3, p3.find("d"), static_cast<int>(p3.stages.size()));
  CHECK(ch.bad == p3.find("q"));
  CHECK(ch.why == ir::ExchangeChain::Why::WeightDim0);
}

TEST_CASE("stages that mix the ranks' blocks end the chain", "[ir][overlap]") {
  ir::Program p = lowerText(
      "program c(T: size, H: size) {\n"
      "  in x : f32[nranks, T, H] local;\n  in wb : f32[nranks, H, H] local;\n"
      "  d = all_to_all(x);\n  u = sum(d, dim = 2);\n  r = all_to_all(u);\n  return r;\n}\n");
  ir::ExchangeChain ch = ir::exchangeChain(p, p.find("d"), p.find("r"));
  CHECK(ch.bad == p.find("u"));
  CHECK(ch.why == ir::ExchangeChain::Why::Kind);
  ir::Program q = lowerText(
      "program c(T: size, H: size) {\n"
      "  in x : f32[nranks, T, H] local;\n  in wb : f32[nranks, H, H] local;\n"
      "  d = all_to_all(x);\n  m = matmul(d, wb);\n  r = all_to_all(m);\n  return r;\n}\n");
  ch = ir::exchangeChain(q, q.find("d"), q.find("r"));
  CHECK(ch.bad == q.find("m"));
  CHECK(ch.why == ir::ExchangeChain::Why::WeightDim0);
  CHECK(ch.operand == q.find("wb"));
}
