// Backward programs (autodiff::backward): gradients against values worked out by hand, the
// communication the adjoints put in, and the finite-difference check failing on a wrong gradient.
#include "TestSupport.h"
#include "autodiff/Backward.h"
#include "interp/Interpreter.h"
#include "ir/Rewrite.h"
#include "verify/Verify.h"

using namespace coconet;

namespace {

ir::Program derive(const test::Checked& c, std::vector<std::string> wrt = {}) {
  std::ostringstream diagOut;
  DiagnosticEngine d(const_cast<sema::Compilation&>(c.comp).sources, diagOut);
  auto b = autodiff::backward(c.lowered(), autodiff::Request{std::move(wrt)}, d);
  INFO(diagOut.str());
  REQUIRE(b);
  return std::move(*b);
}

interp::Tensor vec(std::vector<double> v) {
  interp::Tensor t;
  t.shape = {static_cast<int64_t>(v.size())};
  t.data = std::move(v);
  return t;
}

// b (derived from c's program) run on `in`, its saved inputs computed by the forward that saves them.
interp::Result runBackward(const test::Checked& c, const ir::Program& b, const interp::Config& cfg, interp::Values in) {
  const ir::Program f = ir::saving(c.lowered(), b);
  auto saved = interp::run(f, cfg, in);
  for (size_t k = 0; k < f.outputs.size(); ++k) in.inputs[f.outputNames[k]] = saved.outputs[k];
  return interp::run(b, cfg, in);
}

int countKind(const ir::Program& p, ir::StageKind k) {
  int n = 0;
  for (auto& s : p.stages) n += s.kind == k;
  return n;
}

}  // namespace

TEST_CASE("backward: element-wise gradients equal the ones worked out by hand", "[backward]") {
  auto c = test::checkText("t.cnet", R"(program f(N: size) {
  in x : f64[N] replicated;
  in w : f64[N] replicated;
  y = x * x * w + exp(w);
  return y;
})");
  ir::Program b = derive(*c);
  interp::Config cfg;
  cfg.ranks = 1;
  cfg.sizes["N"] = 2;
  interp::Values in;
  in.inputs["x"] = {vec({1.5, -2})};
  in.inputs["w"] = {vec({0.5, 3})};
  in.inputs["d_y"] = {vec({2, -1})};
  auto r = runBackward(*c, b, cfg, in);
  REQUIRE(b.outputNames == std::vector<std::string>{"d_x", "d_w"});
  // dx = dy * 2 x w, dw = dy * (x^2 + exp(w))
  CHECK(r.outputs[0][0].data == std::vector<double>{2 * 2 * 1.5 * 0.5, -1 * 2 * -2 * 3.0});
  CHECK(r.outputs[1][0].data[0] == Approx(2 * (1.5 * 1.5 + std::exp(0.5))));
  CHECK(r.outputs[1][0].data[1] == Approx(-1 * (4 + std::exp(3.0))));
}

TEST_CASE("backward: the adjoints put in the communication Megatron's backward has", "[backward]") {
  auto c = test::checkText("t.cnet", R"(program row(B: size, H: size) {
  in x : f32[B, H] sliced(1);
  in w : f32[H, H] sliced(0);
  in bias : f32[H] replicated;
  y = allreduce(+, matmul(x, w)) + bias;
  return y;
})");
  ir::Program b = derive(*c);
  // the row-parallel layer's backward needs no collective: dy is replicated, dx = dy w^T is
  // sliced like x, dw = x^T dy like w, dbias the replicated sum of dy; and it recomputes nothing
  // of the forward (no adjoint reads its matmul or allreduce)
  CHECK(countKind(b, ir::StageKind::AllReduce) == 0);
  CHECK(countKind(b, ir::StageKind::AllGather) == 0);
  CHECK(countKind(b, ir::StageKind::Matmul) == 2);  // dx and dw
  auto out = [&](const std::string& n) {
    for (size_t k = 0; k < b.outputs.size(); ++k)
      if (b.outputNames[k] == n) return b.stages[b.outputs[k]].type;
    FAIL("no output " << n);
    return ir::TensorType{};
  };
  CHECK(out("d_x").layout == ast::Layout::sliced(1));
  CHECK(out("d_w").layout == ast::Layout::sliced(0));
  CHECK(out("d_bias").layout == ast::Layout::replicated());

  // the column-parallel layer: the replicated input's gradient is an allreduce of partial sums
  auto col = test::checkText("t.cnet", R"(program col(B: size, H: size) {
  in x : f32[B, H] replicated;
  in w : f32[H, H] sliced(1);
  y = all_gather(matmul(x, w));
  return y;
})");
  ir::Program bc = derive(*col);
  CHECK(countKind(bc, ir::StageKind::AllReduce) == 1);  // d_x: the ranks' partial products summed
}

