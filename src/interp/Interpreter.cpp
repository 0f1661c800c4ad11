#include "interp/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "interp/InterpreterImpl.h"

namespace coconet::interp {

using namespace ir;

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// ---- Numerics ------------------------------------------------------------------------------
static uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float -> IEEE half -> float, round to nearest even, overflow to infinity.
static float roundHalf(float f) {
  uint32_t x = bitsOf(f);
  uint32_t sign = x & 0x80000000u;
  uint32_t a = x ^ sign;
  if (a >= 0x7f800000u) return f;                                      // inf, nan
  if (a >= 0x477ff000u) return floatOf(sign | 0x7f800000u);            // >= 65520 rounds to inf
  if (a < 0x38800000u) {                                               // below 2^-14: half subnormals
    float r = std::nearbyint(floatOf(a) * 16777216.0f) / 16777216.0f;  // multiples of 2^-24
    return floatOf(sign | bitsOf(r));
  }
  uint32_t lsb = (a >> 13) & 1u;
  a += 0xfffu + lsb;
  a &= ~0x1fffu;
  return floatOf(sign | a);
}

static float roundBf16(float f) {
  uint32_t x = bitsOf(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return f;  // nan
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  x &= 0xffff0000u;
  return floatOf(x);
}

template <class T> static double saturate(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return static_cast<double>(std::numeric_limits<T>::max());
  return v;
}

int64_t toInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t saturateInteger(DType t, int64_t v) {
  auto clamp = [&](int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  switch (t) {
    case DType::I8: return clamp(INT8_MIN, INT8_MAX);
    case DType::U8: return clamp(0, UINT8_MAX);
    case DType::I32: return clamp(INT32_MIN, INT32_MAX);
    case DType::Bool: return v != 0;
    default: return v;
  }
}

int64_t integerPow(int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
  uint64_t r = 1, b = static_cast<uint64_t>(x);
  for (uint64_t e = static_cast<uint64_t>(y); e; e >>= 1, b *= b)
    if (e & 1) r *= b;
  return static_cast<int64_t>(r);
}

bool keepsExact(DType t) { return t == DType::I64; }

double roundTo(DType t, double v) {
  switch (t) {
    case DType::F16: return roundHalf(static_cast<float>(v));
    case DType::BF16: return roundBf16(static_cast<float>(v));
    case DType::F32:
    case DType::LitFloat: return static_cast<float>(v);
    case DType::F64: return v;
    case DType::I8: return saturate<int8_t>(v);
    case DType::U8: return saturate<uint8_t>(v);
    case DType::I32: return saturate<int32_t>(v);
    case DType::I64:
    case DType::LitInt: return saturate<int64_t>(v);
    case DType::Bool: return v != 0 ? 1 : 0;
  }
  return v;
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float dropoutUniform(uint64_t seed, uint64_t salt, uint64_t index) {
  // The stream key (seed and salt mixed), then one mix with the element's index: the
  // runtime's coconet_rt::dropout_uniform, bit for bit.
  const uint64_t h = splitmix(splitmix(seed ^ splitmix(salt)) ^ index);
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// ---- Sizes and groups ----------------------------------------------------------------------
std::map<std::string, int64_t> sizeEnv(const Config& c) {
  auto env = c.sizes;
  env["world.size"] = c.ranks;
  return env;
}

int64_t evalSize(const SizeExpr& e, const Config& c, const std::string& what) {
  std::optional<int64_t> v;
  try {
    v = e.evaluate(sizeEnv(c));
  } catch (const ast::SizeOverflow&) {
    throw RunError(what + " = " + e.str() + " overflows 64 bits for these sizes");
  }
  if (!v) throw RunError("cannot evaluate " + what + " = " + e.str() + " for these sizes");
  return *v;
}

GroupCoord groupCoord(const GroupInfo* g, const Config& c, int r) {
  if (!g || g->depth == 0) return {0, r, c.ranks};
  GroupCoord pc = groupCoord(g->parent, c, r);
  int64_t k = evalSize(g->count, c, "the number of parts of group '" + g->name + "'");
  if (k <= 0 || pc.size % k != 0)
    throw RunError("group '" + g->name + "' splits " + std::to_string(pc.size) + " ranks into " + std::to_string(k) +
                   " parts: not a divisor");
  int size = static_cast<int>(pc.size / k);
  return {static_cast<int>(pc.instance * k + pc.pos / size), pc.pos % size, size};
}

std::vector<int64_t> localShape(const TensorType& t, const Config& c, int r) {
  std::vector<int64_t> s;
  for (auto& d : t.shape) s.push_back(evalSize(d, c, "a dimension"));
  if (t.group && t.layout.kind == Layout::Sliced) s[t.layout.dim] = sliceRange(t, c, r).extent;
  return s;
}

Block sliceRange(const TensorType& t, const Config& c, int r) {
  if (!t.group || t.layout.kind != Layout::Sliced) return {};
  const GroupCoord gc = groupCoord(t.group, c, r);
  return sliceBlock(evalSize(t.shape[t.layout.dim], c, "a dimension"), gc.size, gc.pos);
}

// ---- The machine (InterpreterImpl.h; element-wise stages in Compute.cpp) ---------------
namespace detail {

Result Machine::run(const Values& in) {
  checkRequirements();
  for (size_t i = 0; i < p_.stages.size(); ++i) {
    const Stage& s = p_.stages[i];
    try {
      vals_[i] = stage(s, in);
      checkExact(s, vals_[i]);
    } catch (const RunError& e) {
      throw RunError("in stage '" + s.name + "': " + e.what());
    }
  }
  Result r;
  for (int o : p_.outputs) r.outputs.push_back(vals_[o]);
  for (auto& st : p_.states) r.states[st.name] = toLayout(vals_[st.exit], p_.stages[st.exit].type, st.type);
  return r;
}

void Machine::checkRequirements() {
  auto env = sizeEnv(c_);
  for (auto& r : p_.requirements) {
    if (r.even) continue;  // (uneven blocks are the language's: ir::sliceBlock)
    std::optional<int64_t> l, rr;
    try {
      l = r.lhs.evaluate(env), rr = r.rhs.evaluate(env);
    } catch (const ast::SizeOverflow&) {
      throw RunError("requirement " + r.str() + " overflows 64 bits for these sizes");
    }
    if (!l || !rr) throw RunError("cannot evaluate requirement " + r.str());
    bool ok = false;
    switch (r.op) {
      case ast::BinaryOp::Eq: ok = *l == *rr; break;
      case ast::BinaryOp::Ne: ok = *l != *rr; break;
      case ast::BinaryOp::Lt: ok = *l < *rr; break;
      case ast::BinaryOp::Le: ok = *l <= *rr; break;
      case ast::BinaryOp::Gt: ok = *l > *rr; break;
      case ast::BinaryOp::Ge: ok = *l >= *rr; break;
      default: break;
    }
    if (!ok)
      throw RunError("requirement " + r.str() + " does not hold (" + r.reason + "): " + std::to_string(*l) + " vs " + std::to_string(*rr));
  }
}

Tensor Machine::zeros(const TensorType& t, int r) {
  Tensor x;
  x.shape = localShape(t, c_, r);
  x.data.assign(numelOf(x.shape), 0.0);
  if (keepsExact(t.dtype)) x.exact.assign(x.data.size(), 0);
  return x;
}

// Every i64 value keeps its elements exactly beside their doubles: a stage that wrote one and
// not the other is a bug of the interpreter.
void Machine::checkExact(const Stage& s, const PerRank& v) const {
  if (!keepsExact(s.type.dtype)) return;
  for (auto& t : v) {
    COCONET_ASSERT(t.exact.size() == t.data.size(), "interpreter: i64 stage '" + s.name + "' lost its exact values");
    for (size_t i = 0; i < t.data.size(); ++i)
      COCONET_ASSERT(t.data[i] == static_cast<double>(t.exact[i]), "interpreter: i64 stage '" + s.name + "' has inexact values");
  }
}

// Offset of rank r's slice along the sliced dimension (0 when not sliced).
int64_t Machine::sliceOffset(const TensorType& t, int r) { return sliceRange(t, c_, r).offset; }

PerRank Machine::toLayout(const PerRank& v, const TensorType& from, const TensorType& to) {
  if (from.layout == to.layout || !to.group || to.layout.kind != Layout::Sliced) return v;
  if (from.group && from.layout.kind == Layout::Sliced)
    internalError("interpreter: cannot store a " + from.layout.str() + " value in " + to.layout.str() + " state");
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) out.push_back(storageOf(v[r], to, c_, r));
  return out;
}

PerRank Machine::stage(const Stage& s, const Values& in) {
  switch (s.kind) {
    case StageKind::Input:
    case StageKind::State: {
      const std::string& key = s.kind == StageKind::State ? s.state : s.name;
      auto it = in.inputs.find(key);
      if (it == in.inputs.end()) throw RunError("no value given for '" + key + "'");
      if (static_cast<int>(it->second.size()) != c_.ranks)
        throw RunError("'" + key + "' has values for " + std::to_string(it->second.size()) + " ranks, not " + std::to_string(c_.ranks));
      for (int r = 0; r < c_.ranks; ++r)
        if (it->second[r].shape != localShape(s.type, c_, r))
          throw RunError("the value of '" + key + "' on rank " + std::to_string(r) + " has the wrong shape");
      return it->second;
    }
    case StageKind::Compute: return compute(s);
    case StageKind::Reduce: return reduce(s);
    case StageKind::Softmax:
    case StageKind::Layernorm:
    case StageKind::Rmsnorm: return rowwise(s);
    case StageKind::Matmul:
    case StageKind::Gemv: return matmul(s);
    case StageKind::Embedding: return embedding(s);
    case StageKind::EmbeddingGrad: return embeddingGrad(s);
    case StageKind::Permute: return permute(s);
    case StageKind::Concat: return concat(s);
    case StageKind::Narrow: return narrow(s);
    case StageKind::Reshape: {  // the same elements, the type's local shape
      PerRank out = vals_[s.operands[0]];
      for (int r = 0; r < c_.ranks; ++r) out[r].shape = localShape(s.type, c_, r);
      return out;
    }
    default: return collective(s);
  }
}

// Each rank's storage with its dimensions permuted (a sliced one moves with its data).
PerRank Machine::permute(const Stage& s) {
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& x = vals_[s.operands[0]][r];
    Tensor y = zeros(s.type, r);
    auto xs = strides(x.shape), ys = strides(y.shape);
    const int rank = static_cast<int>(y.shape.size());
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t rem = i, off = 0;
      for (int k = 0; k < rank; ++k) {
        off += rem / ys[k] * xs[s.perm[k]];
        rem %= ys[k];
      }
      y.data[i] = x.data[off];
      if (!y.exact.empty()) y.exact[i] = x.exact[off];
    }
    out.push_back(std::move(y));
  }
  return out;
}

// Each rank's blocks one after another along dimension dim (none is sliced along it).
PerRank Machine::concat(const Stage& s) {
  PerRank out;
  const int d = s.dim;
  for (int r = 0; r < c_.ranks; ++r) {
    Tensor y = zeros(s.type, r);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; ++k) outer *= y.shape[k];
    for (size_t k = d + 1; k < y.shape.size(); ++k) inner *= y.shape[k];
    int64_t at = 0;  // where this operand starts along dim
    for (int o : s.operands) {
      const Tensor& x = vals_[o][r];
      const int64_t len = x.shape[d];
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t j = 0; j < len * inner; ++j) {
          const int64_t to = (a * y.shape[d] + at) * inner + j, from = a * len * inner + j;
          y.data[to] = x.data[from];
          if (!y.exact.empty()) y.exact[to] = x.exact[from];
        }
      at += len;
    }
    out.push_back(std::move(y));
  }
  return out;
}

// Indices start to start + length - 1 of dimension dim, on each rank.
PerRank Machine::narrow(const Stage& s) {
  PerRank out;
  const int d = s.dim;
  const int64_t start = evalSize(s.start, c_, "the start of 'narrow'");
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& x = vals_[s.operands[0]][r];
    Tensor y = zeros(s.type, r);
    if (start + y.shape[d] > x.shape[d])
      throw RunError("'narrow' takes indices " + std::to_string(start) + " to " + std::to_string(start + y.shape[d] - 1) +
                     " of dimension " + std::to_string(d) + ", which has " + std::to_string(x.shape[d]));
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; ++k) outer *= y.shape[k];
    for (size_t k = d + 1; k < y.shape.size(); ++k) inner *= y.shape[k];
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t j = 0; j < y.shape[d] * inner; ++j) {
        const int64_t to = a * y.shape[d] * inner + j, from = (a * x.shape[d] + start) * inner + j;
        y.data[to] = x.data[from];
        if (!y.exact.empty()) y.exact[to] = x.exact[from];
      }
    out.push_back(std::move(y));
  }
  return out;
}

