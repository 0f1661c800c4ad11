#include "verify/Verify.h"
#include "verify/Draw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <map>
#include <numeric>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <set>
#include <sstream>

#include "interp/Interpreter.h"
#include "ir/Fallback.h"
#include "support/Files.h"

namespace coconet::verify {

using namespace ir;
using interp::Config;
using interp::PerRank;
using interp::Tensor;

using detail::drawInputs;
using detail::sizesStr;
using detail::storageFor;

namespace {

constexpr int kSizeTries = 4000;
constexpr int64_t kMaxElements = 1 << 16;       // per tensor for chosen sizes, to keep P = 8 runs fast
constexpr int64_t kMaxBoundElements = 1 << 24;  // per tensor when every size is given (-D)
// The interpreter's storage for one rank count: every value of both programs on every rank, in
// f64 (docs/language.md, "Limits").
constexpr int64_t kMaxVerifyBytes = int64_t(8) << 30;

// "12.3 GiB" (saturated counts print as "more than 8 EiB").
std::string gib(int64_t bytes) {
  if (bytes == INT64_MAX) return "more than 8 EiB";
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << static_cast<double>(bytes) / double(int64_t(1) << 30) << " GiB";
  return os.str();
}

// The bytes the interpreter holds for p's values at c's sizes: each stage on each rank, 8 bytes
// an element (saturating).
int64_t interpreterBytes(const Program& p, const Config& c) {
  int64_t total = 0;
  for (auto& s : p.stages) {
    for (int r = 0; r < c.ranks; ++r) {
      int64_t n = 8;
      for (auto d : interp::localShape(s.type, c, r))
        if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
      if (__builtin_add_overflow(total, n, &total)) return INT64_MAX;
    }
  }
  return total;
}

// Whether the sizes in c meet p's requirements and bounds; `why` (when given) says what fails.
bool requirementsHold(const Program& p, const Config& c, int64_t maxElements, std::string* why = nullptr) {
  auto env = interp::sizeEnv(c);
  for (auto& r : p.requirements) {
    if (r.even) continue;  // (the CUDA code's overlaps': the interpreter runs uneven blocks)
    std::optional<int64_t> l, rr;
    try {
      l = r.lhs.evaluate(env), rr = r.rhs.evaluate(env);
    } catch (const ast::SizeOverflow&) {
      if (why) *why = "requirement " + r.str() + " overflows 64 bits at these sizes";
      return false;
    }
    if (!l || !rr) return false;
    bool ok = r.op == ast::BinaryOp::Eq   ? *l == *rr
              : r.op == ast::BinaryOp::Ne ? *l != *rr
              : r.op == ast::BinaryOp::Lt ? *l < *rr
              : r.op == ast::BinaryOp::Le ? *l <= *rr
              : r.op == ast::BinaryOp::Gt ? *l > *rr
                                          : *l >= *rr;
    if (!ok) {
      if (why) *why = "requirement " + r.str() + " does not hold (" + r.reason + ")";
      return false;
    }
  }
  // Every group must split evenly, and every tensor must stay small.
  try {
    for (auto& s : p.stages) {
      int64_t n = 1;
      for (int r = 0; r < c.ranks; ++r) {
        auto shape = interp::localShape(s.type, c, r);
        n = 1;
        for (auto d : shape) {
          if (d < 0) return false;                              // (0: an empty last block of an uneven slice)
          if (__builtin_mul_overflow(n, d, &n)) n = INT64_MAX;  // past any bound
        }
        if (n > maxElements) {
          if (why)
            *why = "'" + s.name + "' would hold " + std::to_string(n) + " elements on rank " + std::to_string(r) + " (verify's bound is " +
                   std::to_string(maxElements) + ")";
          return false;
        }
      }
    }
    // A root fixed by the sizes or a bound scalar must name a rank of its stage's group.
    for (auto& s : p.stages) {
      if (s.kind != StageKind::Broadcast && s.kind != StageKind::Reduce1) continue;
      std::optional<int64_t> v;
      std::string what;
      if (s.root.param.empty()) {
        v = static_cast<int64_t>(s.root.value), what = "root " + std::to_string(*v);
      } else if (c.sizes.count(s.root.param)) {
        v = c.sizes.at(s.root.param), what = "size " + s.root.param + " = " + std::to_string(*v);
      } else {
        for (auto& prm : p.params)
          if (prm.name == s.root.param && prm.value) v = prm.ivalue, what = "parameter " + prm.name + " = " + std::to_string(*v);
      }
      if (!v) continue;  // a free scalar: chooseScalars draws a rank
      for (int r = 0; r < c.ranks; ++r) {
        int n = s.type.group ? interp::groupCoord(s.type.group, c, r).size : c.ranks;
        if (*v < 0 || *v >= n) {
          if (why)
            *why = "the root of '" + s.name + "' (" + what + ") is not a rank of its group of " + std::to_string(n) +
                   (n == 1 ? " rank" : " ranks") +
                   (c.sizes.count(s.root.param) && *v >= 1 && n == 1 ? " (a size is at least 1: a root that may be 0 is an i32)" : "");
          return false;
        }
      }
    }
  } catch (const interp::RunError& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

// Picks values for the unbound sizes: half the time a multiple of the rank count, so that
// divisibility requirements can be met, otherwise any small value, so that uneven sizes are
// covered where the program admits them.
bool chooseSizes(const Program& a, const Program& b, Config& c, std::mt19937_64& rng, std::string* why,
                 int64_t boundElements = kMaxBoundElements) {
  std::vector<std::string> free;
  for (auto& prm : a.params) {
    if (!prm.isSize) continue;
    if (prm.value)
      c.sizes[prm.name] = prm.ivalue;
    else
      free.push_back(prm.name);
  }
  // Lower bounds that requirements put on single sizes (`require H >= 1024`).
  std::map<std::string, int64_t> least;
  for (const Program* p : {&a, &b})
    for (auto& r : p->requirements)
      for (auto& n : free)
        if (r.lhs == SizeExpr::symbol(n) && r.rhs.constantValue()) {
          int64_t v = *r.rhs.constantValue() + (r.op == ast::BinaryOp::Gt ? 1 : 0);
          if (r.op == ast::BinaryOp::Ge || r.op == ast::BinaryOp::Gt || r.op == ast::BinaryOp::Eq)
            least[n] = std::max(least.count(n) ? least[n] : 1, v);
        }
  // Divisors that requirements put on single sizes (`C % 1024 == 0`) beyond the rank count times a
  // power of two that the draws below cover: such a size is drawn as a multiple of them half the
  // time (a chunk count rarely divides a random draw).
  std::map<std::string, int64_t> multipleOf;
  for (const Program* p : {&a, &b})
    for (auto& r : p->requirements) {
      auto rem = r.op == ast::BinaryOp::Eq && r.rhs.constantValue() == std::optional<int64_t>(0) ? r.lhs.asRemainder() : std::nullopt;
      if (!rem) continue;
      for (auto& n : free) {
        if (rem->first != SizeExpr::symbol(n)) continue;
        std::optional<int64_t> d;
        try {
          d = rem->second.evaluate({{"world.size", c.ranks}});
        } catch (const ast::SizeOverflow&) {}
        int64_t& m = multipleOf.emplace(n, 1).first->second;
        if (d && *d > 0 && *d <= (int64_t(1) << 20) && (8 * c.ranks) % *d != 0) m = std::min<int64_t>(std::lcm(m, *d), int64_t(1) << 20);
      }
    }
  // Sizes used as roots are drawn last, as ranks of the smallest root group (never 0: a size
  // is positive); a group's parts may depend on the other sizes.
  std::set<std::string> roots;
  for (const Program* p : {&a, &b})
    for (auto& s : p->stages)
      if (!s.root.param.empty()) roots.insert(s.root.param);
  auto drawRoots = [&] {
    int smallest = c.ranks;
    try {
      for (const Program* p : {&a, &b})
        for (auto& s : p->stages)
          if (!s.root.param.empty() && s.type.group)
            for (int r = 0; r < c.ranks; ++r) smallest = std::min(smallest, interp::groupCoord(s.type.group, c, r).size);
    } catch (const interp::RunError&) {
      // the groups do not split with these sizes: requirementsHold says so
    }
    for (auto& n : free)
      if (roots.count(n)) c.sizes[n] = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max(smallest - 1, 1)));
  };
  bool boundOnly = true;  // every draw failed on verify's bound on a tensor's elements
  std::string lastBound;
  for (int t = 0; t < kSizeTries; ++t) {
    int cap = t < kSizeTries / 2 ? 3 : 1;  // later tries look at smaller sizes
    for (auto& n : free) {
      if (roots.count(n)) continue;
      // A multiple of P times a power of two (chunked, scattered dimensions), or anything small,
      // above the size's lower bound.
      int64_t lo = least.count(n) ? least[n] : 1, v;
      if (rng() % 2)
        v = c.ranks * (int64_t(1) << (rng() % 4)) * static_cast<int64_t>(1 + rng() % cap);
      else
        v = 1 + static_cast<int64_t>(rng() % (2 * c.ranks + 3));
      if (v < lo) v = lo % c.ranks == 0 || rng() % 2 ? lo + (rng() % 2 ? 0 : (c.ranks - lo % c.ranks) % c.ranks) : lo;
      if (auto m = multipleOf.find(n); m != multipleOf.end() && m->second > 1 && rng() % 2)
        v = m->second * std::max<int64_t>((lo + m->second - 1) / m->second, static_cast<int64_t>(1 + rng() % cap));
      c.sizes[n] = v;
    }
    drawRoots();
    // Sizes the user gave all of are taken up to a larger bound (one try is enough).
    const int64_t most = free.empty() ? boundElements : kMaxElements;
    if (free.empty()) return requirementsHold(a, c, most, why) && requirementsHold(b, c, most, why);
    std::string w;
    if (requirementsHold(a, c, most, &w) && requirementsHold(b, c, most, &w)) return true;
    if (why && w.rfind("the root of", 0) == 0) *why = w;  // a reason no draw of the sizes changes
    const bool bound = w.find("(verify's bound is") != std::string::npos;
    boundOnly = boundOnly && bound;
    if (bound) lastBound = w;
  }
  // Draws that held a tensor past the bound (a bound size makes it large): say so, and how to
  // raise the bound.
  if (why && why->empty() && !lastBound.empty())
    *why = (boundOnly ? "" : "no draw met the requirements within verify's bound on a tensor's elements; the last past it: ") + lastBound +
           "; with every size given (-D) the bound is " + std::to_string(boundElements);
  return false;
}

// Scalar parameters without a value: a root is a rank of the smallest group; other integers are
// small positive numbers (Adam's step); floats lie in [0.05, 0.45] (rates, probabilities).
void chooseScalars(const Program& p, Config& c, std::mt19937_64& rng) {
  std::set<std::string> roots;
  for (auto& s : p.stages)
    if (!s.root.param.empty()) roots.insert(s.root.param);
  int smallest = c.ranks;
  for (auto& s : p.stages)
    if (s.type.group) smallest = std::min(smallest, interp::groupCoord(s.type.group, c, 0).size);
  std::uniform_real_distribution<double> uf(0.05, 0.45);
  for (auto& prm : p.params) {
    if (prm.isSize) continue;
    const bool integer = ast::isInteger(prm.dtype);
    if (prm.value) {
      if (integer)
        c.integerScalars[prm.name] = prm.ivalue;
      else
        c.scalars[prm.name] = *prm.value;
      continue;
    }
    if (roots.count(prm.name) && integer)
      c.integerScalars[prm.name] = static_cast<int64_t>(rng() % smallest);
    else if (roots.count(prm.name))
      c.scalars[prm.name] = static_cast<double>(rng() % smallest);
    else if (prm.dtype == DType::Bool)
      c.scalars[prm.name] = static_cast<double>(rng() % 2);
    else if (integer)
      c.integerScalars[prm.name] = static_cast<int64_t>(1 + rng() % 8);
    else
      c.scalars[prm.name] = interp::roundTo(prm.dtype, uf(rng));
  }
}

// The logical value each rank sees (a sliced value assembled from its group's slices).
std::vector<Tensor> logicalView(const PerRank& v, const TensorType& t, const Config& c) {
  std::vector<Tensor> out;
  for (int r = 0; r < c.ranks; ++r) out.push_back(interp::wholeOf(v, t, c, r));
  return out;
}

double unitRoundoff(DType t) {
  switch (t) {
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::BF16: return std::ldexp(1.0, -8);
    case DType::F64: return std::ldexp(1.0, -53);
    default: return std::ldexp(1.0, -24);
  }
}

struct Compare {
  int64_t elements = 0, mismatches = 0;
  double maxAbs = 0, maxRel = 0;
  bool exact() const { return mismatches == 0; }
};

bool same(double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); }

Compare compareExact(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  Compare c;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].shape != b[r].shape) {
      c.mismatches += std::max<int64_t>(1, a[r].numel());
      continue;
    }
    for (int64_t i = 0; i < a[r].numel(); ++i) {
      double x = a[r].data[i], y = b[r].data[i];
      ++c.elements;
      if (a[r].exact.empty() || b[r].exact.empty() ? same(x, y) : a[r].exact[i] == b[r].exact[i]) continue;
      ++c.mismatches;
      double d = std::fabs(x - y), scale = std::max(std::fabs(x), std::fabs(y));
      c.maxAbs = std::max(c.maxAbs, d);
      if (scale > 0) c.maxRel = std::max(c.maxRel, d / scale);
    }
  }
  return c;
}

