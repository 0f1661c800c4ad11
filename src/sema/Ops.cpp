// Typing of expressions: operators, casts, calls and element-wise operands, with the layout
// inference rules of docs/language.md ("Layouts"). Built-in operations are typed in Builtins.cpp.
#include <algorithm>
#include <set>

#include "sema/SemaImpl.h"
#include "support/Strings.h"

namespace coconet::sema {

std::string layoutWord(const Type& t) { return t.group ? t.layout.str() : "uniform"; }

std::string describe(const Expr& e) {
  std::string s = exprText(e);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return quote(s);
}

namespace {

// Static signature of a built-in: positional argument counts and accepted named arguments.
struct Signature {
  BuiltinOp op;
  const char* name;
  int minPos, maxPos;
  std::vector<std::string> named;
};

const std::vector<Signature>& signatures() {
  static const std::vector<Signature> sigs = {
#define COCONET_UNARY_MATH(k, s, ...) {BuiltinOp::k, s, 1, 1, {}},
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
      {BuiltinOp::Abs, "abs", 1, 1, {}},
      {BuiltinOp::Relu, "relu", 1, 1, {}},
      {BuiltinOp::Pow, "pow", 2, 2, {}},
      {BuiltinOp::Max, "max", 1, 2, {"dim", "keepdim"}},
      {BuiltinOp::Min, "min", 1, 2, {"dim", "keepdim"}},
      {BuiltinOp::Select, "select", 3, 3, {}},
      {BuiltinOp::Dropout, "dropout", 2, 2, {"seed"}},
      {BuiltinOp::Sum, "sum", 1, 1, {"dim", "keepdim"}},
      {BuiltinOp::Mean, "mean", 1, 1, {"dim", "keepdim"}},
      {BuiltinOp::Norm, "norm", 1, 1, {"dim", "keepdim"}},
      {BuiltinOp::Softmax, "softmax", 1, 1, {"dim"}},
      {BuiltinOp::Layernorm, "layernorm", 1, 3, {"eps", "dim"}},
      {BuiltinOp::Rmsnorm, "rmsnorm", 1, 2, {"eps", "dim"}},
      {BuiltinOp::Matmul, "matmul", 2, 2, {}},
      {BuiltinOp::Gemv, "gemv", 2, 2, {}},
      {BuiltinOp::Embedding, "embedding", 2, 2, {}},
      {BuiltinOp::AllReduce, "allreduce", 2, 2, {}},
      {BuiltinOp::ReduceScatter, "reduce_scatter", 2, 2, {"dim"}},
      {BuiltinOp::AllGather, "all_gather", 1, 1, {}},
      {BuiltinOp::Broadcast, "broadcast", 1, 2, {"root"}},
      {BuiltinOp::Reduce, "reduce", 2, 3, {"root"}},
      {BuiltinOp::AllToAll, "all_to_all", 1, 1, {"dim"}},
      {BuiltinOp::Send, "send", 2, 2, {}},
      {BuiltinOp::Transpose, "transpose", 1, 1, {"dim0", "dim1"}},
      {BuiltinOp::Unsqueeze, "unsqueeze", 1, 1, {"dim"}},
      {BuiltinOp::Squeeze, "squeeze", 1, 1, {"dim"}},
      {BuiltinOp::Permute, "permute", 2, 9, {}},
      {BuiltinOp::Reshape, "reshape", 2, 9, {}},
      {BuiltinOp::View, "view", 2, 9, {}},
      {BuiltinOp::Concat, "concat", 2, 16, {"dim"}},
      {BuiltinOp::Narrow, "narrow", 1, 1, {"dim", "start", "length"}},
  };
  return sigs;
}

const Signature* findSignature(const std::string& name) {
  for (auto& s : signatures())
    if (name == s.name) return &s;
  return nullptr;
}

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

bool Checker::expectTensor(const Expr& e, const std::string& what) {
  if (e.type.isError()) return false;
  if (e.type.isTensor()) return true;
  error(e.loc, what + " needs a tensor; " + describe(e) + " is " + e.type.describe(), e.length);
  return false;
}

std::optional<Shape> Checker::broadcast(const Shape& a, const Shape& b, SourceLoc loc, uint32_t len, const std::string& what) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    const SizeExpr* x = i + a.size() >= n ? &a[i + a.size() - n] : nullptr;
    const SizeExpr* y = i + b.size() >= n ? &b[i + b.size() - n] : nullptr;
    if (!x)
      r[i] = *y;
    else if (!y)
      r[i] = *x;
    else if (*x == *y)
      r[i] = *x;
    else if (x->constantValue() == 1)
      r[i] = *y;
    else if (y->constantValue() == 1)
      r[i] = *x;
    else {
      error(loc,
            "shapes " + shapeStr(a) + " and " + shapeStr(b) + " of " + what + " do not broadcast: dimension " + std::to_string(i) + " is " +
                quote(x->str()) + " on one side and " + quote(y->str()) + " on the other",
            len);
      return std::nullopt;
    }
  }
  return r;
}