// ---- Reductions and row-wise operations ----
PerRank Machine::reduce(const Stage& s) {
  const Stage& xs = p_.stages[s.operands[0]];
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& x = vals_[s.operands[0]][r];
    Tensor y = zeros(s.type, r);
    int rank = static_cast<int>(x.shape.size());
    // Global count of reduced elements (mean divides by it).
    int64_t count = 1;
    for (int k = 0; k < rank; ++k)
      if (s.dim < 0 || k == s.dim) count *= evalSize(xs.type.shape[k], c_, "a dimension");
    auto xst = strides(x.shape);
    // The kept dimensions' strides in the result (whose type may keep the reduced one with
    // length 1: the same order of elements).
    std::vector<int64_t> kept;
    for (int k = 0; k < rank; ++k)
      if (k != s.dim) kept.push_back(x.shape[k]);
    auto yst = strides(kept);
    int64_t inner = s.dim < 0 ? x.numel() : x.shape[s.dim];
    const bool perturbed = !c_.perturb.empty() && s.name == c_.perturb;
    // (an empty result where a kept dimension is an empty block of an uneven slice; a block
    // reduced over nothing holds the operation's identity: 0, or -inf / +inf for max / min, or
    // the integer type's least / greatest value)
    for (int64_t o = 0; o < y.numel(); ++o) {
      // Output element o: its coordinates over the kept dimensions.
      int64_t base = 0;
      if (s.dim >= 0) {
        int64_t rem = o;
        int yk = 0;
        for (int k = 0; k < rank; ++k) {
          if (k == s.dim) continue;
          int64_t coord = rem / yst[yk];
          rem %= yst[yk];
          ++yk;
          base += coord * xst[k];
        }
      }
      int64_t step = s.dim < 0 ? 1 : xst[s.dim];
      // f32 (and f16/bf16) sums and squared norms accumulate in double and round to f32 once, as
      // the row-wise operations do: a sequential float sum of n terms errs by up to ~n ulp, the
      // GPU's per-thread partial sums combined in a tree by ~log n; max and min are exact anyway
      // (rounding is monotone), so every kind rounds its double result once.
      if (integral(xs.type.dtype) && integral(s.type.dtype) && s.reduce != ReduceKind::Norm) {
        // Integers: exactly, in 64 bits (a sum wraps as the generated code's does).
        int64_t acc = s.reduce == ReduceKind::Max ? INT64_MIN : s.reduce == ReduceKind::Min ? INT64_MAX : 0;
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = x.integer(base + i * step);
          acc = s.reduce == ReduceKind::Max ? std::max(acc, v) : s.reduce == ReduceKind::Min ? std::min(acc, v) : iadd(acc, v);
        }
        if (s.reduce == ReduceKind::Mean) acc = idiv(acc, count);
        y.setInteger(o, saturateInteger(s.type.dtype, acc));
        continue;
      }
      bool useF = accFloat(s.type.dtype);
      double ad = s.reduce == ReduceKind::Max ? -INFINITY : s.reduce == ReduceKind::Min ? INFINITY : 0.0;
      double mag = 0;  // the sum of the terms' magnitudes (for `perturbed`)
      for (int64_t i = 0; i < inner; ++i) {
        double v = x.data[base + i * step];
        if (perturbed) mag += std::fabs(v);
        if (useF) v = static_cast<float>(v);
        switch (s.reduce) {
          case ReduceKind::Sum:
          case ReduceKind::Mean: ad += v; break;
          case ReduceKind::Norm: ad += v * v; break;
          case ReduceKind::Max: ad = std::max(ad, v); break;
          case ReduceKind::Min: ad = std::min(ad, v); break;
        }
      }
      const float af = static_cast<float>(ad);
      double res = useF ? static_cast<double>(af) : ad;
      if (s.reduce == ReduceKind::Mean) res = useF ? static_cast<double>(af / static_cast<float>(count)) : ad / count;
      if (s.reduce == ReduceKind::Norm) res = useF ? static_cast<double>(std::sqrt(af)) : std::sqrt(ad);
      if (perturbed) {
        if (s.reduce == ReduceKind::Sum) res += c_.perturbGamma * mag;
        if (s.reduce == ReduceKind::Mean) res += c_.perturbGamma * mag / static_cast<double>(count);
        if (s.reduce == ReduceKind::Norm) res += c_.perturbGamma * std::fabs(res);
      }
      put(y, o, s.type.dtype, res);
    }
    out.push_back(std::move(y));
  }
  return out;
}