// One unit in the last place of `t` at magnitude |v|.
double ulp(DType t, double v) {
  double a = std::fabs(v);
  if (a == 0 || !std::isfinite(a)) return 0;
  return std::ldexp(unitRoundoff(t) * 2, std::ilogb(a));
}

// When a schedule re-associates a reduction, the scheduled result may differ from the original
// by rounding alone. `ref` is the original program evaluated exactly (f64, no rounding). The
// original's own error E is the largest |orig - ref| over the value; each scheduled element
// must lie within 4 E + 2 ulp + gamma |ref| of ref, where gamma = n u is the classic bound for
// summing n terms in any order with unit roundoff u (n: the longest re-associated reduction).
// Each of `moved` is the exact original with one sum, mean or norm moved by the most that summing
// its terms in another order, or with each term rounded differently, can move it (gamma times
// their magnitudes); twice what that moves the element is allowed on top: a sum that cancels to
// near 0, or a value computed from it (a difference that cancels further on), differs by the
// rounding of the terms, which gamma |ref| alone does not cover.
struct Tolerance {
  double originalError = 0;
  int64_t outside = 0;
};
Tolerance compareToReference(const std::vector<Tensor>& orig, const std::vector<Tensor>& sched, const std::vector<Tensor>& ref, DType t,
                             double gamma, const std::vector<std::vector<Tensor>>& moved) {
  Tolerance tol;
  for (size_t r = 0; r < orig.size(); ++r)
    for (int64_t i = 0; i < orig[r].numel(); ++i)
      if (std::isfinite(ref[r].data[i])) tol.originalError = std::max(tol.originalError, std::fabs(orig[r].data[i] - ref[r].data[i]));
  for (size_t r = 0; r < orig.size(); ++r)
    for (int64_t i = 0; i < orig[r].numel(); ++i) {
      double x = sched[r].data[i], e = ref[r].data[i];
      if (same(x, orig[r].data[i])) continue;
      double sensitivity = 0;
      for (auto& m : moved)
        if (std::isfinite(m[r].data[i])) sensitivity += 2 * std::fabs(m[r].data[i] - e);
      if (!(std::fabs(x - e) <= 4 * tol.originalError + 2 * ulp(t, e) + gamma * std::fabs(e) + sensitivity)) ++tol.outside;
    }
  return tol;
}

