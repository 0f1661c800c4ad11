// Shape operations in the interpreter, checked against values written out by hand: transpose and
// permute move elements (and a sliced dimension with them), concat, narrow and reshape place them
// as PyTorch does on each rank's block, all_to_all along dimension d exchanges blocks of d, and a
// normalization along `dim = d` other than the last normalizes that dimension.
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

TEST_CASE("permute of a rank-3 tensor reads x at the permuted index", "[shape]") {
  auto c = coconet::test::checkText("p.cnet", R"(program p(A: size, B: size, C: size) {
  in x : f32[A, B, C] sliced(1);
  y = permute(x, 2, 0, 1);
  return y;
})");
  auto p = c->lowered();
  CHECK(p.stages[p.resolve("y")].type.str() == "f32[C, A, B] sliced(2)");
  const int A = 2, B = 3, C = 4;
  Config cfg;
  cfg.ranks = 1;
  cfg.sizes = {{"A", A}, {"B", B}, {"C", C}};
  coconet::interp::Values in;
  Tensor x;
  x.shape = {A, B, C};
  for (int i = 0; i < A * B * C; ++i) x.data.push_back(i);
  in.inputs["x"] = {x};
  auto res = coconet::interp::run(p, cfg, in);
  const Tensor& y = res.outputs[0][0];
  REQUIRE(y.shape == std::vector<int64_t>{C, A, B});
  for (int k = 0; k < C; ++k)
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < B; ++b) CHECK(y.data[(k * A + a) * B + b] == (a * B + b) * C + k);
}

TEST_CASE("concat and narrow and reshape place elements as torch.cat and narrow and reshape do", "[shape]") {
  auto c = coconet::test::checkText("c.cnet", R"(program c(N: size, M: size) {
  in x : f32[N, M] sliced(0);
  in u : f32[N, 2] sliced(0);
  j = concat(x, u, dim = 1);
  k = narrow(x, dim = 1, start = 1, length = M - 1);
  r = reshape(x, N, M, 1);
  return j, k, r;
})");
  auto p = c->lowered();
  CHECK(p.stages[p.resolve("j")].type.str() == "f32[N, M + 2] sliced(0)");
  CHECK(p.stages[p.resolve("k")].type.str() == "f32[N, M - 1] sliced(0)");
  CHECK(p.stages[p.resolve("r")].type.str() == "f32[N, M, 1] sliced(0)");
  // N = 5 over 2 ranks: blocks of 3 and 2 rows; u[i][t] = 100 + 10 i + t.
  const int m = 3;
  Config cfg;
  cfg.ranks = 2;
  cfg.sizes = {{"N", 5}, {"M", m}};
  coconet::interp::Values in;
  in.inputs["x"] = {rowsOf(0, 3, m), rowsOf(3, 2, m)};
  for (int first : {0, 3}) {
    Tensor u;
    const int rows = first == 0 ? 3 : 2;
    u.shape = {rows, 2};
    for (int i = first; i < first + rows; ++i)
      for (int t = 0; t < 2; ++t) u.data.push_back(100 + 10 * i + t);
    in.inputs["u"].push_back(u);
  }
  auto res = coconet::interp::run(p, cfg, in);
  const int first[2] = {0, 3}, rows[2] = {3, 2};
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const Tensor &j = res.outputs[0][r], &k = res.outputs[1][r], &re = res.outputs[2][r];
    REQUIRE(j.shape == std::vector<int64_t>{rows[r], m + 2});
    REQUIRE(k.shape == std::vector<int64_t>{rows[r], m - 1});
    REQUIRE(re.shape == std::vector<int64_t>{rows[r], m, 1});
    for (int i = 0; i < rows[r]; ++i) {
      const int gi = first[r] + i;
      for (int t = 0; t < m; ++t) CHECK(j.data[i * (m + 2) + t] == gi * m + t);
      for (int t = 0; t < 2; ++t) CHECK(j.data[i * (m + 2) + m + t] == 100 + 10 * gi + t);
      for (int t = 0; t < m - 1; ++t) CHECK(k.data[i * (m - 1) + t] == gi * m + t + 1);
      for (int t = 0; t < m; ++t) CHECK(re.data[i * m + t] == gi * m + t);
    }
  }
}

TEST_CASE("all_to_all along dimension 1 sends column block q to rank q", "[shape]") {
  auto c = coconet::test::checkText("a.cnet", R"(program a(N: size, M: size) {
  in x : f32[N, M] local;
  y = all_to_all(x, dim = 1);
  return y;
})");
  auto p = c->lowered();
  // 2 ranks, x on rank r: x[i][t] = 100 r + 10 i + t, N = 2, M = 4. Rank q receives columns
  // 2q, 2q + 1 of every rank, rank 0's first: y_q[i][2s + t'] = x_s[i][2q + t'].
  Config cfg;
  cfg.ranks = 2;
  cfg.sizes = {{"N", 2}, {"M", 4}};
  coconet::interp::Values in;
  for (int r = 0; r < 2; ++r) {
    Tensor x;
    x.shape = {2, 4};
    for (int i = 0; i < 2; ++i)
      for (int t = 0; t < 4; ++t) x.data.push_back(100 * r + 10 * i + t);
    in.inputs["x"].push_back(x);
  }
  auto res = coconet::interp::run(p, cfg, in);
  for (int q = 0; q < 2; ++q) {
    const Tensor& y = res.outputs[0][q];
    REQUIRE(y.shape == std::vector<int64_t>{2, 4});
    for (int i = 0; i < 2; ++i)
      for (int s = 0; s < 2; ++s)
        for (int t = 0; t < 2; ++t) {
          INFO("rank " << q << " row " << i << " from " << s << " column " << t);
          CHECK(y.data[i * 4 + 2 * s + t] == 100 * s + 10 * i + 2 * q + t);
        }
  }
}

TEST_CASE("a reshape that merges the dimensions before a sliced one keeps each rank's block", "[shape]") {
  // x[B, S, H] sliced(2) over 2 ranks (H = 3: blocks of 2 and 1 columns) -> [B * S, H] sliced(1):
  // row b * S + s of the result is x[b][s], each rank with its own columns.
  auto c = coconet::test::checkText("t.cnet", R"(program t(B: size, S: size, H: size) {
  in x : f32[B, S, H] sliced(2);
  y = reshape(x, B * S, H);
  z = all_gather(y);
  return z;
})");
  auto p = c->lowered();
  CHECK(p.stages[p.resolve("y")].type.str() == "f32[B*S, H] sliced(1)");
  const int b = 2, s = 3, h = 3;
  Config cfg;
  cfg.ranks = 2;
  cfg.sizes = {{"B", b}, {"S", s}, {"H", h}};
  coconet::interp::Values in;
  for (int r = 0; r < 2; ++r) {
    const int first = r == 0 ? 0 : 2, cols = r == 0 ? 2 : 1;
    Tensor t;
    t.shape = {b, s, cols};
    for (int i = 0; i < b; ++i)
      for (int j = 0; j < s; ++j)
        for (int k = first; k < first + cols; ++k) t.data.push_back((i * s + j) * h + k);
    in.inputs["x"].push_back(t);
  }
  auto res = coconet::interp::run(p, cfg, in);
  for (int r = 0; r < 2; ++r) {
    const Tensor& z = res.outputs[0][r];
    REQUIRE(z.shape == std::vector<int64_t>{b * s, h});
    for (int i = 0; i < b * s * h; ++i) CHECK(z.data[i] == i);  // the whole [B * S, H] in row-major order
  }
}