TEST_CASE("backward: the finite-difference check fails on a wrong gradient", "[backward]") {
  auto c = test::checkText("t.cnet", R"(program f(N: size) {
  in x : f32[N] sliced(0);
  in w : f32[N] replicated;
  y = all_gather(tanh(x) * w);
  return y;
})");
  ir::Program fwd = c->lowered();
  ir::Program b = derive(*c);
  verify::Options vo;
  vo.ranks = {1, 2, 4};
  std::ostringstream out, err;
  CHECK(verify::verifyGradients(fwd, b, vo, out, err) == 0);
  INFO(out.str());
  // the gradient of tanh with 1 + y^2 for 1 - y^2
  ir::Program broken = ir::clone(b);
  bool changed = false;
  for (auto& s : broken.stages)
    if (s.name.rfind("d_x.", 0) == 0)
      for (auto& n : s.expr.nodes)
        if (n.op == ir::EOp::Sub && !changed) n.op = ir::EOp::Add, changed = true;
  REQUIRE(changed);
  std::ostringstream out2, err2;
  CHECK(verify::verifyGradients(fwd, broken, vo, out2, err2) == 1);
  CHECK(out2.str().find("FAILED") != std::string::npos);
}

TEST_CASE("backward: what has no backward program is an error naming it", "[backward]") {
  auto c = test::checkText("t.cnet", R"(program f(N: size, R: size) {
  in table : f32[R, N] replicated;
  in idx : i32[N] replicated;
  state acc : f32[N, N] replicated;
  y = embedding(table, idx);
  update acc = acc + y;
  return y;
})");
  std::ostringstream diagOut;
  DiagnosticEngine d(c->comp.sources, diagOut);
  CHECK_FALSE(autodiff::backward(c->lowered(), autodiff::Request{}, d));
  CHECK(diagOut.str().find("it has state ('acc')") != std::string::npos);
  std::ostringstream diagOut2;
  DiagnosticEngine d2(c->comp.sources, diagOut2);
  CHECK_FALSE(autodiff::backward(c->lowered(), autodiff::Request{{"idx"}}, d2));
  CHECK(diagOut2.str().find("'idx': it is i32, not floating-point") != std::string::npos);
}

TEST_CASE("backward: max and product across ranks with ties and zeros by hand", "[backward]") {
  auto c = test::checkText("t.cnet", R"(program f(N: size) {
  in x : f64[N] local;
  y = allreduce(*, x) + allreduce(max, x);
  return y;
})");
  ir::Program b = derive(*c);
  interp::Config cfg;
  cfg.ranks = 3;
  cfg.sizes["N"] = 3;
  interp::Values in;
  // element 0: two zeros (no product gradient), the maximum on rank 2; element 1: one zero (on
  // rank 2, which gets the others' product 6), the maximum on rank 1; element 2: no zero (the
  // product 25 over each x), the maximum 5 tied on ranks 1 and 2 (half each)
  in.inputs["x"] = {vec({0, 2, 1}), vec({0, 3, 5}), vec({4, 0, 5})};
  in.inputs["d_y"] = {vec({1, 1, 1}), vec({1, 1, 1}), vec({1, 1, 1})};
  auto r = runBackward(*c, b, cfg, in);
  REQUIRE(b.outputNames == std::vector<std::string>{"d_x"});
  CHECK(r.outputs[0][0].data == std::vector<double>{0, 0, 25});
  CHECK(r.outputs[0][1].data == std::vector<double>{0, 1, 5.5});
  CHECK(r.outputs[0][2].data == std::vector<double>{1, 6, 5.5});
}