// ---- Dumps for GPU tests ----
void writeTensor(const std::filesystem::path& file, const Tensor& t, DType dt) {
  std::ostringstream os(std::ios::binary);
  for (double v : t.data) {
    switch (dt) {
      case DType::F16:
      case DType::BF16: {
        float f = static_cast<float>(v);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint16_t h;
        if (dt == DType::BF16) {
          h = static_cast<uint16_t>(u >> 16);
        } else {  // exact: v is already a half value
          uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
          if (a >= 0x7f800000u)
            h = static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
          else if (a < 0x38800000u)
            h = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::ldexp(std::fabs(f), 24)));
          else
            h = static_cast<uint16_t>(sign | (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ffu));
        }
        os.write(reinterpret_cast<const char*>(&h), 2);
        break;
      }
      case DType::F32: {
        float f = static_cast<float>(v);
        os.write(reinterpret_cast<const char*>(&f), 4);
        break;
      }
      case DType::F64: os.write(reinterpret_cast<const char*>(&v), 8); break;
      case DType::I8: {
        int8_t x = static_cast<int8_t>(v);
        os.write(reinterpret_cast<const char*>(&x), 1);
        break;
      }
      case DType::U8:
      case DType::Bool: {
        uint8_t x = static_cast<uint8_t>(v);
        os.write(reinterpret_cast<const char*>(&x), 1);
        break;
      }
      case DType::I32: {
        int32_t x = static_cast<int32_t>(v);
        os.write(reinterpret_cast<const char*>(&x), 4);
        break;
      }
      default: break;  // i64: below, exactly
    }
  }
  for (int64_t x : t.exact) os.write(reinterpret_cast<const char*>(&x), 8);
  writeFile(file.string(), os.str());
}

