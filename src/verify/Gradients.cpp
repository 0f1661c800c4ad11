// The gradient check of a backward program: finite differences of the forward, in f64.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>

#include "verify/Draw.h"
#include "verify/Verify.h"

namespace coconet::verify {

using namespace ir;
using interp::Config;
using interp::PerRank;
using interp::Tensor;

namespace {

using Logical = std::map<std::string, std::vector<Tensor>>;  // per world rank, each rank's logical view

// <a, b> over a value's logical tensors: a local value is one tensor per rank (summed over the
// ranks), any other one tensor (rank 0's view: the program lives in the world group).
double dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const TensorType& t, double* magnitude = nullptr) {
  const bool local = t.group && t.layout.kind == Layout::Local;
  double s = 0;
  for (size_t r = 0; r < (local ? a.size() : 1); ++r)
    for (size_t i = 0; i < a[r].data.size(); ++i) {
      s += a[r].data[i] * b[r].data[i];
      if (magnitude) *magnitude += std::abs(a[r].data[i] * b[r].data[i]);
    }
  return s;
}

std::vector<Tensor> whole(const PerRank& v, const TensorType& t, const Config& c) {
  std::vector<Tensor> out;
  for (int r = 0; r < c.ranks; ++r) out.push_back(interp::wholeOf(v, t, c, r));
  return out;
}

class GradientCheck {
public:
  GradientCheck(const Program& f, const Program& b, const Config& c) : f_(f), b_(b), c_(c) {}

  // sum over the outputs of <dOUT, OUT> with the forward's inputs `in` (logical); *magnitude
  // gets the sum of its terms' magnitudes (what rounding errors scale with)
  double objective(const Logical& in, double* magnitude) const {
    interp::Result r = interp::run(f_, c_, detail::storageFor(f_, in, c_));
    double s = 0;
    for (size_t k = 0; k < f_.outputs.size(); ++k) {
      auto it = in.find("d_" + f_.outputNames[k]);
      if (it == in.end()) continue;  // (an output no input differentiated reaches)
      const TensorType& t = f_.stages[f_.outputs[k]].type;
      s += dot(it->second, whole(r.outputs[k], t, c_), t, magnitude);
    }
    return s;
  }

private:
  const Program& f_;
  const Program& b_;
  const Config& c_;
};

// A random direction with x's logical structure (one tensor per group instance, or per rank).
std::vector<Tensor> direction(const std::vector<Tensor>& x, const TensorType& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uf(-1.0, 1.0);
  const bool local = t.group && t.layout.kind == Layout::Local;
  std::vector<Tensor> v = x;
  for (size_t r = 0; r < v.size(); ++r) {
    if (!local && r > 0) {
      v[r] = v[0];
      continue;
    }
    for (auto& e : v[r].data) e = uf(rng);
  }
  return v;
}

}  // namespace

int verifyGradients(const Program& forward, const Program& backward, const Options& opts, std::ostream& out, std::ostream& err) {
  // The step and the tolerance of the central differences, extrapolated (f64: truncation ~ h^4,
  // rounding ~ 1e-16 / h, both far below the tolerance at inputs in [-1, 1]).
  constexpr double kStep = 1e-6, kTolerance = 1e-6;  // (a small step rarely crosses a kink: abs, relu, max)
  constexpr int kDirections = 2;
  std::mt19937_64 rng(opts.seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<int> compared;
  bool ok = true;
  out << "gradients of " << forward.name << " (finite differences in f64)\n";
  for (int P : opts.ranks) {
    Config c;
    c.ranks = P;
    c.seed = rng();
    c.exact = true;
    std::string why;
    if (!detail::chooseSizes(forward, backward, c, rng, &why)) {
      out << "  ranks " << P << ": skipped: no sizes run with " << P << " ranks" << (why.empty() ? "" : ": " + why) << "\n";
      continue;
    }
    detail::chooseScalars(backward, c, rng);
    Logical in = detail::drawInputs(backward, c, rng);
    // Off the inputs' own grid (f16 values sum to exact zeros and ties, where select, relu, abs
    // and max have kinks that a difference quotient straddles): a jitter below an f16 step.
    std::uniform_real_distribution<double> jitter(-std::ldexp(1.0, -13), std::ldexp(1.0, -13));
    for (auto& st : backward.stages) {
      if (st.kind != StageKind::Input ||
          !(st.type.dtype == DType::F16 || st.type.dtype == DType::BF16 || st.type.dtype == DType::F32 || st.type.dtype == DType::F64))
        continue;
      auto& v = in.at(st.name);
      const bool local = st.type.group && st.type.layout.kind == Layout::Local;
      for (size_t r = 0; r < v.size(); ++r) {
        if (!local && r > 0) {
          v[r] = v[0];
          continue;
        }
        for (auto& e : v[r].data) e += jitter(rng);
      }
    }
    GradientCheck check(forward, backward, c);
    std::string notes;
    bool rankOk = true;
    try {
      interp::Result grads = interp::run(backward, c, detail::storageFor(backward, in, c));
      for (size_t k = 0; k < backward.outputs.size(); ++k) {
        const std::string x = backward.outputNames[k].substr(2);  // d_X
        const int xi = forward.find(x);
        const TensorType& t = forward.stages[xi].type;
        auto g = whole(grads.outputs[k], backward.stages[backward.outputs[k]].type, c);
        double worst = 0;
        bool within = true;
        for (int d = 0; d < kDirections; ++d) {
          auto v = direction(in.at(x), t, rng);
          double magnitude = 0;
          auto central = [&](double h) {
            Logical plus = in, minus = in;
            for (size_t r = 0; r < v.size(); ++r)
              for (size_t i = 0; i < v[r].data.size(); ++i) {
                plus[x][r].data[i] += h * v[r].data[i];
                minus[x][r].data[i] -= h * v[r].data[i];
              }
            return (check.objective(plus, &magnitude) - check.objective(minus, &magnitude)) / (2 * h);
          };
          const double fd = (4 * central(kStep / 2) - central(kStep)) / 3;  // (Richardson: the h^2 term cancels)
          const double an = dot(g, v, t);
          // what rounding alone moves the quotient by (terms that cancel to ~0 leave only that)
          const double noise = 1024 * std::ldexp(magnitude, -52) / kStep;
          const double scale = std::max({std::abs(fd), std::abs(an), 1e-300});
          worst = std::max(worst, std::abs(fd - an) / scale);
          within = within && std::abs(fd - an) <= kTolerance * scale + noise;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2g", worst);
        notes += (notes.empty() ? "" : ", ") + backward.outputNames[k] + " " + buf;
        rankOk = rankOk && within;
      }
    } catch (const interp::RunError& e) {
      err << "coconetc: error: " << backward.name << " fails with " << P << " ranks (" << detail::sizesStr(backward, c).substr(1)
          << "): " << e.what() << "\n";
      return 1;
    }
    out << "  ranks " << P << ":" << detail::sizesStr(backward, c) << ": " << (rankOk ? "ok" : "FAILED") << " (relative error " << notes
        << "; limit " << kTolerance << " and rounding)\n";
    ok = ok && rankOk;
    compared.push_back(P);
  }
  if (compared.empty()) {
    out << "NOT verified: the gradients of " << forward.name << " compared at no rank count\n";
    return 1;
  }
  return ok ? 0 : 1;
}

}  // namespace coconet::verify