PerRank Machine::rowwise(const Stage& s) {
  if (c_.exact || s.type.dtype == DType::F64) return rowwiseIn<double>(s);
  return rowwiseIn<float>(s);
}

// Softmax, layernorm and rmsnorm over the last dimension, computed in T (f32, or f64 when exact);
// their sums accumulate in double, then round to T: a row's sequential float sum errs by ~n ulp
// (1.7e-4 relative for softmax over 40000 integers in {0..3}), where the GPU's per-thread sums
// combined in a tree err by ~1e-7.
template <class T> PerRank Machine::rowwiseIn(const Stage& s) {
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& x = vals_[s.operands[0]][r];
    Tensor y = zeros(s.type, r);
    int64_t n = x.shape.empty() ? 1 : x.shape.back();
    int64_t rows = n ? x.numel() / n : 0;
    T eps = static_cast<T>(s.eps.param.empty() ? s.eps.value : param(s.eps.param, DType::F32));
    for (int64_t row = 0; row < rows; ++row) {
      const double* xr = &x.data[row * n];
      double* yr = &y.data[row * n];
      if (s.kind == StageKind::Softmax) {
        T mx = -INFINITY;
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<T>(xr[i]));
        for (int64_t i = 0; i < n; ++i) acc += std::exp(static_cast<T>(xr[i]) - mx);
        const T sum = static_cast<T>(acc);
        for (int64_t i = 0; i < n; ++i) yr[i] = store(s.type.dtype, std::exp(static_cast<T>(xr[i]) - mx) / sum);
      } else if (s.kind == StageKind::Rmsnorm) {
        // x / sqrt(mean(x^2) + eps) [* gamma]
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += static_cast<T>(xr[i]) * static_cast<T>(xr[i]);
        const T ss = static_cast<T>(acc);
        T inv = T(1) / std::sqrt(ss / static_cast<T>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
          T v = static_cast<T>(xr[i]) * inv;
          if (s.operands.size() == 2) v = v * static_cast<T>(vals_[s.operands[1]][r].data[i]);
          yr[i] = store(s.type.dtype, v);
        }
      } else {
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += static_cast<T>(xr[i]);
        const T mean = static_cast<T>(acc) / static_cast<T>(n);
        acc = 0;
        for (int64_t i = 0; i < n; ++i) {
          T d = static_cast<T>(xr[i]) - mean;
          acc += d * d;
        }
        const T var = static_cast<T>(acc) / static_cast<T>(n);
        T inv = T(1) / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i) {
          T v = (static_cast<T>(xr[i]) - mean) * inv;
          if (s.operands.size() == 3)
            v = v * static_cast<T>(vals_[s.operands[1]][r].data[i]) + static_cast<T>(vals_[s.operands[2]][r].data[i]);
          yr[i] = store(s.type.dtype, v);
        }
      }
    }
    out.push_back(std::move(y));
  }
  return out;
}

