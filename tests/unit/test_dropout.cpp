// The dropout generator (interp::dropoutUniform, which generated kernels reproduce bit for bit:
// the GPU tests compare them): uniform, and independent across seeds, dropout sites (salts),
// neighbouring elements, group instances and ranks. The bounds are about 7 standard errors of
// the 2^20-sample estimates, so a fair generator does not fail them by chance, while a mask that
// repeats across seeds or correlates neighbours (p^2 = 0.01 becoming 0.1) fails at once.
#include <catch2/catch.hpp>

#include <cstdint>

#include "interp/Interpreter.h"

using coconet::interp::dropoutUniform;

namespace {
constexpr uint64_t kN = 1 << 20;
constexpr uint64_t kSalt = 12843695220559402709ULL;  // a stage's salt (an FNV-1a hash)
constexpr float kP = 0.1f;

// Fraction of i in [0, kN) for which both masks drop: pred(i) gives the two uniforms.
template <class F> double bothDropped(F pred) {
  uint64_t both = 0;
  for (uint64_t i = 0; i < kN; ++i) {
    auto [a, b] = pred(i);
    both += a < kP && b < kP;
  }
  return static_cast<double>(both) / kN;
}
}  // namespace

TEST_CASE("dropout uniforms are uniform below 1", "[dropout]") {
  double sum = 0;
  uint64_t dropped = 0, low = 0, outside = 0;
  for (uint64_t i = 0; i < kN; ++i) {
    float u = dropoutUniform(1234, kSalt, i);
    outside += !(u >= 0.0f && u < 1.0f);
    sum += u;
    dropped += u < kP;
    low += u < 0.5f / 16777216.0f * 2;  // the smallest value, 0, or the next: 2 in 2^24
  }
  CHECK(outside == 0);
  CHECK(sum / kN == Approx(0.5).margin(0.002));
  CHECK(static_cast<double>(dropped) / kN == Approx(kP).margin(0.002));
  CHECK(low < 8);
  CHECK(dropoutUniform(1234, kSalt, 77) == dropoutUniform(1234, kSalt, 77));  // a function of its inputs
}

TEST_CASE("dropout masks are independent across seeds and sites and elements and instances and ranks", "[dropout]") {
  const double pp = static_cast<double>(kP) * kP, m = 0.001;
  // consecutive seeds (a training loop's steps)
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i), dropoutUniform(8, kSalt, i)};
        }) == Approx(pp).margin(m));
  // two dropout sites with the same seed
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i), dropoutUniform(7, kSalt + 1, i)};
        }) == Approx(pp).margin(m));
  // neighbouring elements
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i), dropoutUniform(7, kSalt, i + 1)};
        }) == Approx(pp).margin(m));
  // elements a row apart (H = 4096)
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i), dropoutUniform(7, kSalt, i + 4096)};
        }) == Approx(pp).margin(m));
  // group instances and ranks: the key's bits 48 and up, 40 and up (the emitted keyXor)
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i), dropoutUniform(7, kSalt, i ^ (1ull << 48))};
        }) == Approx(pp).margin(m));
  CHECK(bothDropped([](uint64_t i) {
          return std::pair{dropoutUniform(7, kSalt, i ^ (1ull << 40)), dropoutUniform(7, kSalt, i ^ (2ull << 40))};
        }) == Approx(pp).margin(m));
  // seed 0 and salt 0 are not special
  CHECK(bothDropped([](uint64_t i) { return std::pair{dropoutUniform(0, 0, i), dropoutUniform(0, 1, i)}; }) == Approx(pp).margin(m));
}
