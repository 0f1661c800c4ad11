#include "ast/Types.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace coconet::ast {

// ---- DType -------------------------------------------------------------------------------
const char* dtypeName(DType t) {
  switch (t) {
#define X(name, str, bytes) \
  case DType::name: return str;
    COCONET_DTYPES(X)
#undef X
  }
  return "?";
}

int dtypeBytes(DType t) {
  switch (t) {
#define X(name, str, bytes) \
  case DType::name: return bytes;
    COCONET_DTYPES(X)
#undef X
  }
  return 8;
}

std::optional<DType> dtypeFromName(const std::string& s) {
#define X(name, str, bytes) \
  if (s == str && DType::name != DType::LitInt && DType::name != DType::LitFloat) return DType::name;
  COCONET_DTYPES(X)
#undef X
  return std::nullopt;
}

bool isFloat(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64 || t == DType::LitFloat; }
bool isInteger(DType t) { return t == DType::I8 || t == DType::I32 || t == DType::I64 || t == DType::U8 || t == DType::LitInt; }
bool isLiteral(DType t) { return t == DType::LitInt || t == DType::LitFloat; }

DType concrete(DType t) {
  if (t == DType::LitInt) return DType::I32;
  if (t == DType::LitFloat) return DType::F32;
  return t;
}

static int floatRank(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16: return 1;
    case DType::F32: return 2;
    case DType::F64: return 3;
    default: return 0;
  }
}

static int intBits(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8: return 8;
    case DType::I32: return 32;
    case DType::I64: return 64;
    default: return 0;
  }
}

std::optional<DType> promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool || b == DType::Bool) return std::nullopt;
  // Literals take the other side's type; a float literal turns an integer into f32.
  if (isLiteral(a) && isLiteral(b)) return DType::LitFloat;
  if (isLiteral(b)) std::swap(a, b);
  if (a == DType::LitInt) return b;
  if (a == DType::LitFloat) return isFloat(b) ? b : DType::F32;
  if (isFloat(a) || isFloat(b)) {
    if (!isFloat(a)) return b;
    if (!isFloat(b)) return a;
    int ra = floatRank(a), rb = floatRank(b);
    if (ra == rb) return DType::F32;  // f16 with bf16
    return ra > rb ? a : b;
  }
  // Two different integer types: the wider; u8 with i8 needs a signed type wider than both.
  int ba = intBits(a), bb = intBits(b);
  if (ba == bb) return DType::I32;
  return ba > bb ? a : b;
}