// ---- Matrix operations (on each rank's local storage; the layout rules make that right) ----
// A gemv is a matmul whose right operand and result have one column.
PerRank Machine::matmul(const Stage& s) {
  bool gemv = s.kind == StageKind::Gemv;
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& a = vals_[s.operands[0]][r];
    Tensor column;
    if (gemv) {
      column = vals_[s.operands[1]][r];
      column.shape.push_back(1);
    }
    const Tensor& b = gemv ? column : vals_[s.operands[1]][r];
    Tensor y = zeros(s.type, r);
    if (gemv) y.shape.push_back(1);
    int ry = static_cast<int>(y.shape.size()), ra = static_cast<int>(a.shape.size()), rb = static_cast<int>(b.shape.size());
    int64_t M = y.shape[ry - 2], N = y.shape[ry - 1], K = a.shape[ra - 1];
    if (b.shape[rb - 2] != K || a.shape[ra - 2] != M || b.shape[rb - 1] != N)
      throw RunError("matmul operands do not fit on rank " + std::to_string(r));
    auto as = strides(a.shape), bs = strides(b.shape), ys = strides(y.shape);
    int ySliced = s.type.group && s.type.layout.kind == Layout::Sliced ? s.type.layout.dim : -1;
    int64_t yOff = ySliced >= 0 && ySliced < ry - 2 ? sliceOffset(s.type, r) : 0;
    bool wide = c_.exact || s.type.dtype == DType::F64;  // f64 accumulates in f64
    int64_t batches = 1;
    for (int k = 0; k < ry - 2; ++k) batches *= y.shape[k];
    for (int64_t bi = 0; bi < batches; ++bi) {
      // Batch coordinates, broadcast onto a and b.
      int64_t aoff = 0, boff = 0, yoff = 0, rem = bi;
      for (int k = 0; k < ry - 2; ++k) {
        int64_t inner = 1;
        for (int j = k + 1; j < ry - 2; ++j) inner *= y.shape[j];
        int64_t coord = rem / inner;
        rem %= inner;
        yoff += coord * ys[k];
        // The result may be sliced along this batch dimension while an operand holds it whole.
        int64_t gcoord = coord + (k == ySliced ? yOff : 0);
        int ka = k - (ry - ra), kb = k - (ry - rb);
        if (ka >= 0 && a.shape[ka] != 1) aoff += (a.shape[ka] == y.shape[k] ? coord : gcoord) * as[ka];
        if (kb >= 0 && b.shape[kb] != 1) boff += (b.shape[kb] == y.shape[k] ? coord : gcoord) * bs[kb];
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          // Products of f32 (or narrower) operands are exact in double; their sum rounds to f32
          // once (see reduce()).
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) {
            double x = a.data[aoff + m * as[ra - 2] + k], w = b.data[boff + k * bs[rb - 2] + n];
            if (wide)
              acc += x * w;
            else
              acc += static_cast<double>(static_cast<float>(x)) * static_cast<double>(static_cast<float>(w));
          }
          put(y, yoff + m * ys[ry - 2] + n, s.type.dtype, wide ? acc : static_cast<double>(static_cast<float>(acc)));
        }
    }
    if (gemv) y.shape.pop_back();
    out.push_back(std::move(y));
  }
  return out;
}