void dump(const std::filesystem::path& dir, const Program& p, const Config& c, const interp::Values& in, const interp::Result& res) {
  makeDirectories(dir.string());
  nlohmann::json m;
  m["program"] = p.name;
  m["ranks"] = c.ranks;
  m["sizes"] = c.sizes;
  m["scalars"] = c.scalars;
  for (auto& [k, v] : c.integerScalars) m["scalars"][k] = v;
  m["seed"] = c.seed;
  auto entry = [&](const std::string& kind, const std::string& name, const TensorType& t, const PerRank& v) {
    nlohmann::json e{{"name", name}, {"dtype", ast::dtypeName(t.dtype)}, {"layout", t.layout.str()}};
    nlohmann::json files = nlohmann::json::array();
    for (int r = 0; r < c.ranks; ++r) {
      std::string f = kind + "." + name + ".r" + std::to_string(r) + ".bin";
      writeTensor(dir / f, v[r], t.dtype);
      files.push_back({{"file", f}, {"shape", v[r].shape}});
    }
    e["ranks"] = files;
    m[kind == "in" ? "inputs" : kind == "out" ? "outputs" : "states"].push_back(e);
  };
  for (auto& s : p.stages)
    if (s.kind == StageKind::Input || s.kind == StageKind::State) {
      std::string key = s.kind == StageKind::State ? s.state : s.name;
      entry("in", key, s.type, in.inputs.at(key));
    }
  for (size_t i = 0; i < p.outputs.size(); ++i) entry("out", p.outputNames[i], p.stages[p.outputs[i]].type, res.outputs[i]);
  for (auto& st : p.states) entry("state", st.name, st.type, res.states.at(st.name));
  writeFile((dir / "manifest.json").string(), m.dump(2) + "\n");
  // The same as plain lines, for the generated C++ driver (no JSON library needed there):
  //   ranks P | seed S | size NAME V | scalar NAME V | tensor in|out|state NAME DTYPE RANK FILE ELEMENTS
  std::ostringstream t;
  t.precision(17);
  t << "program " << p.name << "\nranks " << c.ranks << "\nseed " << c.seed << "\n";
  for (auto& [k, v] : c.sizes) t << "size " << k << " " << v << "\n";
  for (auto& [k, v] : c.scalars) t << "scalar " << k << " " << v << "\n";
  for (auto& [k, v] : c.integerScalars) t << "scalar " << k << " " << v << "\n";
  for (const char* kind : {"inputs", "outputs", "states"}) {
    if (!m.contains(kind)) continue;
    std::string word = std::string(kind) == "inputs" ? "in" : std::string(kind) == "outputs" ? "out" : "state";
    for (auto& e : m[kind])
      for (int r = 0; r < c.ranks; ++r) {
        int64_t n = 1;
        for (auto d : e["ranks"][r]["shape"]) n *= d.get<int64_t>();
        t << "tensor " << word << " " << e["name"].get<std::string>() << " " << e["dtype"].get<std::string>() << " " << r << " "
          << e["ranks"][r]["file"].get<std::string>() << " " << n << "\n";
      }
  }
  writeFile((dir / "manifest.txt").string(), t.str());
}