// ---- SizeExpr ------------------------------------------------------------------------------
static int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw SizeOverflow();
  return r;
}
static int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw SizeOverflow();
  return r;
}
// Truncating division and remainder; INT64_MIN / -1 is the one quotient that overflows (and
// traps on x86, as its remainder does).
static int64_t checkedDiv(int64_t a, int64_t b) { return b == -1 ? checkedMul(a, -1) : a / b; }
static int64_t checkedRem(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

void SizeExpr::addTerm(const Monomial& m, int64_t c) {
  if (c == 0) return;
  auto it = terms_.find(m);
  if (it == terms_.end()) {
    terms_.emplace(m, c);
  } else {
    it->second = checkedAdd(it->second, c);
    if (it->second == 0) terms_.erase(it);
  }
}

SizeExpr SizeExpr::constant(int64_t v) {
  SizeExpr e;
  e.addTerm({}, v);
  return e;
}

SizeExpr SizeExpr::symbol(const std::string& name) {
  SizeExpr e;
  auto a = std::make_shared<SizeAtom>();
  a->kind = SizeAtom::Symbol;
  a->name = name;
  e.atoms_[name] = a;
  e.addTerm({name}, 1);
  return e;
}

SizeExpr SizeExpr::operator+(const SizeExpr& o) const {
  SizeExpr r = *this;
  for (auto& [m, c] : o.terms_) r.addTerm(m, c);
  r.atoms_.insert(o.atoms_.begin(), o.atoms_.end());
  return r;
}

SizeExpr SizeExpr::operator-(const SizeExpr& o) const {
  SizeExpr r = *this;
  for (auto& [m, c] : o.terms_) r.addTerm(m, checkedMul(c, -1));
  r.atoms_.insert(o.atoms_.begin(), o.atoms_.end());
  return r;
}

SizeExpr SizeExpr::operator*(const SizeExpr& o) const {
  SizeExpr r;
  for (auto& [m1, c1] : terms_)
    for (auto& [m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      r.addTerm(m, checkedMul(c1, c2));
    }
  r.atoms_ = atoms_;
  r.atoms_.insert(o.atoms_.begin(), o.atoms_.end());
  return r;
}

uint64_t SizeExpr::coefficientBound() const {
  uint64_t b = 0;
  for (auto& [m, c] : terms_) {
    uint64_t mag = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (__builtin_add_overflow(b, mag, &b)) return UINT64_MAX;
  }
  return b;
}

int SizeExpr::sign() const {
  bool pos = false, neg = false;
  for (auto& [m, c] : terms_) (c > 0 ? pos : neg) = true;
  return pos && !neg ? 1 : neg && !pos ? -1 : 0;
}

bool SizeExpr::isConstant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }

std::optional<int64_t> SizeExpr::constantValue() const {
  if (terms_.empty()) return 0;
  if (isConstant()) return terms_.begin()->second;
  return std::nullopt;
}

SizeExpr SizeExpr::div(const SizeExpr& a, const SizeExpr& b) {
  if (auto cb = b.constantValue()) {
    if (*cb == 0) throw std::domain_error("division by zero in a size expression");
    bool exact = true;
    for (auto& [m, c] : a.terms_) exact = exact && checkedRem(c, *cb) == 0;
    if (exact) {
      SizeExpr r;
      for (auto& [m, c] : a.terms_) r.addTerm(m, checkedDiv(c, *cb));
      r.atoms_ = a.atoms_;
      return r;
    }
  } else if (b.terms_.size() == 1) {
    // b is c*m for one monomial m: exact when every term of a is a multiple of it.
    auto& [bm, bc] = *b.terms_.begin();
    SizeExpr r;
    bool exact = true;
    for (auto& [m, c] : a.terms_) {
      if (checkedRem(c, bc) != 0) {
        exact = false;
        break;
      }
      Monomial rest = m;
      for (auto& s : bm) {
        auto it = std::find(rest.begin(), rest.end(), s);
        if (it == rest.end()) {
          exact = false;
          break;
        }
        rest.erase(it);
      }
      if (!exact) break;
      r.addTerm(rest, checkedDiv(c, bc));
    }
    if (exact) {
      r.atoms_ = a.atoms_;
      return r;
    }
  }
  if (a == b && !a.terms_.empty()) return constant(1);
  return makeAtom(SizeAtom::Div, a, b);
}

SizeExpr SizeExpr::makeAtom(int kind, const SizeExpr& a, const SizeExpr& b) {
  auto atom = std::make_shared<SizeAtom>();
  atom->kind = static_cast<SizeAtom::Kind>(kind);
  atom->lhs = std::make_shared<SizeExpr>(a);
  atom->rhs = std::make_shared<SizeExpr>(b);
  SizeExpr e;
  std::string key = atom->key();
  e.atoms_[key] = atom;
  e.addTerm({key}, 1);
  return e;
}

SizeExpr SizeExpr::mod(const SizeExpr& a, const SizeExpr& b) {
  auto ca = a.constantValue(), cb = b.constantValue();
  if (cb && *cb == 0) throw std::domain_error("remainder by zero in a size expression");
  if (ca && cb) return constant(checkedRem(*ca, *cb));
  // Exact when the quotient needed no new division atom.
  SizeExpr q = div(a, b);
  SizeExpr probe = makeAtom(SizeAtom::Div, a, b);
  if (!q.atoms_.count(probe.atoms_.begin()->first)) return constant(0);
  return makeAtom(SizeAtom::Mod, a, b);
}

std::optional<std::pair<SizeExpr, SizeExpr>> SizeExpr::asRemainder() const {
  if (terms_.size() != 1) return std::nullopt;
  const auto& [m, c] = *terms_.begin();
  if (c != 1 || m.size() != 1) return std::nullopt;
  const SizeAtom& at = *atoms_.at(m[0]);
  if (at.kind != SizeAtom::Mod) return std::nullopt;
  return std::make_pair(*at.lhs, *at.rhs);
}

// Parenthesizes a sub-expression unless it is a single symbol or number.
static std::string wrap(const std::string& s) {
  return s.find(' ') == std::string::npos && s.find('*') == std::string::npos ? s : "(" + s + ")";
}

std::string SizeAtom::key() const {
  switch (kind) {
    case Symbol: return name;
    case Div: return wrap(lhs->str()) + " / " + wrap(rhs->str());
    case Mod: return wrap(lhs->str()) + " % " + wrap(rhs->str());
  }
  return "?";
}

std::optional<int64_t> SizeAtom::evaluate(const std::map<std::string, int64_t>& env) const {
  if (kind == Symbol) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  auto a = lhs->evaluate(env), b = rhs->evaluate(env);
  if (!a || !b || *b == 0) return std::nullopt;
  return kind == Div ? checkedDiv(*a, *b) : checkedRem(*a, *b);
}

std::optional<int64_t> SizeExpr::evaluate(const std::map<std::string, int64_t>& env) const {
  int64_t total = 0;
  for (auto& [m, c] : terms_) {
    int64_t v = c;
    for (auto& s : m) {
      auto it = atoms_.find(s);
      std::optional<int64_t> x = it != atoms_.end() ? it->second->evaluate(env) : std::nullopt;
      if (!x) return std::nullopt;
      v = checkedMul(v, *x);
    }
    total = checkedAdd(total, v);
  }
  return total;
}

std::vector<std::string> SizeExpr::symbols() const {
  std::vector<std::string> out;
  for (auto& [k, a] : atoms_) {
    if (a->kind == SizeAtom::Symbol) {
      out.push_back(k);
    } else {
      for (auto& s : a->lhs->symbols()) out.push_back(s);
      for (auto& s : a->rhs->symbols()) out.push_back(s);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string SizeExpr::str() const {
  if (terms_.empty()) return "0";
  std::ostringstream os;
  bool first = true;
  auto emit = [&](const Monomial& m, int64_t c) {
    bool neg = c < 0;
    uint64_t mag = neg ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (first)
      os << (neg ? "-" : "");
    else
      os << (neg ? " - " : " + ");
    first = false;
    bool any = false;
    if (mag != 1 || m.empty()) {
      os << mag;
      any = true;
    }
    for (auto& s : m) {
      if (any) os << "*";
      auto it = atoms_.find(s);
      os << (it != atoms_.end() ? it->second->key() : s);
      any = true;
    }
  };
  // Higher-degree terms first, the constant last.
  std::vector<std::pair<Monomial, int64_t>> ts(terms_.begin(), terms_.end());
  std::stable_sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
  for (auto& [m, c] : ts) emit(m, c);
  return os.str();
}

std::string SizeExpr::spell(const Spelling& sp) const {
  if (terms_.empty()) return sp.constant(0);
  std::vector<std::pair<Monomial, int64_t>> ts(terms_.begin(), terms_.end());
  std::stable_sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.first.size() > b.first.size(); });
  std::string sum;
  for (auto& [m, c] : ts) {
    std::string term = m.empty() || c != 1 ? sp.constant(c) : "";
    for (auto& s : m) {
      const SizeAtom& at = *atoms_.at(s);
      std::string f = at.kind == SizeAtom::Symbol ? sp.symbol(at.name)
                      : at.kind == SizeAtom::Div  ? sp.div(at.lhs->spell(sp), at.rhs->spell(sp))
                                                  : sp.mod(at.lhs->spell(sp), at.rhs->spell(sp));
      term = term.empty() ? f : sp.mul(term, f);
    }
    sum = sum.empty() ? term : sp.add(sum, term);
  }
  return sum;
}

std::string shapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

bool storageCountable(const Shape& s, DType t) {
  // Cheap first: most shapes' coefficients are small.
  uint64_t bound = static_cast<uint64_t>(dtypeBytes(t));
  bool small = true;
  for (auto& d : s) small = small && !__builtin_mul_overflow(bound, d.coefficientBound(), &bound) && bound <= INT64_MAX;
  if (small) return true;
  try {
    SizeExpr n = SizeExpr::constant(dtypeBytes(t));
    for (auto& d : s) n = n * d;
    return true;
  } catch (const SizeOverflow&) {
    return false;
  }
}

// ---- Layout and Type ---------------------------------------------------------------------------
std::string Layout::str() const {
  switch (kind) {
    case Replicated: return "replicated";
    case Local: return "local";
    case Sliced: return "sliced(" + std::to_string(dim) + ")";
  }
  return "?";
}

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "+";
    case ReduceOp::Prod: return "*";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::string Type::tensorTypeStr() const {
  std::string s = dtypeName(dtype);
  if (!shape.empty()) s += shapeStr(shape);
  return s;
}

std::string Type::describe() const {
  switch (kind) {
    case ValueKind::Error: return "an erroneous value";
    case ValueKind::Group: return "a process group";
    case ValueKind::Peer: return "a peer";
    case ValueKind::Op: return std::string("the operator ") + reduceOpName(op);
    case ValueKind::Module: return "a module";
    case ValueKind::Tensor: break;
  }
  return "a tensor (" + str() + ")";
}

std::string Type::str() const {
  switch (kind) {
    case ValueKind::Error: return "<error>";
    case ValueKind::Group: return "group";
    case ValueKind::Peer: return "peer";
    case ValueKind::Op: return std::string("operator ") + reduceOpName(op);
    case ValueKind::Module: return "module";
    case ValueKind::Tensor: break;
  }
  std::string s = tensorTypeStr() + " ";
  s += group ? layout.str() : "uniform";
  if (group && group->depth > 0) s += " @" + group->name;
  return s;
}

}  // namespace coconet::ast