PerRank Machine::embedding(const Stage& s) {
  const Stage& ts = p_.stages[s.operands[0]];
  int64_t rowsGlobal = evalSize(ts.type.shape[0], c_, "the table's rows");
  bool rowSliced = ts.type.group && ts.type.layout.kind == Layout::Sliced && ts.type.layout.dim == 0;
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& t = vals_[s.operands[0]][r];
    const Tensor& idx = vals_[s.operands[1]][r];
    Tensor y = zeros(s.type, r);
    int64_t R = t.shape[0], D = t.shape[1];
    int64_t off = rowSliced ? sliceOffset(ts.type, r) : 0;
    for (int64_t i = 0; i < idx.numel(); ++i) {
      int64_t v = idx.integer(i);
      if (v < 0 || v >= rowsGlobal)
        throw RunError("index " + std::to_string(v) + " is out of range [0, " + std::to_string(rowsGlobal) + ") of table '" + ts.name +
                       "'");
      int64_t lr = v - off;
      if (lr < 0 || lr >= R) continue;  // a row another rank owns: zero here
      for (int64_t d = 0; d < D; ++d) {
        y.data[i * D + d] = t.data[lr * D + d];
        if (!y.exact.empty()) y.exact[i * D + d] = t.exact[lr * D + d];
      }
    }
    out.push_back(std::move(y));
  }
  return out;
}