bool Checker::sameGroup(const Type& a, const Type& b, const GroupInfo*& out, SourceLoc loc, uint32_t len, const std::string& what) {
  if (a.group && b.group && a.group != b.group) {
    error(loc, "operands of " + what + " live in different process groups " + quote(a.group->name) + " and " + quote(b.group->name), len);
    return false;
  }
  out = a.group ? a.group : b.group;
  return true;
}

Type Checker::elementwise(const std::vector<const Expr*>& ops, DType result, SourceLoc loc, uint32_t len, const std::string& what) {
  Shape shape;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i == 0) {
      shape = ops[0]->type.shape;
      continue;
    }
    auto s = broadcast(shape, ops[i]->type.shape, loc, len, what);
    if (!s) {
      // A reduction over one dimension that drops it, where keeping it (length 1) would broadcast.
      auto fits = [](const Shape& a, const Shape& b) {
        for (size_t k = 1; k <= std::min(a.size(), b.size()); ++k) {
          const SizeExpr &x = a[a.size() - k], &y = b[b.size() - k];
          if (x != y && x.constantValue() != 1 && y.constantValue() != 1) return false;
        }
        return true;
      };
      for (size_t j = 0; j <= i; ++j) {
        auto* c = ops[j]->as<Call>();  // (only reductions set dim)
        if (!c || c->dim < 0 || c->keepdim) continue;
        Shape kept = c->type.shape;
        kept.insert(kept.begin() + c->dim, SizeExpr::constant(1));
        bool all = true;
        for (size_t k = 0; k <= i; ++k)
          if (k != j) all = all && fits(kept, ops[k]->type.shape);
        if (all)
          note(c->loc,
               "'" + c->callee + "' drops dimension " + std::to_string(c->dim) +
                   "; with keepdim = true it stays, with length 1, and broadcasts",
               c->length);
      }
      return Type::error();
    }
    shape = *s;
  }
  int rank = static_cast<int>(shape.size());
  // Layouts: replicated and uniform meet anything; local meets replicated and local; sliced
  // meets replicated and the same slicing (after broadcasting aligns the dimensions).
  const GroupInfo* group = nullptr;
  const Expr* sliced = nullptr;
  const Expr* local = nullptr;
  int slicedDim = -1;
  for (const Expr* e : ops) {
    const Type& t = e->type;
    const GroupInfo* g = nullptr;
    Type acc = Type::tensor(DType::F32, {}, Layout::replicated(), group);
    if (!sameGroup(acc, t, g, loc, len, what)) return Type::error();
    group = g;
    if (!t.group) continue;
    if (t.layout.kind == Layout::Local) local = local ? local : e;
    if (t.layout.kind == Layout::Sliced) {
      int d = t.layout.dim + (rank - t.rank());
      if (sliced && d != slicedDim) {
        error(loc,
              "layouts of " + what + " do not meet: " + describe(*sliced) + " is sliced(" + std::to_string(slicedDim) + ") and " +
                  describe(*e) + " is sliced(" + std::to_string(d) + ") in the broadcast shape",
              len);
        return Type::error();
      }
      if (!sliced) sliced = e, slicedDim = d;
    }
  }
  if (sliced && local) {
    error(loc,
          "layouts of " + what + " do not meet: " + describe(*sliced) + " is " + layoutWord(sliced->type) + " and " + describe(*local) +
              " is local",
          len);
    return Type::error();
  }
  Layout l = sliced ? Layout::sliced(slicedDim) : local ? Layout::local() : Layout::replicated();
  return Type::tensor(result, shape, l, group);
}

