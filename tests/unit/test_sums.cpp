// The interpreter's floating-point sums (sum, mean, norm, matmul, softmax; layernorm and rmsnorm
// alike) accumulate in double and round to the value's type once: the reference then errs by at
// most about half an ulp where the GPU's tree of per-thread partial sums errs by ~log n ulp. Summed in f32
// one term after another, 40000 terms err by ~1e-4 relative, which the GPU tests' 1e-4 check
// cannot tell from a kernel's bug.
#include <catch2/catch.hpp>

#include <cmath>

#include "TestSupport.h"
#include "interp/Interpreter.h"

namespace {

using coconet::interp::Config;
using coconet::interp::Tensor;

const char* kProgram = R"(program sums(N: size) {
  in x : f32[N] local;
  in xr : f32[1, N] local;
  in w : f32[N, 1] local;
  s = sum(x);
  m = mean(x);
  n = norm(x);
  d = matmul(xr, w);
  sm = softmax(xr);
  return s, m, n, d, sm;
})";

// Terms whose running f32 sum loses low bits at every step, rounding the same way more often than
// not: e^-3 .. e^0, as a softmax over integers 0..3 sums them (1.7e-4 relative off in f32).
constexpr int kN = 40000;
float term(int i) { return std::exp(static_cast<float>(i % 4) - 3.0f); }

}  // namespace

TEST_CASE("f32 sums and means and norms and dot products round once from a double accumulation", "[interp]") {
  auto c = coconet::test::checkText("sums.cnet", kProgram);
  auto p = c->lowered();
  Config cfg;
  cfg.ranks = 1;
  cfg.sizes = {{"N", kN}};
  Tensor x, xr, w;
  x.shape = {kN};
  xr.shape = {1, kN};
  w.shape = {kN, 1};
  double exactSum = 0, exactSq = 0, exactDot = 0;
  float seqSum = 0;
  for (int i = 0; i < kN; ++i) {
    float v = term(i), u = term(i + 1);
    x.data.push_back(v);
    w.data.push_back(u);
    // In double, in order, as the interpreter sums (the sum alone is exact: its partial sums
    // span under 43 bits).
    exactSum += v;
    exactSq += static_cast<double>(v) * v;
    exactDot += static_cast<double>(v) * u;
    seqSum += v;
  }
  // The test can fail: summed in f32 in order, the sum is far from its correct rounding.
  REQUIRE(std::fabs(seqSum - exactSum) / exactSum > 1e-4);
  coconet::interp::Values in;
  xr.data = x.data;
  in.inputs["x"].push_back(x);
  in.inputs["xr"].push_back(xr);
  in.inputs["w"].push_back(w);
  auto res = coconet::interp::run(p, cfg, in);
  REQUIRE(res.outputs.size() == 5);
  CHECK(res.outputs[0][0].data[0] == static_cast<double>(static_cast<float>(exactSum)));
  CHECK(res.outputs[1][0].data[0] == static_cast<double>(static_cast<float>(exactSum) / static_cast<float>(kN)));
  CHECK(res.outputs[2][0].data[0] == static_cast<double>(std::sqrt(static_cast<float>(exactSq))));
  CHECK(res.outputs[3][0].data[0] == static_cast<double>(static_cast<float>(exactDot)));
  // softmax's denominator: the row's exps (of the terms less their maximum, e^0)
  // summed in double and rounded once.
  const float mx = term(3);
  double exps = 0;
  for (int i = 0; i < kN; ++i) exps += std::exp(term(i) - mx);
  for (int i : {0, 1, 2, 3, kN - 1})
    CHECK(res.outputs[4][0].data[i] == static_cast<double>(std::exp(term(i) - mx) / static_cast<float>(exps)));
}