// The table's gradient: each rank's rows of dy summed into the rows its indices name (a row-sliced
// table: the rows of this rank's block), in position order, then stored once.
PerRank Machine::embeddingGrad(const Stage& s) {
  const int64_t rowsGlobal = evalSize(s.type.shape[0], c_, "the table's rows");
  const bool rowSliced = s.type.group && s.type.layout.kind == Layout::Sliced && s.type.layout.dim == 0;
  PerRank out;
  for (int r = 0; r < c_.ranks; ++r) {
    const Tensor& dy = vals_[s.operands[0]][r];
    const Tensor& idx = vals_[s.operands[1]][r];
    Tensor g = zeros(s.type, r);
    const int64_t R = g.shape[0], D = g.shape[1];
    const int64_t off = rowSliced ? sliceOffset(s.type, r) : 0;
    std::vector<double> acc(static_cast<size_t>(R * D), 0.0);
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t v = idx.integer(i);
      if (v < 0 || v >= rowsGlobal)
        throw RunError("index " + std::to_string(v) + " is out of range [0, " + std::to_string(rowsGlobal) + ") of '" + s.name + "'");
      const int64_t lr = v - off;
      if (lr < 0 || lr >= R) continue;  // a row another rank owns
      for (int64_t d = 0; d < D; ++d) acc[lr * D + d] += dy.data[i * D + d];
    }
    for (size_t k = 0; k < acc.size(); ++k) g.data[k] = store(s.type.dtype, acc[k]);
    out.push_back(std::move(g));
  }
  return out;
}