// ---- Expressions ---------------------------------------------------------------------------
Type Checker::checkExpr(Expr& e, Scope& scope) {
  Type t;
  switch (e.kind) {
    case ExprKind::IntLit: t = Type::tensor(DType::LitInt, {}, Layout::replicated(), nullptr); break;
    case ExprKind::FloatLit: t = Type::tensor(DType::LitFloat, {}, Layout::replicated(), nullptr); break;
    case ExprKind::BoolLit: t = Type::tensor(DType::Bool, {}, Layout::replicated(), nullptr); break;
    case ExprKind::NameRef: t = checkName(static_cast<NameRef&>(e), scope); break;
    case ExprKind::OpToken:
      t.kind = ValueKind::Op;
      t.op = static_cast<OpToken&>(e).op;
      break;
    case ExprKind::Unary: {
      auto& u = static_cast<Unary&>(e);
      Type o = checkExpr(*u.operand, scope);
      if (!expectTensor(*u.operand, std::string("'") + unaryOpSpelling(u.op) + "'")) break;
      if (u.op == UnaryOp::Not && o.dtype != DType::Bool) {
        error(u.loc, "'!' needs a bool operand, got " + std::string(dtypeName(o.dtype)));
        break;
      }
      if (u.op == UnaryOp::Neg && (o.dtype == DType::Bool || o.dtype == DType::U8)) {
        error(u.loc, "cannot negate a " + std::string(dtypeName(o.dtype)) + " value");
        break;
      }
      t = o;
      break;
    }
    case ExprKind::Binary: {
      auto& b = static_cast<Binary&>(e);
      checkExpr(*b.lhs, scope);
      checkExpr(*b.rhs, scope);
      std::string what = std::string("'") + binaryOpSpelling(b.op) + "'";
      if (!expectTensor(*b.lhs, what) || !expectTensor(*b.rhs, what)) break;
      DType l = b.lhs->type.dtype, r = b.rhs->type.dtype;
      DType result;
      if (isLogical(b.op)) {
        if (l != DType::Bool || r != DType::Bool) {
          error(b.loc, what + " needs bool operands, got " + dtypeName(l) + " and " + dtypeName(r), b.length);
          break;
        }
        result = DType::Bool;
      } else {
        auto p = promote(l, r);
        bool boolArith = (l == DType::Bool || r == DType::Bool) && !(l == r && (b.op == BinaryOp::Eq || b.op == BinaryOp::Ne));
        if (!p || boolArith) {
          error(b.loc, "invalid operands to " + what + ": " + dtypeName(l) + " and " + dtypeName(r), b.length);
          break;
        }
        result = isComparison(b.op) ? DType::Bool : *p;
      }
      t = elementwise({b.lhs.get(), b.rhs.get()}, result, b.loc, b.length, what);
      break;
    }
    case ExprKind::Call: t = checkCall(static_cast<Call&>(e), scope); break;
  }
  if (t.isTensor() && !t.shape.empty() && !storageCountable(t.shape, t.dtype)) {
    error(e.loc, "this value (" + t.tensorTypeStr() + ") overflows 64 bits: a tensor takes at most 2^63 - 1 bytes", e.length);
    t = Type::error();
  }
  e.type = t;
  return t;
}

