// The gradient check of a backward program: finite differences of the forward, in f64.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>

#include "ir/Rewrite.h"
#include "verify/Draw.h"
#include "verify/Verify.h"

namespace coconet::verify {

using namespace ir;
using interp::Config;
using interp::PerRank;
using interp::Tensor;

namespace {

using Logical = std::map<std::string, std::vector<Tensor>>;  // per world rank, each rank's logical view

// The rank whose view stands for rank r's logical tensor of a value of type t: r itself for a
// local value (one tensor per rank), else the first rank of r's instance of t's group (one tensor
// per group instance; the world has one).
int lead(const TensorType& t, const Config& c, int r) {
  if (t.group && t.layout.kind == Layout::Local) return r;
  if (!t.group) return 0;
  const int instance = interp::groupCoord(t.group, c, r).instance;
  for (int q = 0; q < r; ++q)
    if (interp::groupCoord(t.group, c, q).instance == instance) return q;
  return r;
}

// <a, b> over a value's logical tensors (each rank's view; lead() says which ranks stand for one).
double dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const TensorType& t, const Config& c, double* magnitude = nullptr) {
  double s = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    if (lead(t, c, static_cast<int>(r)) != static_cast<int>(r)) continue;
    for (size_t i = 0; i < a[r].data.size(); ++i) {
      s += a[r].data[i] * b[r].data[i];
      if (magnitude) *magnitude += std::abs(a[r].data[i] * b[r].data[i]);
    }
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
      s += dot(it->second, whole(r.outputs[k], t, c_), t, c_, magnitude);
    }
    return s;
  }

private:
  const Program& f_;
  const Program& b_;
  const Config& c_;
};

// A random direction with x's logical structure (one tensor per group instance, or per rank).
std::vector<Tensor> direction(const std::vector<Tensor>& x, const TensorType& t, const Config& c, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uf(-1.0, 1.0);
  std::vector<Tensor> v = x;
  for (size_t r = 0; r < v.size(); ++r) {
    if (const int l = lead(t, c, static_cast<int>(r)); l != static_cast<int>(r)) {
      v[r] = v[l];
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
  constexpr int kDirections = 2, kDraws = 8;
  std::mt19937_64 rng(opts.seed ^ 0x9e3779b97f4a7c15ull);
  const Program saving = opts.saving ? clone(*opts.saving) : ir::saving(forward, backward);
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
    // Inputs off their own grid (f16 values sum to exact zeros and ties, where select, relu, abs
    // and max have kinks that a difference quotient straddles): a jitter below an f16 step.
    std::uniform_real_distribution<double> jitter(-std::ldexp(1.0, -13), std::ldexp(1.0, -13));
    auto draw = [&] {
      Logical in = detail::drawInputs(backward, c, rng, &forward);
      for (auto& st : backward.stages) {
        if (st.kind != StageKind::Input ||
            !(st.type.dtype == DType::F16 || st.type.dtype == DType::BF16 || st.type.dtype == DType::F32 || st.type.dtype == DType::F64))
          continue;
        auto& v = in.at(st.name);
        for (size_t r = 0; r < v.size(); ++r) {
          if (const int l = lead(st.type, c, static_cast<int>(r)); l != static_cast<int>(r)) {
            v[r] = v[l];
            continue;
          }
          for (auto& e : v[r].data) e += jitter(rng);
        }
      }
      return in;
    };
    GradientCheck check(forward, backward, c);
    std::string notes, redrawn;
    bool rankOk = true;
    try {
      // a point where the forward is finite: a program can be NaN at some inputs (row_groups'
      // rsqrt(var + eps) with an input eps below -var), where no difference quotient exists
      Logical in = draw();
      int tries = 1;
      for (; !std::isfinite(check.objective(in, nullptr)) && tries < kDraws; ++tries) in = draw();
      if (tries > 1) redrawn = "inputs drawn " + std::to_string(tries) + " times, the forward not finite before; ";
      if (!std::isfinite(check.objective(in, nullptr))) {
        out << "  ranks " << P << ":" << detail::sizesStr(backward, c) << ": FAILED: the forward is not finite at any of " << kDraws
            << " draws of inputs\n";
        ok = false;
        continue;
      }
      detail::fillSaved(saving, backward.savedInputs, in, c);
      interp::Result grads = interp::run(backward, c, detail::storageFor(backward, in, c));
      for (size_t k = 0; k < backward.outputs.size(); ++k) {
        const std::string x = backward.outputNames[k].substr(2);  // d_X
        const int xi = forward.find(x);
        const TensorType& t = forward.stages[xi].type;
        auto g = whole(grads.outputs[k], backward.stages[backward.outputs[k]].type, c);
        double worst = 0;
        bool within = true;
        for (int d = 0; d < kDirections; ++d) {
          auto v = direction(in.at(x), t, c, rng);
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
          const double an = dot(g, v, t, c);
          // what rounding alone moves the quotient by (terms that cancel to ~0 leave only that)
          const double noise = 1024 * std::ldexp(magnitude, -52) / kStep;
          const double scale = std::max({std::abs(fd), std::abs(an), 1e-300});
          worst = std::isfinite(fd - an) ? std::max(worst, std::abs(fd - an) / scale) : fd - an;  // (NaN: shown, and fails)
          within = within && std::isfinite(fd - an) && std::abs(fd - an) <= kTolerance * scale + noise;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2g", worst);
        notes += (k == 0 ? "" : ", ") + backward.outputNames[k] + " " + buf;
        rankOk = rankOk && within;
      }
    } catch (const interp::RunError& e) {
      err << "coconetc: error: " << backward.name << " fails with " << P << " ranks (" << detail::sizesStr(backward, c).substr(1)
          << "): " << e.what() << "\n";
      return 1;
    }
    out << "  ranks " << P << ":" << detail::sizesStr(backward, c) << ": " << (rankOk ? "ok" : "FAILED") << " (" << redrawn
        << "relative error " << notes << "; limit " << kTolerance << " and rounding)\n";
    ok = ok && rankOk;
    compared.push_back(P);
  }
  if (compared.empty()) {
    out << "  the gradients were compared at no rank count\n";
    return 1;
  }
  return ok ? 0 : 1;
}

}  // namespace coconet::verify
