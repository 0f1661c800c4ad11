// Shape operations in the interpreter, checked against values written out by hand: transpose
// moves elements (and a sliced dimension with them), and a normalization along `dim = d` other
// than the last normalizes that dimension (through the transposes lowering adds).
#include <catch2/catch.hpp>

#include <cmath>

#include "TestSupport.h"
#include "interp/Interpreter.h"

namespace {

using coconet::interp::Config;
using coconet::interp::Tensor;

// x[i][j] = i * M + j, rows [first, first + rows) of an N x M matrix.
Tensor rowsOf(int first, int rows, int m) {
  Tensor t;
  t.shape = {rows, m};
  for (int i = first; i < first + rows; ++i)
    for (int j = 0; j < m; ++j) t.data.push_back(i * m + j);
  return t;
}

}  // namespace

TEST_CASE("transpose of a sliced matrix moves its rows' block to its columns", "[shape]") {
  auto c = coconet::test::checkText("t.cnet", R"(program t(N: size, M: size) {
  in x : f32[N, M] sliced(0);
  y = transpose(x);
  return y;
})");
  auto p = c->lowered();
  CHECK(p.stages[p.resolve("y")].type.str() == "f32[M, N] sliced(1)");
  // N = 5 over 2 ranks: blocks of 3 and 2 rows.
  const int n = 5, m = 3;
  Config cfg;
  cfg.ranks = 2;
  cfg.sizes = {{"N", n}, {"M", m}};
  coconet::interp::Values in;
  in.inputs["x"] = {rowsOf(0, 3, m), rowsOf(3, 2, m)};
  auto res = coconet::interp::run(p, cfg, in);
  const int first[2] = {0, 3}, rows[2] = {3, 2};
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const Tensor& y = res.outputs[0][r];
    REQUIRE(y.shape == std::vector<int64_t>{m, rows[r]});
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < rows[r]; ++i) CHECK(y.data[j * rows[r] + i] == (first[r] + i) * m + j);
  }
}

TEST_CASE("softmax and layernorm along dimension 0 normalize each column", "[shape]") {
  auto c = coconet::test::checkText("s.cnet", R"(program s(N: size, M: size) {
  in x : f32[N, M] replicated;
  a = softmax(x, dim = 0);
  b = layernorm(x, dim = 0);
  return a, b;
})");
  auto p = c->lowered();
  const int n = 4, m = 3;
  Config cfg;
  cfg.ranks = 1;
  cfg.sizes = {{"N", n}, {"M", m}};
  coconet::interp::Values in;
  in.inputs["x"] = {rowsOf(0, n, m)};
  auto res = coconet::interp::run(p, cfg, in);
  const Tensor &a = res.outputs[0][0], &b = res.outputs[1][0];
  REQUIRE(a.shape == std::vector<int64_t>{n, m});
  for (int j = 0; j < m; ++j) {
    // column j is j, M + j, 2M + j, 3M + j: softmax e^(iM) / sum, layernorm (i - 1.5) / sqrt(1.25 + eps)
    double z = 0;
    for (int i = 0; i < n; ++i) z += std::exp(static_cast<double>(i * m));
    for (int i = 0; i < n; ++i) {
      INFO("row " << i << " column " << j);
      CHECK(a.data[i * m + j] == Approx(std::exp(static_cast<double>(i * m)) / z).epsilon(1e-6));
      CHECK(b.data[i * m + j] == Approx((i - 1.5) * m / std::sqrt(1.25 * m * m + 1e-5)).epsilon(1e-5));
    }
  }
}
