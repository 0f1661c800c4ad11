// The interpreter's element-wise compute stages: each element's operand elements, and the
// evaluation of the stage's expression in the IR's numerics.
#include <algorithm>
#include <cmath>

#include "interp/InterpreterImpl.h"

namespace coconet::interp::detail {

using namespace ir;

PerRank Machine::compute(const Stage& s) {
  PerRank out;
  std::vector<Num> node(s.expr.nodes.size());
  for (int r = 0; r < c_.ranks; ++r) {
    Tensor y = zeros(s.type, r);
    int rank = static_cast<int>(y.shape.size());
    std::vector<int64_t> gshape;
    for (auto& d : s.type.shape) gshape.push_back(evalSize(d, c_, "a dimension"));
    int sd = s.type.group && s.type.layout.kind == Layout::Sliced ? s.type.layout.dim : -1;
    int64_t off = sd >= 0 ? sliceOffset(s.type, r) : 0;
    auto ys = strides(y.shape), gs = strides(gshape);
    // Operand index maps: for each operand, its local shape/strides and slice offset.
    struct Opnd {
      const Tensor* t;
      std::vector<int64_t> gshape, strides;
      int rank, sd;
      int64_t off;
      bool integer;  // of an integer or bool type: read exactly
    };
    std::vector<Opnd> ops;
    for (int o : s.operands) {
      const Stage& os = p_.stages[o];
      Opnd x;
      x.t = &vals_[o][r];
      for (auto& d : os.type.shape) x.gshape.push_back(evalSize(d, c_, "a dimension"));
      x.strides = strides(x.t->shape);
      x.rank = static_cast<int>(x.gshape.size());
      x.sd = os.type.group && os.type.layout.kind == Layout::Sliced ? os.type.layout.dim : -1;
      x.off = x.sd >= 0 ? sliceOffset(os.type, r) : 0;
      x.integer = integral(os.type.dtype) || os.type.dtype == DType::Bool;
      ops.push_back(std::move(x));
    }
    GroupCoord gc = groupCoord(s.type.group, c_, r);
    bool local = s.type.group && s.type.layout.kind == Layout::Local;
    std::vector<int64_t> g(rank);
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t rem = i, gidx = 0;
      for (int k = 0; k < rank; ++k) {
        g[k] = rem / ys[k] + (k == sd ? off : 0);
        rem %= ys[k];
        gidx += g[k] * gs[k];
      }
      uint64_t key =
          static_cast<uint64_t>(gidx) ^ (static_cast<uint64_t>(gc.instance) << 48) ^ (local ? static_cast<uint64_t>(r + 1) << 40 : 0);
      auto operand = [&](int idx) {
        const Opnd& x = ops[idx];
        int64_t li = 0;
        for (int k = 0; k < x.rank; ++k) {
          int64_t coord = x.gshape[k] == 1 ? 0 : g[k + rank - x.rank];
          if (k == x.sd) coord -= x.off;
          li += coord * x.strides[k];
        }
        return x.integer ? Num::of(x.t->integer(li)) : Num::of(x.t->data[li]);
      };
      for (size_t n = 0; n < s.expr.nodes.size(); ++n) {
        const ENode& e = s.expr.nodes[n];
        Num v = eval(e, node, operand, r, key);
        // Integer-valued nodes hold integers, the others doubles (ENode::integerValued: the
        // generated code's types).
        node[n] = e.integerValued() ? (v.isInt ? v : Num::of(toInt64(v.d))) : (v.isInt ? Num::of(v.f()) : v);
      }
      put(y, i, s.type.dtype, node.back());
    }
    out.push_back(std::move(y));
  }
  return out;
}

Num Machine::paramNum(const std::string& name, DType t) {
  if (auto it = c_.integerScalars.find(name); it != c_.integerScalars.end()) return Num::of(saturateInteger(t, it->second));
  if (auto it = c_.scalars.find(name); it != c_.scalars.end()) return Num::of(roundTo(t, it->second));
  if (auto it = c_.sizes.find(name); it != c_.sizes.end()) return Num::of(it->second);
  throw RunError("no value for parameter '" + name + "'");
}

