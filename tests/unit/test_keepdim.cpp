// Reductions with `keepdim = true`: the type keeps the reduced dimensions with length 1 (and
// the sliced dimension where it stays), and the interpreter's values are those of the same
// reduction without keepdim, element for element, checked here against sums written out by hand.
#include <catch2/catch.hpp>

#include "TestSupport.h"
#include "interp/Interpreter.h"

namespace {

using coconet::interp::Config;
using coconet::interp::PerRank;
using coconet::interp::Tensor;

const char* kProgram = R"(program kd(N: size, M: size) {
  in x : f32[N, M] sliced(0);
  rows = sum(x, dim = 1, keepdim = true);
  cols = max(x, dim = 0, keepdim = true);
  all = sum(x, keepdim = true);
  centered = x - mean(x, dim = 1, keepdim = true);
  total = allreduce(+, all);
  return rows, cols, total, centered;
})";

// x[i][j] = i * M + j + 1, cut into rank r's rows.
Tensor slice(int r, int rows, int m) {
  Tensor t;
  t.shape = {rows, m};
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < m; ++j) t.data.push_back((r * rows + i) * m + j + 1);
  return t;
}

}  // namespace

TEST_CASE("keepdim keeps the reduced dimension with length 1 and the slicing", "[keepdim]") {
  auto c = coconet::test::checkText("kd.cnet", kProgram);
  auto p = c->lowered();
  auto typeOf = [&](const std::string& name) { return p.stages[p.resolve(name)].type.str(); };
  CHECK(typeOf("rows") == "f32[N, 1] sliced(0)");
  CHECK(typeOf("cols") == "f32[1, M] local");
  CHECK(typeOf("all") == "f32[1, 1] local");
  CHECK(typeOf("total") == "f32[1, 1] replicated");
  CHECK(typeOf("centered") == "f32[N, M] sliced(0)");
}

TEST_CASE("keepdim reductions compute the same values as written out by hand", "[keepdim]") {
  auto c = coconet::test::checkText("kd.cnet", kProgram);
  auto p = c->lowered();
  const int ranks = 2, n = 4, m = 3, rows = n / ranks;
  Config cfg;
  cfg.ranks = ranks;
  cfg.sizes = {{"N", n}, {"M", m}};
  coconet::interp::Values in;
  for (int r = 0; r < ranks; ++r) in.inputs["x"].push_back(slice(r, rows, m));
  auto res = coconet::interp::run(p, cfg, in);
  REQUIRE(res.outputs.size() == 4);
  const PerRank &rowSums = res.outputs[0], &colMax = res.outputs[1], &total = res.outputs[2], &centered = res.outputs[3];
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    // Row sums of this rank's rows: [rows, 1].
    REQUIRE(rowSums[r].shape == std::vector<int64_t>{rows, 1});
    for (int i = 0; i < rows; ++i) {
      double want = 0;
      for (int j = 0; j < m; ++j) want += (r * rows + i) * m + j + 1;
      CHECK(rowSums[r].data[i] == want);
    }
    // Column maxima over this rank's rows (partial): [1, m], the last row's values.
    REQUIRE(colMax[r].shape == std::vector<int64_t>{1, m});
    for (int j = 0; j < m; ++j) CHECK(colMax[r].data[j] == (r * rows + rows - 1) * m + j + 1);
    // The whole sum 1 + ... + n m on every rank, as a [1, 1] tensor.
    REQUIRE(total[r].shape == std::vector<int64_t>{1, 1});
    CHECK(total[r].data[0] == n * m * (n * m + 1) / 2);
    // Each row minus its mean (the middle element): -1, 0, 1.
    REQUIRE(centered[r].shape == std::vector<int64_t>{rows, m});
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < m; ++j) CHECK(centered[r].data[i * m + j] == j - 1);
  }
}

TEST_CASE("reorder keeps the slice of a keepdim reduction over another dimension", "[keepdim]") {
  // Slices of the batch: a row reduction with keepdim stays sliced(0) (not shifted to -1), and
  // the column reduction becomes partial sums combined by an allreduce.
  auto s = coconet::test::applySchedule(R"(program p(B: size, H: size) {
  in x : f32[B, H] local;
  h = allreduce(+, x);
  r = h / sum(h, dim = 1, keepdim = true);
  c = r - sum(r, dim = 0, keepdim = true);
  return c;
})",
                                        "rs, ag = split(h);\nreorder(ag, r.sum, r, c.sum, c);\n");
  auto typeOf = [&](const std::string& name) { return s.sched.stages[s.sched.resolve(name)].type.str(); };
  CHECK(typeOf("r.sum") == "f32[B, 1] sliced(0)");
  CHECK(typeOf("r") == "f32[B, H] sliced(0)");
  CHECK(typeOf("c.sum.partial") == "f32[1, H] local");
  CHECK(typeOf("c.sum") == "f32[1, H] replicated");
  CHECK(typeOf("c") == "f32[B, H] sliced(0)");
}