// One verification of a schedule: the two programs, the options and streams, and what the rank
// counts run so far found.
class Verification {
public:
  Verification(const Program& base, const Program& sched, const Options& opts, std::ostream& out, std::ostream& err)
      : base_(base), sched_(sched), opts_(opts), out_(out), err_(err), rng_(opts.seed) {
    for (auto& s : sched.stages)
      if (!s.reassociates.empty()) reassoc_ += (reassoc_.empty() ? "" : "; ") + s.reassociates;
    allGiven_ = std::none_of(base.params.begin(), base.params.end(), [](const ir::Param& prm) { return prm.isSize && !prm.value; });
    fallback_ = ir::unscheduledFallback(base, sched).possible;
  }

  bool ranks(int P);
  int report();

private:
  const Program& base_;
  const Program& sched_;
  const Options& opts_;
  std::ostream& out_;
  std::ostream& err_;
  std::mt19937_64 rng_;
  std::string reassoc_;  // why the schedule re-associates reductions ("; "-separated), or empty
  bool allGiven_ = false, fallback_ = false;
  bool allOk_ = true, anyRun_ = false, anyTolerance_ = false;
  std::vector<int> compared_, skipped_, unscheduled_;  // rank counts compared; with no sizes; run without the schedule

  bool compare(const Config& c, const interp::Values& inA, const interp::Result& ra, const interp::Result& rb,
               std::vector<std::string>& notes);
};