// One node of a compute stage: integer types in 64-bit integers (two's complement), f16, bf16
// and f32 in float (f64 in exact mode), f64 and literals in double.
template <class F> Num Machine::eval(const ENode& n, const std::vector<Num>& v, F&& operand, int r, uint64_t key) {
  auto a = [&](int k) -> const Num& { return v[n.args[k]]; };
  auto d = [&](int k) { return a(k).f(); };
  auto i = [&](int k) { return a(k).n(); };
  DType t = n.dtype;
  bool fl = floatish(t) && t != DType::LitFloat && !c_.exact;
  bool integer = integral(t);
  // An operand in float: an integer converts directly (as the generated code's casts do).
  auto fv = [&](int k) { return a(k).isInt ? static_cast<float>(a(k).i) : static_cast<float>(a(k).d); };
  auto arith = [&](auto opf, auto opd, auto opi) -> Num {
    if (integer) return Num::of(static_cast<int64_t>(opi(i(0), i(1))));
    if (fl) return Num::of(static_cast<double>(opf(fv(0), fv(1))));
    return Num::of(static_cast<double>(opd(d(0), d(1))));
  };
  auto unary = [&](auto opf, auto opd) -> Num { return Num::of(fl ? static_cast<double>(opf(fv(0))) : static_cast<double>(opd(d(0)))); };
  // Comparisons, min and max: exactly where both operands are integers.
  auto bothInt = [&] { return a(0).isInt && a(1).isInt; };
  auto less = [&](int x, int y) { return bothInt() ? i(x) < i(y) : d(x) < d(y); };
  auto pick = [&](bool first) -> Num {
    const Num& p = a(first ? 0 : 1);
    return integer ? Num::of(p.n()) : Num::of(p.f());
  };
  switch (n.op) {
    case EOp::Operand: return operand(n.index);
    case EOp::Const: return n.integerConst() ? Num::of(n.ivalue) : Num::of(n.value);
    case EOp::Param: return paramNum(n.name, t);
    case EOp::Rank: return Num::of(static_cast<int64_t>(groupCoord(n.group, c_, r).pos));
    case EOp::GroupIndex: return Num::of(static_cast<int64_t>(groupCoord(n.group, c_, r).instance));
    case EOp::GroupSize: return Num::of(static_cast<int64_t>(groupCoord(n.group, c_, r).size));
    case EOp::Neg:
      if (integer) return Num::of(ineg(i(0)));
      return Num::of(fl ? static_cast<double>(-fv(0)) : -d(0));
    case EOp::Not: return Num::of(static_cast<int64_t>(d(0) == 0));
    case EOp::Add: return arith([](float x, float y) { return x + y; }, [](double x, double y) { return x + y; }, iadd);
    case EOp::Sub: return arith([](float x, float y) { return x - y; }, [](double x, double y) { return x - y; }, isub);
    case EOp::Mul: return arith([](float x, float y) { return x * y; }, [](double x, double y) { return x * y; }, imul);
    case EOp::Div: return arith([](float x, float y) { return x / y; }, [](double x, double y) { return x / y; }, idiv);
    case EOp::Mod: return arith([](float x, float y) { return std::fmod(x, y); }, [](double x, double y) { return std::fmod(x, y); }, imod);
    case EOp::Lt: return Num::of(static_cast<int64_t>(less(0, 1)));
    case EOp::Le: return Num::of(static_cast<int64_t>(!less(1, 0)));
    case EOp::Gt: return Num::of(static_cast<int64_t>(less(1, 0)));
    case EOp::Ge: return Num::of(static_cast<int64_t>(!less(0, 1)));
    case EOp::Eq: return Num::of(static_cast<int64_t>(bothInt() ? i(0) == i(1) : d(0) == d(1)));
    case EOp::Ne: return Num::of(static_cast<int64_t>(bothInt() ? i(0) != i(1) : d(0) != d(1)));
    case EOp::And: return Num::of(static_cast<int64_t>(d(0) != 0 && d(1) != 0));
    case EOp::Or: return Num::of(static_cast<int64_t>(d(0) != 0 || d(1) != 0));
#define COCONET_UNARY_MATH(k, s, f32, f64, ...) \
  case EOp::k:                                  \
    return unary([](float x) { return f32; }, [](double x) { return f64; });
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    case EOp::Abs:
      if (integer) return Num::of(i(0) < 0 ? ineg(i(0)) : i(0));
      return Num::of(std::fabs(fl ? static_cast<double>(fv(0)) : d(0)));
    case EOp::Relu:
      if (integer) return Num::of(std::max<int64_t>(i(0), 0));
      return Num::of(d(0) > 0 ? (fl ? static_cast<double>(fv(0)) : d(0)) : 0.0);
    case EOp::Pow:
      return arith([](float x, float y) { return std::pow(x, y); }, [](double x, double y) { return std::pow(x, y); }, integerPow);
    case EOp::Min: return pick(!less(1, 0));
    case EOp::Max: return pick(!less(0, 1));
    case EOp::Select: return d(0) != 0 ? a(1) : a(2);
    case EOp::Cast:
      if (integral(t) || t == DType::Bool) return Num::of(a(0).isInt ? saturateInteger(t, a(0).i) : toInt64(store(t, a(0).f())));
      if (a(0).isInt && t != DType::F64 && !c_.exact) return Num::of(store(t, static_cast<double>(fv(0))));
      return Num::of(store(t, d(0)));
    case EOp::Dropout: {
      float p = fv(1);
      uint64_t seed = n.args.size() > 2 ? static_cast<uint64_t>(i(2)) : c_.seed;
      float u = dropoutUniform(seed, n.salt, key);
      if (u < p) return Num::of(0.0);
      if (!fl) return Num::of(d(0) / (1.0 - d(1)));  // f64 (and exact mode) in f64
      return Num::of(static_cast<double>(fv(0) * (1.0f / (1.0f - p))));
    }
  }
  return Num::of(0.0);
}
}  // namespace coconet::interp::detail