// ---- Communication ----
// Ranks of each instance of a group, in position order.
std::vector<std::vector<int>> Machine::instances(const GroupInfo* g) {
  std::map<int, std::vector<std::pair<int, int>>> by;
  for (int r = 0; r < c_.ranks; ++r) {
    GroupCoord gc = groupCoord(g, c_, r);
    by[gc.instance].push_back({gc.pos, r});
  }
  std::vector<std::vector<int>> out;
  for (auto& [i, v] : by) {
    std::sort(v.begin(), v.end());
    std::vector<int> ranks;
    for (auto& pr : v) ranks.push_back(pr.second);
    out.push_back(ranks);
  }
  return out;
}

double Machine::combine(ReduceOp op, DType t, double acc, double v) {
  bool f = accFloat(t);
  switch (op) {
    case ReduceOp::Sum: return f ? static_cast<double>(static_cast<float>(acc) + static_cast<float>(v)) : acc + v;
    case ReduceOp::Prod: return f ? static_cast<double>(static_cast<float>(acc) * static_cast<float>(v)) : acc * v;
    case ReduceOp::Max: return std::max(acc, v);
    case ReduceOp::Min: return std::min(acc, v);
  }
  return acc;
}

Tensor Machine::reduceAcross(const std::vector<int>& ranks, int operand, ReduceOp op, DType t) {
  Tensor acc = vals_[operand][ranks[0]];
  if (integral(t)) {  // exactly, in 64 bits (sums and products wrap), then saturated to t
    for (size_t i = 1; i < ranks.size(); ++i) {
      const Tensor& x = vals_[operand][ranks[i]];
      for (int64_t e = 0; e < acc.numel(); ++e) {
        int64_t u = acc.integer(e), v = x.integer(e);
        acc.setInteger(e, op == ReduceOp::Sum    ? iadd(u, v)
                          : op == ReduceOp::Prod ? imul(u, v)
                          : op == ReduceOp::Max  ? std::max(u, v)
                                                 : std::min(u, v));
      }
    }
    for (int64_t e = 0; e < acc.numel(); ++e) acc.setInteger(e, saturateInteger(t, acc.integer(e)));
    return acc;
  }
  for (size_t i = 1; i < ranks.size(); ++i) {
    const Tensor& x = vals_[operand][ranks[i]];
    for (int64_t e = 0; e < acc.numel(); ++e) acc.data[e] = combine(op, t, acc.data[e], x.data[e]);
  }
  for (auto& v : acc.data) v = store(t, v);
  return acc;
}