// Runs both programs with P ranks and prints the line for P: the comparison, a skip, or the
// unscheduled run. Returns false after an error (reported to err), which ends the verification.
bool Verification::ranks(int P) {
  Config c;
  c.ranks = P;
  c.seed = rng_();
  std::string why;
  // Sizes given that meet the program's requirements but not the schedule's: the generated code
  // runs the program without its schedule (CompileOptions::unscheduled), whose values are
  // dumped for its GPU check; there is nothing to compare.
  const int64_t bound = opts_.boundElements > 0 ? opts_.boundElements : kMaxBoundElements;
  const bool found = chooseSizes(base_, sched_, c, rng_, &why, bound);
  const bool unscheduled = !found && allGiven_ && fallback_ && requirementsHold(base_, c, bound);
  if (!found && !unscheduled) {
    std::string reqs;
    for (auto& r : sched_.requirements)
      if (!r.even) reqs += (reqs.empty() ? "" : ", ") + r.str();
    if (!why.empty() && allGiven_)  // every size was given: say what rules them out
      out_ << "  ranks " << P << ": skipped: the sizes given do not run with " << P << " ranks: " << why << "\n";
    else if (!why.empty())
      out_ << "  ranks " << P << ": skipped: no sizes run with " << P << " ranks: " << why << "\n";
    else
      out_ << "  ranks " << P << ": skipped: no sizes meet the requirements" << (reqs.empty() ? "" : " (" + reqs + ")") << " with " << P
           << " ranks\n";
    skipped_.push_back(P);
    return true;
  }
  chooseScalars(base_, c, rng_);
  int64_t need = interpreterBytes(base_, c);
  if (!unscheduled && __builtin_add_overflow(need, interpreterBytes(sched_, c), &need)) need = INT64_MAX;
  if (need > kMaxVerifyBytes) {
    err_ << "coconetc: error: verifying " << base_.name << " with " << P << " ranks (" << sizesStr(base_, c).substr(1) << ") needs about "
         << gib(need) << " of memory for the interpreter's values, past verify's bound of " << gib(kMaxVerifyBytes)
         << "; give smaller sizes with -D\n";
    return false;
  }
  auto logical = drawInputs(base_, c, rng_, opts_.saving);
  interp::Values inA;
  interp::Result ra, rb;
  try {
    if (opts_.saving) detail::fillSaved(*opts_.saving, base_.savedInputs, logical, c);
    inA = storageFor(base_, logical, c);
    ra = interp::run(base_, c, inA);
  } catch (const interp::RunError& e) {
    err_ << "coconetc: error: " << base_.name << " fails with " << P << " ranks (" << sizesStr(base_, c).substr(1) << "): " << e.what()
         << "\n";
    return false;
  }
  anyRun_ = true;
  if (unscheduled) {
    if (!opts_.dumpDir.empty()) dump(std::filesystem::path(opts_.dumpDir) / ("ranks" + std::to_string(P)), base_, c, inA, ra);
    out_ << "  ranks " << P << ":" << sizesStr(base_, c) << ": runs without its schedule (the schedule's " << why
         << "; the program's hold): nothing to compare\n";
    unscheduled_.push_back(P);
    return true;
  }
  interp::Values inB = storageFor(sched_, logical, c);
  try {
    rb = interp::run(sched_, c, inB);
  } catch (const interp::RunError& e) {
    err_ << "coconetc: error: the scheduled " << sched_.name << " fails with " << P << " ranks (" << sizesStr(base_, c).substr(1)
         << ") where the original runs: " << e.what() << "\n";
    return false;
  }
  std::vector<std::string> notes;
  bool ok = compare(c, inA, ra, rb, notes);
  // Dumped after the comparison passes: the scheduled program's storage (what its CUDA code
  // reads and writes, e.g. states kept sliced) holding values equal to the original's.
  if (ok && !opts_.dumpDir.empty()) dump(std::filesystem::path(opts_.dumpDir) / ("ranks" + std::to_string(P)), sched_, c, inB, rb);
  out_ << "  ranks " << P << ":" << sizesStr(base_, c) << ": " << (ok ? "ok" : "FAILED");
  for (size_t i = 0; i < notes.size(); ++i) out_ << (i ? ", " : ": ") << notes[i];
  out_ << "\n";
  allOk_ = allOk_ && ok;
  compared_.push_back(P);
  return true;
}

