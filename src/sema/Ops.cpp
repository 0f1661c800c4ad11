// Typing of expressions: operators, casts and built-in operations, with the layout inference
// rules of docs/language.md ("Layouts").
#include <algorithm>
#include <set>

#include "sema/SemaImpl.h"
#include "support/Strings.h"

namespace coconet::sema {

namespace {

std::string layoutWord(const Type& t) { return t.group ? t.layout.str() : "uniform"; }

std::string describe(const Expr& e) {
  std::string s = exprText(e);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return quote(s);
}

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
      {BuiltinOp::Softmax, "softmax", 1, 1, {}},
      {BuiltinOp::Layernorm, "layernorm", 1, 3, {"eps"}},
      {BuiltinOp::Rmsnorm, "rmsnorm", 1, 2, {"eps"}},
      {BuiltinOp::Matmul, "matmul", 2, 2, {}},
      {BuiltinOp::Gemv, "gemv", 2, 2, {}},
      {BuiltinOp::Embedding, "embedding", 2, 2, {}},
      {BuiltinOp::AllReduce, "allreduce", 2, 2, {}},
      {BuiltinOp::ReduceScatter, "reduce_scatter", 2, 2, {}},
      {BuiltinOp::AllGather, "all_gather", 1, 1, {}},
      {BuiltinOp::Broadcast, "broadcast", 1, 2, {"root"}},
      {BuiltinOp::Reduce, "reduce", 2, 3, {"root"}},
      {BuiltinOp::AllToAll, "all_to_all", 1, 1, {}},
      {BuiltinOp::Send, "send", 2, 2, {}},
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

// ---- Built-in operations -----------------------------------------------------------------
Type Checker::checkBuiltin(Call& c, BuiltinOp op, Scope& scope) {
  uint32_t len = c.length;
  const std::string name = quote(c.callee);
  std::vector<Expr*> pos;
  std::unordered_map<std::string, Expr*> named;
  for (auto& a : c.args) (a.name.empty() ? pos.push_back(a.value.get()) : void(named[a.name] = a.value.get()));

  bool takesOp = op == BuiltinOp::AllReduce || op == BuiltinOp::ReduceScatter || op == BuiltinOp::Reduce;
  if (takesOp) {
    // The operator argument: '+', '*', max or min.
    Expr* o = pos[0];
    if (auto* n = o->as<NameRef>(); n && n->member.empty() && (n->name == "max" || n->name == "min") && !scope.find(n->name)) {
      o->type.kind = ValueKind::Op;
      o->type.op = n->name == "max" ? ReduceOp::Max : ReduceOp::Min;
    } else if (!o->as<OpToken>()) {
      error(o->loc, name + " takes a reduction operator first: '+', '*', 'max' or 'min'", o->length);
      return Type::error();
    } else {
      checkExpr(*o, scope);
    }
    c.reduceOp = o->type.op;
    pos.erase(pos.begin());
  }
  bool anyError = false;
  for (Expr* e : pos) {
    if (e->as<OpToken>()) {
      error(e->loc, name + " does not take an operator here", e->length);
      return Type::error();
    }
    anyError |= checkExpr(*e, scope).isError();
  }
  for (auto& [n, e] : named) anyError |= checkExpr(*e, scope).isError();
  if (anyError) return Type::error();
  // Every positional argument but send's peer is a tensor.
  for (size_t i = 0; i < pos.size(); ++i) {
    if (op == BuiltinOp::Send && i == 1) continue;
    if (!expectTensor(*pos[i], name)) return Type::error();
  }
  for (auto& [n, e] : named)
    if (!expectTensor(*e, name + " argument " + quote(n))) return Type::error();

  // Roots and eps are read by the stage at run time: a literal or a program parameter, written
  // in the call or passed in through the parameters of the functions that inline here. A root
  // is never negated; an eps may negate a literal, not a parameter (the stage reads the
  // parameter's run-time value itself).
  auto constOrParam = [&](Expr* e, const char* what) -> bool {
    const bool isRoot = std::string(what) == "the root";
    auto throughDefs = [](const Expr* x) {
      while (auto* n = x->as<NameRef>()) {
        if (!n->member.empty() || !n->target || !n->target->arg) break;
        x = n->target->arg;
      }
      return x;
    };
    const Expr* x = throughDefs(e);
    bool negated = false;
    while (auto* u = x->as<Unary>()) {
      if (u->op != UnaryOp::Neg) break;
      if (isRoot) {
        error(e->loc, "the root of " + name + " is a rank, so it cannot be negative", e->length);
        return false;
      }
      negated = !negated;
      x = throughDefs(u->operand.get());
    }
    if (x->as<IntLit>() || x->as<FloatLit>()) return true;
    if (auto* n = x->as<NameRef>(); n && n->member.empty() && n->target && n->target->param) {
      auto v = constantValue(*n);
      if (isRoot && v && *v < 0) {
        error(e->loc,
              "the root of " + name + " is a rank, so it cannot be negative (" + quote(n->name) + " is " +
                  std::to_string(static_cast<int64_t>(*v)) + ")",
              e->length);
        return false;
      }
      if (negated) {
        error(e->loc,
              std::string(what) + " of " + name + " cannot be the negation of parameter " + quote(n->name) + "; pass the parameter itself",
              e->length);
        return false;
      }
      return true;
    }
    error(e->loc, std::string(what) + " of " + name + " must be a literal or a program parameter", e->length);
    return false;
  };
  auto scalarArg = [&](Expr* e, const char* what, bool integer) -> bool {
    if (!e->type.isScalar()) {
      error(e->loc, std::string(what) + " of " + name + " must be a scalar, got " + e->type.tensorTypeStr(), e->length);
      return false;
    }
    if (integer ? !isInteger(e->type.dtype) : e->type.dtype == DType::Bool) {
      error(e->loc,
            std::string(what) + " of " + name + " must be " + (integer ? "an integer" : "a number") + ", got " + dtypeName(e->type.dtype),
            e->length);
      return false;
    }
    return true;
  };
  auto floatOperand = [&](Expr* e) -> std::optional<DType> {
    DType t = e->type.dtype;
    if (t == DType::Bool) {
      error(e->loc, name + " needs a numeric tensor, got bool", e->length);
      return std::nullopt;
    }
    if (isInteger(t)) return t == DType::LitInt ? DType::LitFloat : DType::F32;
    return t;
  };
  // A reduction's `dim = d` argument, resolved against the rank; -1 (whole tensor) if absent.
  auto dimArg = [&](const Type& x, int& dim) -> bool {
    dim = -1;
    auto it = named.find("dim");
    if (it == named.end()) return true;
    Expr* e = it->second;
    int64_t v = 0;
    bool lit = false;
    if (auto* il = e->as<IntLit>())
      v = il->value, lit = true;
    else if (auto* u = e->as<Unary>(); u && u->op == UnaryOp::Neg)
      if (auto* il2 = u->operand->as<IntLit>()) v = -il2->value, lit = true;
    if (!lit) {
      error(e->loc, "'dim' must be an integer literal", e->length);
      return false;
    }
    if (v < -x.rank() || v >= x.rank()) {
      error(e->loc, "dimension " + std::to_string(v) + " is out of range for a tensor of rank " + std::to_string(x.rank()), e->length);
      return false;
    }
    dim = static_cast<int>(v < 0 ? v + x.rank() : v);
    return true;
  };
  auto collectiveInput = [&](Expr* e) -> bool {
    if (!e->type.group) {
      error(e->loc, name + " needs a value that lives on the ranks; " + describe(*e) + " is uniform (the same constant everywhere)",
            e->length);
      return false;
    }
    return true;
  };

  switch (op) {
#define COCONET_UNARY_MATH(k, ...) case BuiltinOp::k:
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    {  // a float tensor in, its type out
      auto t = floatOperand(pos[0]);
      if (!t) return Type::error();
      Type r = pos[0]->type;
      r.dtype = *t;
      return r;
    }
    case BuiltinOp::Abs:
    case BuiltinOp::Relu: {
      if (pos[0]->type.dtype == DType::Bool) {
        error(pos[0]->loc, name + " needs a numeric tensor, got bool", pos[0]->length);
        return Type::error();
      }
      return pos[0]->type;
    }
    case BuiltinOp::Pow:
    case BuiltinOp::Min:
    case BuiltinOp::Max: {
      auto p = promote(pos[0]->type.dtype, pos[1]->type.dtype);
      if (!p || *p == DType::Bool) {
        error(c.loc, "invalid operands to " + name + ": " + dtypeName(pos[0]->type.dtype) + " and " + dtypeName(pos[1]->type.dtype), len);
        return Type::error();
      }
      return elementwise({pos[0], pos[1]}, *p, c.loc, len, name);
    }
    case BuiltinOp::Select: {
      if (pos[0]->type.dtype != DType::Bool) {
        error(pos[0]->loc, "the condition of 'select' must be bool, got " + std::string(dtypeName(pos[0]->type.dtype)), pos[0]->length);
        return Type::error();
      }
      auto p = promote(pos[1]->type.dtype, pos[2]->type.dtype);
      if (!p) {
        error(c.loc,
              "the branches of 'select' have no common type: " + std::string(dtypeName(pos[1]->type.dtype)) + " and " +
                  dtypeName(pos[2]->type.dtype),
              len);
        return Type::error();
      }
      return elementwise({pos[0], pos[1], pos[2]}, *p, c.loc, len, name);
    }
    case BuiltinOp::Dropout: {
      if (!isFloat(pos[0]->type.dtype) || isLiteral(pos[0]->type.dtype)) {
        error(pos[0]->loc,
              "'dropout' needs a floating-point tensor, got " +
                  (isLiteral(pos[0]->type.dtype) ? std::string("a literal") : std::string(dtypeName(pos[0]->type.dtype))),
              pos[0]->length);
        return Type::error();
      }
      if (!scalarArg(pos[1], "the probability", false)) return Type::error();
      if (pos[1]->type.group) {
        error(pos[1]->loc,
              "the probability of 'dropout' must be the same on every rank; " + describe(*pos[1]) + " is " + layoutWord(pos[1]->type),
              pos[1]->length);
        return Type::error();
      }
      // A run-time parameter is checked by the generated program (coconet_rt::checkProbability).
      double p = constantValue(*pos[1]).value_or(0.5);
      if (p < 0 || p >= 1) {
        error(pos[1]->loc, "dropout probability " + std::to_string(p).substr(0, 8) + " is outside [0, 1)", pos[1]->length);
        return Type::error();
      }
      if (auto it = named.find("seed"); it != named.end()) {
        Expr* seed = it->second;
        if (!scalarArg(seed, "the seed", true)) return Type::error();
        // The mask must be the same on every rank that holds the same elements.
        if (seed->type.group && pos[0]->type.group && seed->type.group != pos[0]->type.group) {
          error(seed->loc,
                "the seed of 'dropout' lives in group " + quote(seed->type.group->name) + ", the tensor in " +
                    quote(pos[0]->type.group->name),
                seed->length);
          return Type::error();
        }
        if (seed->type.group && seed->type.layout.kind != Layout::Replicated) {
          error(seed->loc,
                "the seed of 'dropout' must be the same on every rank of the group; " + describe(*seed) + " is " + layoutWord(seed->type),
                seed->length);
          return Type::error();
        }
      }
      return pos[0]->type;
    }
    case BuiltinOp::Sum:
    case BuiltinOp::Mean:
    case BuiltinOp::Norm:
    case BuiltinOp::ReduceMax:
    case BuiltinOp::ReduceMin: {
      Type x = pos[0]->type;
      int dim;
      if (!dimArg(x, dim)) return Type::error();
      c.dim = dim;
      c.keepdim = false;
      if (auto it = named.find("keepdim"); it != named.end()) {
        auto* b = it->second->as<BoolLit>();
        if (!b) {
          error(it->second->loc, "'keepdim' must be true or false", it->second->length);
          return Type::error();
        }
        c.keepdim = b->value;
      }
      if (x.dtype == DType::Bool) {
        error(pos[0]->loc, name + " needs a numeric tensor, got bool", pos[0]->length);
        return Type::error();
      }
      DType dt = x.dtype;
      if ((op == BuiltinOp::Mean || op == BuiltinOp::Norm) && isInteger(dt)) dt = DType::F32;
      // The reduced dimension is dropped, or kept with length 1 (`keepdim = true`: the result
      // then broadcasts against x).
      Shape shape;
      if (c.keepdim) {
        shape = x.shape;
        for (int k = 0; k < x.rank(); ++k)
          if (dim < 0 || k == dim) shape[k] = SizeExpr::constant(1);
      } else if (dim >= 0) {
        shape = x.shape;
        shape.erase(shape.begin() + dim);
      }
      Layout l = x.layout;
      if (x.group && l.kind == Layout::Sliced) {
        if (dim < 0 || dim == l.dim) {
          if (op == BuiltinOp::Norm) {
            error(c.loc,
                  "'norm' over the sliced dimension " + std::to_string(l.dim) + " of " + describe(*pos[0]) +
                      " has no per-rank meaning; write "
                      "sqrt(allreduce(+, sum(x * x))) for the norm of the whole tensor",
                  len);
            return Type::error();
          }
          l = Layout::local();  // partial results, one per rank
        } else if (dim < l.dim && !c.keepdim) {
          l.dim -= 1;
        }
      }
      return Type::tensor(dt, shape, l, x.group);
    }
    case BuiltinOp::Softmax:
    case BuiltinOp::Layernorm:
    case BuiltinOp::Rmsnorm: {
      Type x = pos[0]->type;
      auto dt = floatOperand(pos[0]);
      if (!dt) return Type::error();
      if (x.rank() == 0) {
        error(pos[0]->loc, name + " needs a tensor of rank 1 or more, got a scalar", pos[0]->length);
        return Type::error();
      }
      if (x.group && x.layout.kind == Layout::Sliced && x.layout.dim == x.rank() - 1) {
        error(c.loc, name + " normalizes the last dimension, which is sliced in " + describe(*pos[0]) + "; gather it first", len);
        return Type::error();
      }
      if (op == BuiltinOp::Layernorm || op == BuiltinOp::Rmsnorm) {
        if (op == BuiltinOp::Layernorm && pos.size() == 2) {
          error(c.loc, "'layernorm' takes x, or x with gamma and beta; got 2 arguments", len);
          return Type::error();
        }
        for (size_t i = 1; i < pos.size(); ++i) {
          const Type& g = pos[i]->type;
          if (g.rank() != 1 || g.shape[0] != x.shape.back()) {
            error(pos[i]->loc,
                  std::string(i == 1 ? "gamma" : "beta") + " of " + name + " must have shape [" + x.shape.back().str() + "], got " +
                      shapeStr(g.shape),
                  pos[i]->length);
            return Type::error();
          }
          if (g.group && g.layout.kind != Layout::Replicated) {
            error(pos[i]->loc, std::string(i == 1 ? "gamma" : "beta") + " of " + name + " must be replicated, got " + g.layout.str(),
                  pos[i]->length);
            return Type::error();
          }
          const GroupInfo* gg;
          if (!sameGroup(x, g, gg, c.loc, len, name)) return Type::error();
        }
        if (auto it = named.find("eps"); it != named.end()) {
          if (!scalarArg(it->second, "eps", false) || !constOrParam(it->second, "eps")) return Type::error();
          if (auto v = constantValue(*it->second); v && *v <= 0) {
            error(it->second->loc, "eps of " + name + " must be positive", it->second->length);
            return Type::error();
          }
        }
      }
      x.dtype = *dt;
      return x;
    }
    case BuiltinOp::Matmul:
    case BuiltinOp::Gemv: {
      const Type& a = pos[0]->type;
      const Type& b = pos[1]->type;
      bool gemv = op == BuiltinOp::Gemv;
      if (gemv ? a.rank() != 2 : a.rank() < 2) {
        error(pos[0]->loc,
              name + " needs a matrix" + (gemv ? "" : " or a batch of matrices") + " on the left; " + describe(*pos[0]) + " has rank " +
                  std::to_string(a.rank()),
              pos[0]->length);
        return Type::error();
      }
      if (gemv ? b.rank() != 1 : b.rank() < 2) {
        error(pos[1]->loc,
              gemv ? "'gemv' needs a vector on the right; " + describe(*pos[1]) + " has rank " + std::to_string(b.rank())
                   : "'matmul' needs a matrix on the right; " + describe(*pos[1]) + " has rank " + std::to_string(b.rank()) +
                         (b.rank() == 1 ? " (use gemv)" : ""),
              pos[1]->length);
        return Type::error();
      }
      auto dt = promote(a.dtype, b.dtype);
      if (!dt || !isFloat(*dt)) {
        error(c.loc, name + " needs floating-point operands, got " + dtypeName(a.dtype) + " and " + dtypeName(b.dtype), len);
        return Type::error();
      }
      const SizeExpr& ka = a.shape.back();
      const SizeExpr& kb = gemv ? b.shape[0] : b.shape[b.rank() - 2];
      if (ka != kb) {
        error(c.loc, "inner dimensions of " + name + " differ: " + quote(ka.str()) + " vs " + quote(kb.str()), len);
        return Type::error();
      }
      Shape shape;
      int rank;
      if (gemv) {
        shape = {a.shape[0]};
      } else {
        Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
        auto batch = broadcast(ba, bb, c.loc, len, name + " batch dimensions");
        if (!batch) return Type::error();
        shape = *batch;
        shape.push_back(a.shape[a.rank() - 2]);
        shape.push_back(b.shape.back());
      }
      rank = static_cast<int>(shape.size());
      const GroupInfo* g;
      if (!sameGroup(a, b, g, c.loc, len, name)) return Type::error();
      // Layout rules: contracted dimension sliced on both sides -> partial sums (local); the
      // right operand's columns sliced -> result columns sliced; a row/batch dimension of the
      // left sliced -> the same dimension of the result sliced.
      Layout la = a.group ? a.layout : Layout::replicated();
      Layout lb = b.group ? b.layout : Layout::replicated();
      int kDimA = a.rank() - 1, kDimB = gemv ? 0 : b.rank() - 2;
      auto L = Layout::Local, S = Layout::Sliced;
      Layout out;
      bool ok = true;
      if (la.kind == S && lb.kind == S) {
        if (la.dim == kDimA && lb.dim == kDimB)
          out = Layout::local();
        else if (!gemv && la.dim < a.rank() - 2 && lb.dim == la.dim - a.rank() + b.rank() && b.rank() > 2)
          out = Layout::sliced(la.dim + rank - a.rank());
        else
          ok = false;
      } else if (la.kind == S) {
        if (lb.kind == L || la.dim == kDimA)
          ok = false;
        else
          out = Layout::sliced(gemv ? 0 : la.dim + rank - a.rank());
      } else if (lb.kind == S) {
        if (la.kind == L || lb.dim == kDimB)
          ok = false;
        else if (!gemv && lb.dim == b.rank() - 1)
          out = Layout::sliced(rank - 1);
        else if (!gemv && lb.dim < b.rank() - 2)
          out = Layout::sliced(lb.dim + rank - b.rank());
        else
          ok = false;
      } else if (la.kind == L || lb.kind == L) {
        out = Layout::local();
      } else {
        out = Layout::replicated();
      }
      if (!ok) {
        std::string why;
        if (la.kind == S && la.dim == kDimA && lb.kind != S)
          why = ": the contracted dimension is sliced on the left only";
        else if (lb.kind == S && lb.dim == kDimB && la.kind != S)
          why = ": the contracted dimension is sliced on the right only";
        error(c.loc,
              "layouts of " + name + " do not meet: " + describe(*pos[0]) + " is " + layoutWord(a) + " and " + describe(*pos[1]) + " is " +
                  layoutWord(b) + why,
              len);
        return Type::error();
      }
      return Type::tensor(*dt, shape, g ? out : Layout::replicated(), g);
    }
    case BuiltinOp::Embedding: {
      const Type& tab = pos[0]->type;
      const Type& idx = pos[1]->type;
      if (tab.rank() != 2 || !isFloat(tab.dtype)) {
        error(pos[0]->loc, "the table of 'embedding' must be a floating-point matrix, got " + tab.tensorTypeStr(), pos[0]->length);
        return Type::error();
      }
      if (!isInteger(idx.dtype)) {
        error(pos[1]->loc, "the indices of 'embedding' must be integers, got " + std::string(dtypeName(idx.dtype)), pos[1]->length);
        return Type::error();
      }
      const GroupInfo* g;
      if (!sameGroup(tab, idx, g, c.loc, len, name)) return Type::error();
      Shape shape = idx.shape;
      shape.push_back(tab.shape[1]);
      Layout lt = tab.group ? tab.layout : Layout::replicated();
      Layout li = idx.group ? idx.layout : Layout::replicated();
      Layout out;
      bool ok = true;
      if (lt.kind == Layout::Sliced) {
        if (li.kind != Layout::Replicated)
          ok = false;
        else if (lt.dim == 0)
          out = Layout::local();  // rows outside the shard are zero: partial sums
        else
          out = Layout::sliced(static_cast<int>(shape.size()) - 1);
      } else if (li.kind == Layout::Sliced) {
        if (lt.kind == Layout::Local)
          ok = false;
        else
          out = li;
      } else if (lt.kind == Layout::Local || li.kind == Layout::Local) {
        out = Layout::local();
      } else {
        out = Layout::replicated();
      }
      if (!ok) {
        error(c.loc,
              "layouts of 'embedding' do not meet: the table " + describe(*pos[0]) + " is " + layoutWord(tab) + " and the indices " +
                  describe(*pos[1]) + " are " + layoutWord(idx),
              len);
        return Type::error();
      }
      return Type::tensor(tab.dtype, shape, out, g);
    }
    case BuiltinOp::AllReduce:
    case BuiltinOp::ReduceScatter:
    case BuiltinOp::Reduce: {
      Expr* x = pos[0];
      if (!collectiveInput(x)) return Type::error();
      const Type& t = x->type;
      if (t.layout.kind == Layout::Sliced) {
        error(x->loc,
              name + " needs a local or replicated tensor; " + describe(*x) + " is " + t.layout.str() +
                  (op == BuiltinOp::AllReduce ? "; use all_gather to assemble it" : ""),
              x->length);
        return Type::error();
      }
      if (t.dtype == DType::Bool) {
        error(x->loc, name + " cannot reduce bool values", x->length);
        return Type::error();
      }
      if (op == BuiltinOp::AllReduce) return Type::tensor(t.dtype, t.shape, Layout::replicated(), t.group);
      if (op == BuiltinOp::Reduce) {
        if (pos.size() > 1 && named.count("root")) {
          error(named["root"]->loc, "the root of 'reduce' is given twice", named["root"]->length);
          return Type::error();
        }
        Expr* root = pos.size() > 1 ? pos[1] : named.count("root") ? named["root"] : nullptr;
        if (!root) {
          error(c.loc, "'reduce' needs a root rank: reduce(op, x, root)", len);
          return Type::error();
        }
        if (!scalarArg(root, "the root", true) || !constOrParam(root, "the root")) return Type::error();
        return Type::tensor(t.dtype, t.shape, Layout::local(), t.group);
      }
      if (t.rank() == 0) {
        error(x->loc, "'reduce_scatter' cannot scatter a scalar", x->length);
        return Type::error();
      }
      requireDivisible(t.shape[0], t.group, "'reduce_scatter' splits dimension 0 over " + quote(t.group->name), c.loc);
      return Type::tensor(t.dtype, t.shape, Layout::sliced(0), t.group);
    }
    case BuiltinOp::AllGather: {
      Expr* x = pos[0];
      if (!collectiveInput(x)) return Type::error();
      if (x->type.layout.kind != Layout::Sliced) {
        error(x->loc, "'all_gather' needs a sliced tensor; " + describe(*x) + " is " + x->type.layout.str(), x->length);
        return Type::error();
      }
      return Type::tensor(x->type.dtype, x->type.shape, Layout::replicated(), x->type.group);
    }
    case BuiltinOp::Broadcast: {
      Expr* x = pos[0];
      if (!collectiveInput(x)) return Type::error();
      if (pos.size() > 1 && named.count("root")) {
        error(named["root"]->loc, "the root of 'broadcast' is given twice", named["root"]->length);
        return Type::error();
      }
      Expr* root = pos.size() > 1 ? pos[1] : named.count("root") ? named["root"] : nullptr;
      if (!root) {
        error(c.loc, "'broadcast' needs a root rank: broadcast(x, root)", len);
        return Type::error();
      }
      if (!scalarArg(root, "the root", true) || !constOrParam(root, "the root")) return Type::error();
      if (x->type.layout.kind == Layout::Sliced) {
        error(x->loc, "'broadcast' needs a local or replicated tensor; " + describe(*x) + " is " + x->type.layout.str(), x->length);
        return Type::error();
      }
      return Type::tensor(x->type.dtype, x->type.shape, Layout::replicated(), x->type.group);
    }
    case BuiltinOp::AllToAll: {
      Expr* x = pos[0];
      if (!collectiveInput(x)) return Type::error();
      if (x->type.layout.kind == Layout::Sliced || x->type.rank() == 0) {
        error(x->loc, "'all_to_all' needs a local or replicated tensor of rank 1 or more; " + describe(*x) + " is " + x->type.str(),
              x->length);
        return Type::error();
      }
      requireDivisible(x->type.shape[0], x->type.group, "'all_to_all' splits dimension 0 over " + quote(x->type.group->name), c.loc);
      return Type::tensor(x->type.dtype, x->type.shape, Layout::local(), x->type.group);
    }
    case BuiltinOp::Send: {
      Expr* x = pos[0];
      Expr* peer = pos[1];
      if (!collectiveInput(x)) return Type::error();
      if (peer->type.kind != ValueKind::Peer) {
        error(peer->loc,
              "'send' needs a peer: 'next', 'prev', or 'GROUP.next' / 'GROUP.prev'; " + describe(*peer) + " is " + peer->type.describe(),
              peer->length);
        return Type::error();
      }
      Type t = x->type;
      if (peer->type.peer == PeerKind::NextRank || peer->type.peer == PeerKind::PrevRank) {
        // Rank i receives rank i-1's value (i+1 for prev): a slice is no longer at its place.
        if (t.layout.kind == Layout::Sliced) t.layout = Layout::local();
        return t;
      }
      if (peer->type.group != t.group) {
        error(peer->loc,
              describe(*x) + " lives in group " + quote(t.group->name) + ", but the peer is an instance of group " +
                  quote(peer->type.group->name),
              peer->length);
        return Type::error();
      }
      return t;
    }
    case BuiltinOp::Cast:
    case BuiltinOp::None: break;
  }
  internalError("checkBuiltin: unhandled operation " + std::string(builtinOpName(op)));
}

}  // namespace coconet::sema