Type Checker::checkCall(Call& c, Scope& scope) {
  uint32_t len = c.length;
  if (!c.qualifier.empty()) {
    auto it = ctx_->imports.find(c.qualifier);
    if (Symbol* q = scope.find(c.qualifier); q && it == ctx_->imports.end()) {
      error(c.loc, quote(c.spelling()) + " is not a function: " + quote(c.qualifier) + " is " + q->type.describe(), len);
      return Type::error();
    }
    if (it == ctx_->imports.end()) {
      error(c.loc, "unknown module " + quote(c.qualifier) + "; did you forget 'import " + c.qualifier + ";'?",
            static_cast<uint32_t>(c.qualifier.size()));
      return Type::error();
    }
    const ModuleContext& mod = *it->second;
    auto d = mod.defs.find(c.callee);
    if (d == mod.defs.end()) {
      std::vector<std::string> names;
      for (auto& [n, def] : mod.defs) names.push_back(n);
      std::string guess = closestMatch(c.callee, names);
      error(c.loc,
            "module " + quote(c.qualifier) + " has no function " + quote(c.callee) +
                (guess.empty() ? "" : "; did you mean " + quote(guess) + "?"),
            len);
      return Type::error();
    }
    return singleResult(c, instantiate(c, *d->second, mod, scope));
  }
  if (auto dt = dtypeFromName(c.callee)) {
    c.op = BuiltinOp::Cast;
    c.castTo = *dt;
    if (c.args.size() == 1 && !c.args[0].name.empty()) {
      error(c.args[0].nameLoc, "conversion " + quote(c.callee) + " takes one positional argument",
            static_cast<uint32_t>(c.args[0].name.size()));
      return Type::error();
    }
    if (c.args.size() != 1) {
      error(c.loc, "conversion " + quote(c.callee) + " takes 1 argument, got " + std::to_string(c.args.size()), len);
      return Type::error();
    }
    Type t = checkExpr(*c.args[0].value, scope);
    if (!expectTensor(*c.args[0].value, "conversion " + quote(c.callee))) return Type::error();
    t.dtype = *dt;
    return t;
  }
  if (auto d = ctx_->defs.find(c.callee); d != ctx_->defs.end()) return singleResult(c, instantiate(c, *d->second, *ctx_, scope));

  if (c.callee == "split") {
    error(c.loc, "'split' makes process groups: write 'group NAME = split(parent, count);'", len);
    return Type::error();
  }
  const Signature* sig = findSignature(c.callee);
  if (!sig) {
    std::vector<std::string> names;
    for (auto& s : signatures()) names.push_back(s.name);
    for (auto& [n, def] : ctx_->defs) names.push_back(n);
    names.push_back("split");
    std::string guess = closestMatch(c.callee, names);
    error(c.loc, "unknown operation " + quote(c.callee) + (guess.empty() ? "" : "; did you mean " + quote(guess) + "?"), len);
    return Type::error();
  }
  // Arguments: positional first, then named ones from the signature, each at most once.
  int positional = 0;
  std::set<std::string> seen;
  bool ok = true;
  for (auto& a : c.args) {
    if (a.name.empty()) {
      if (!seen.empty()) {
        error(a.value->loc, "positional argument after a named one", a.value->length);
        ok = false;
      }
      ++positional;
      continue;
    }
    if (std::find(sig->named.begin(), sig->named.end(), a.name) == sig->named.end()) {
      std::string takes;
      for (auto& n : sig->named) takes += (takes.empty() ? "" : ", ") + quote(n);
      error(a.nameLoc, quote(c.callee) + " has no argument named " + quote(a.name) + (takes.empty() ? "" : "; it takes " + takes),
            static_cast<uint32_t>(a.name.size()));
      ok = false;
    } else if (!seen.insert(a.name).second) {
      error(a.nameLoc, "argument " + quote(a.name) + " is given twice", static_cast<uint32_t>(a.name.size()));
      ok = false;
    }
  }
  if (ok && (positional < sig->minPos || positional > sig->maxPos)) {
    std::string want = sig->minPos == sig->maxPos ? plural(sig->minPos, "argument")
                                                  : std::to_string(sig->minPos) + " to " + plural(sig->maxPos, "argument");
    error(c.loc, quote(c.callee) + " takes " + want + ", got " + std::to_string(positional), len);
    ok = false;
  }
  if (!ok) return Type::error();
  BuiltinOp op = sig->op;
  if (op == BuiltinOp::Max && positional == 1) op = BuiltinOp::ReduceMax;
  if (op == BuiltinOp::Min && positional == 1) op = BuiltinOp::ReduceMin;
  for (std::string arg : {"dim", "keepdim"})
    if ((op == BuiltinOp::Max || op == BuiltinOp::Min) && seen.count(arg)) {
      error(c.loc,
            "'" + arg + "' is for the reduction '" + c.callee + "(x, " + arg + (arg == "dim" ? " = d" : " = true") +
                ")'; the two-argument '" + c.callee + "' is element-wise",
            len);
      return Type::error();
    }
  c.op = op;
  return checkBuiltin(c, op, scope);
}

// A call of a def that returns several values is only a multiple assignment's value.
Type Checker::singleResult(const Call& c, Type t) {
  if (t.isError() || c.results.size() <= 1 || &c == multiValueCall_) return t;
  error(c.loc,
        quote(c.spelling()) + " returns " + std::to_string(c.results.size()) +
            " values; assign them to as many names: a, b = " + c.spelling() + "(...)",
        c.length);
  return Type::error();
}

}  // namespace coconet::sema