PerRank Machine::collective(const Stage& s) {
  int x = s.operands[0];
  const Stage& xs = p_.stages[x];
  PerRank out(c_.ranks);
  auto groups = instances(s.type.group);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& ranks = groups[gi];
    int n = static_cast<int>(ranks.size());
    switch (s.kind) {
      case StageKind::AllReduce: {
        Tensor red = reduceAcross(ranks, x, s.op, s.type.dtype);
        for (int r : ranks) out[r] = red;
        break;
      }
      case StageKind::ReduceScatter: {
        Tensor red = reduceAcross(ranks, x, s.op, s.type.dtype);
        for (int r : ranks) out[r] = storageOf(red, s.type, c_, r);
        break;
      }
      case StageKind::AllGather: {
        Tensor full = wholeOf(vals_[x], xs.type, c_, ranks[0]);
        for (int r : ranks) out[r] = full;
        break;
      }
      case StageKind::Broadcast:
      case StageKind::Reduce1: {
        double rootv = s.root.param.empty() ? s.root.value : param(s.root.param, DType::I64);
        int root = static_cast<int>(rootv);
        if (rootv < 0 || root >= n)
          throw RunError("root " + std::to_string(static_cast<int64_t>(rootv)) + " is not a rank of group '" + s.type.group->name + "' (" +
                         std::to_string(n) + " ranks)");
        if (s.kind == StageKind::Broadcast) {
          for (int r : ranks) out[r] = vals_[x][ranks[root]];
        } else {
          Tensor red = reduceAcross(ranks, x, s.op, s.type.dtype);
          for (int r : ranks) out[r] = r == ranks[root] ? red : zeros(s.type, r);
        }
        break;
      }
      case StageKind::AllToAll: {
        for (int j = 0; j < n; ++j) {
          Tensor y = zeros(s.type, ranks[j]);
          int64_t chunk = y.numel() / n;
          for (int i = 0; i < n; ++i) {
            const Tensor& src = vals_[x][ranks[i]];
            std::copy(src.data.begin() + j * chunk, src.data.begin() + (j + 1) * chunk, y.data.begin() + i * chunk);
            if (!y.exact.empty())
              std::copy(src.exact.begin() + j * chunk, src.exact.begin() + (j + 1) * chunk, y.exact.begin() + i * chunk);
          }
          out[ranks[j]] = std::move(y);
        }
        break;
      }
      case StageKind::Send: {
        if (s.peer == Peer::NextRank || s.peer == Peer::PrevRank) {
          for (int i = 0; i < n; ++i) {
            int from = s.peer == Peer::NextRank ? (i + n - 1) % n : (i + 1) % n;
            out[ranks[i]] = vals_[x][ranks[from]];
          }
        } else {
          int count = static_cast<int>(groups.size());
          int from = s.peer == Peer::NextGroup ? (static_cast<int>(gi) + count - 1) % count : (static_cast<int>(gi) + 1) % count;
          for (int i = 0; i < n; ++i) out[ranks[i]] = vals_[x][groups[from][i]];
        }
        break;
      }
      default: internalError(std::string("interpreter: unexpected stage kind ") + stageKindName(s.kind));
    }
  }
  return out;
}

}  // namespace detail

Result run(const Program& p, const Config& c, const Values& in) { return detail::Machine(p, c).run(in); }

// Maps between a whole tensor and one rank's slice of it along dimension d, starting at `off`.
template <class F>
static void forSliceElements(const std::vector<int64_t>& wholeShape, const std::vector<int64_t>& sliceShape, int d, int64_t off, F&& f) {
  auto ws = detail::strides(wholeShape), ss = detail::strides(sliceShape);
  int64_t n = detail::numelOf(sliceShape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, w = 0;
    for (size_t k = 0; k < sliceShape.size(); ++k) {
      int64_t coord = rem / ss[k];
      rem %= ss[k];
      w += (coord + (static_cast<int>(k) == d ? off : 0)) * ws[k];
    }
    f(i, w);
  }
}

Tensor storageOf(const Tensor& whole, const TensorType& t, const Config& c, int r) {
  if (!t.group || t.layout.kind != Layout::Sliced) return whole;
  Tensor x;
  x.shape = localShape(t, c, r);
  x.data.resize(detail::numelOf(x.shape));
  if (!whole.exact.empty()) x.exact.resize(x.data.size());
  forSliceElements(whole.shape, x.shape, t.layout.dim, sliceRange(t, c, r).offset, [&](int64_t i, int64_t w) {
    x.data[i] = whole.data[w];
    if (!x.exact.empty()) x.exact[i] = whole.exact[w];
  });
  return x;
}

Tensor wholeOf(const PerRank& v, const TensorType& t, const Config& c, int r) {
  if (!t.group || t.layout.kind != Layout::Sliced) return v[r];
  Tensor whole;
  for (auto& d : t.shape) whole.shape.push_back(evalSize(d, c, "a dimension"));
  whole.data.assign(detail::numelOf(whole.shape), 0.0);
  if (keepsExact(t.dtype)) whole.exact.assign(whole.data.size(), 0);
  int me = groupCoord(t.group, c, r).instance;
  for (int q = 0; q < c.ranks; ++q) {
    GroupCoord gc = groupCoord(t.group, c, q);
    if (gc.instance != me) continue;
    const Tensor& part = v[q];
    forSliceElements(whole.shape, part.shape, t.layout.dim, sliceRange(t, c, q).offset, [&](int64_t i, int64_t w) {
      whole.data[w] = part.data[i];
      if (!whole.exact.empty()) whole.exact[w] = part.exact[i];
    });
  }
  return whole;
}

}  // namespace coconet::interp