// Compares every output and final state of the original run `ra` with the scheduled run `rb`:
// bit-exact, or (when the schedule re-associates a reduction) within tolerance of the original
// evaluated exactly. Adds a note per value; returns whether all passed.
bool Verification::compare(const Config& c, const interp::Values& inA, const interp::Result& ra, const interp::Result& rb,
                           std::vector<std::string>& notes) {
  bool ok = true;
  // gamma: n u for the longest re-associated reduction of this run.
  double gamma = 0;
  for (auto& st : sched_.stages) {
    if (st.reassociates.empty() || st.operands.empty()) continue;
    const Stage& part = sched_.stages[st.operands[0]];
    if (part.operands.empty()) continue;
    int64_t n = 1;
    for (auto& d : sched_.stages[part.operands[0]].type.shape) n *= interp::evalSize(d, c, "a dimension");
    double u = st.type.dtype == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    gamma = std::max(gamma, static_cast<double>(n) * u);
  }
  // The original evaluated exactly, computed when a comparison needs it.
  std::optional<interp::Result> exactRun;
  auto reference = [&]() -> const interp::Result& {
    if (!exactRun) {
      Config ce = c;
      ce.exact = true;
      exactRun = interp::run(base_, ce, inA);
    }
    return *exactRun;
  };
  // The original evaluated exactly with each sum, mean or norm moved by gamma times its terms'
  // magnitudes: the re-associated ones, by what another order rounds; the others, because
  // their terms may now differ by rounding each (from a re-associated value before them), which
  // a sum that cancels adds up to as much.
  std::vector<std::string> sums;
  for (auto& st : base_.stages)
    if (st.kind == StageKind::Reduce && st.reduce != ReduceKind::Max && st.reduce != ReduceKind::Min && !ast::isInteger(st.type.dtype))
      sums.push_back(st.name);
  std::optional<std::vector<interp::Result>> movedRuns;
  auto moved = [&]() -> const std::vector<interp::Result>& {
    if (!movedRuns) {
      movedRuns.emplace();
      for (auto& n : sums) {
        Config ce = c;
        ce.exact = true;
        ce.perturb = n;
        ce.perturbGamma = gamma;
        movedRuns->push_back(interp::run(base_, ce, inA));
      }
    }
    return *movedRuns;
  };
  auto check = [&](const std::string& what, const TensorType& ta, const PerRank& va, const TensorType& tb, const PerRank& vb,
                   const std::function<const PerRank&(const interp::Result&)>& pickRef) {
    auto la = logicalView(va, ta, c), lb = logicalView(vb, tb, c);
    Compare exact = compareExact(la, lb);
    if (exact.exact()) {
      notes.push_back(what + " exact");
      return;
    }
    std::ostringstream os;
    os.precision(3);
    if (!reassoc_.empty()) {
      auto lr = logicalView(pickRef(reference()), ta, c);
      std::vector<std::vector<Tensor>> lm;
      for (auto& m : moved()) lm.push_back(logicalView(pickRef(m), ta, c));
      Tolerance tol = compareToReference(la, lb, lr, ta.dtype, gamma, lm);
      if (tol.outside == 0) {
        anyTolerance_ = true;
        os << what << " within tolerance (" << exact.mismatches << " of " << exact.elements << " elements differ, max rel " << exact.maxRel
           << "; original's own error " << tol.originalError << ")";
        notes.push_back(os.str());
        return;
      }
    }
    ok = false;
    os << what << " DIFFERS in " << exact.mismatches << " of " << exact.elements << " elements (max abs " << exact.maxAbs << ", max rel "
       << exact.maxRel << ")";
    notes.push_back(os.str());
  };
  for (size_t i = 0; i < base_.outputs.size(); ++i) {
    auto it = std::find(sched_.outputNames.begin(), sched_.outputNames.end(), base_.outputNames[i]);
    if (it == sched_.outputNames.end()) internalError("verify: scheduled program lost output " + base_.outputNames[i]);
    size_t j = static_cast<size_t>(it - sched_.outputNames.begin());
    check("'" + base_.outputNames[i] + "'", base_.stages[base_.outputs[i]].type, ra.outputs[i], sched_.stages[sched_.outputs[j]].type,
          rb.outputs[j], [i](const interp::Result& r) -> const PerRank& { return r.outputs[i]; });
  }
  for (auto& st : base_.states) {
    const StateInfo* sb = nullptr;
    for (auto& x : sched_.states)
      if (x.name == st.name) sb = &x;
    if (!sb) internalError("verify: scheduled program lost state " + st.name);
    std::string name = st.name;
    check("state '" + st.name + "'", st.type, ra.states.at(st.name), sb->type, rb.states.at(st.name),
          [name](const interp::Result& r) -> const PerRank& { return r.states.at(name); });
  }
  return ok;
}

// "1, 2, 4"
std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int P : ranks) s += (s.empty() ? "" : ", ") + std::to_string(P);
  return s;
}

// The lines after every rank count's: the tolerance used, then the verdict, which names what was
// compared and what was not.
int Verification::report() {
  if (!anyRun_) {
    err_ << "coconetc: error: " << base_.name << " could not run with any of the rank counts given\n";
    out_ << "NOT verified: no rank count ran (" << rankList(opts_.ranks) << ")\n";
    return 1;
  }
  if (anyTolerance_)
    out_ << "  tolerance: " << reassoc_ << ", so results may differ by rounding; each differing element of the "
         << "scheduled program is within 4 E + 2 ulp + n u |x| of the original evaluated exactly in f64 (x), "
         << "where E is the original's own largest rounding error on that value and n u the bound for summing "
         << "the n terms of the re-associated reduction in any order, plus twice what moving each sum, mean "
         << "or norm by n u times its terms' magnitudes moves that element\n";
  // What compared nothing: rank counts with no sizes to run, and ones that ran only the program
  // without its schedule.
  std::string nothing;
  if (!skipped_.empty()) nothing = "no sizes run with ranks " + rankList(skipped_);
  if (!unscheduled_.empty())
    nothing +=
        (nothing.empty() ? "" : "; ") + std::string("only the program without its schedule runs with ranks ") + rankList(unscheduled_);
  std::string values;
  for (auto& n : base_.outputNames) values += (values.empty() ? "'" : ", '") + n + "'";
  for (auto& st : base_.states) values += (values.empty() ? "state '" : ", state '") + st.name + "'";
  if (values.empty()) values = "no outputs or states:";
  if (!allOk_) {
    out_ << "NOT verified: the scheduled program differs" << (nothing.empty() ? "" : " (and " + nothing + ")") << "\n";
    return 1;
  }
  if (compared_.empty()) {
    out_ << "NOT verified: nothing compared: " << nothing << "\n";
    return 1;
  }
  if (!nothing.empty() && !opts_.allowSkips) {
    out_ << "NOT verified: " << nothing << ", so nothing was compared there (--allow-skips accepts that; or give other sizes or rank "
         << "counts)\n";
    return 1;
  }
  if (!opts_.scheduled)
    out_ << "verified: no schedule; the program ran with ranks " << rankList(compared_);
  else
    out_ << "verified: " << values << " compared with ranks " << rankList(compared_);
  out_ << (nothing.empty() ? "" : "; skipped (--allow-skips): " + nothing) << "\n";
  return 0;
}

}  // namespace

namespace detail {
bool chooseSizes(const Program& a, const Program& b, Config& c, std::mt19937_64& rng, std::string* why) {
  return verify::chooseSizes(a, b, c, rng, why);
}
void chooseScalars(const Program& p, Config& c, std::mt19937_64& rng) { verify::chooseScalars(p, c, rng); }
}  // namespace detail

int verify(const Program& base, const Program& sched, const Options& opts, std::ostream& out, std::ostream& err) {
  Verification v(base, sched, opts, out, err);
  for (int P : opts.ranks)
    if (!v.ranks(P)) return 1;
  return v.report();
}

}  // namespace coconet::verify
