// Typing of the built-in operations: math functions, reductions, normalizations, matmul,
// embedding and collectives, with the layout rules of docs/language.md ("Layouts"); shape
// operations are in ShapeOps.cpp.
#include "sema/BuiltinCall.h"
#include "support/Strings.h"

namespace coconet::sema {

namespace builtin {

bool BuiltinCall::checkArguments(Scope& scope) {
  bool takesOp = op == BuiltinOp::AllReduce || op == BuiltinOp::ReduceScatter || op == BuiltinOp::Reduce;
  if (takesOp) {
    // The operator argument: '+', '*', max or min.
    Expr* o = pos[0];
    if (auto* n = o->as<NameRef>(); n && n->member.empty() && (n->name == "max" || n->name == "min") && !scope.find(n->name)) {
      o->type.kind = ValueKind::Op;
      o->type.op = n->name == "max" ? ReduceOp::Max : ReduceOp::Min;
    } else if (!o->as<OpToken>()) {
      error(o->loc, name + " takes a reduction operator first: '+', '*', 'max' or 'min'", o->length);
      return false;
    } else {
      ck.checkExpr(*o, scope);
    }
    c.reduceOp = o->type.op;
    pos.erase(pos.begin());
  }
  bool anyError = false;
  for (Expr* e : pos) {
    if (e->as<OpToken>()) {
      error(e->loc, name + " does not take an operator here", e->length);
      return false;
    }
    anyError |= ck.checkExpr(*e, scope).isError();
  }
  for (auto& [n, e] : named) anyError |= ck.checkExpr(*e, scope).isError();
  if (anyError) return false;
  // Every positional argument but send's peer is a tensor.
  for (size_t i = 0; i < pos.size(); ++i) {
    if (op == BuiltinOp::Send && i == 1) continue;
    if (!ck.expectTensor(*pos[i], name)) return false;
  }
  for (auto& [n, e] : named)
    if (!ck.expectTensor(*e, name + " argument " + quote(n))) return false;
  return true;
}

// Roots and eps are read by the stage at run time: a literal or a program parameter, written
// in the call or passed in through the parameters of the functions that inline here. A root
// is never negated; an eps may negate a literal, not a parameter (the stage reads the
// parameter's run-time value itself).
bool BuiltinCall::constOrParam(Expr* e, const char* what) {
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
}

// A scalar argument: an integer, or (integer false) a number that is not bool.
bool BuiltinCall::scalarArg(Expr* e, const char* what, bool integer) {
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
}

// The element type of a floating-point operation on e: integers compute in f32, a literal stays a literal.
std::optional<DType> BuiltinCall::floatOperand(Expr* e) {
  DType t = e->type.dtype;
  if (t == DType::Bool) {
    error(e->loc, name + " needs a numeric tensor, got bool", e->length);
    return std::nullopt;
  }
  if (isInteger(t)) return t == DType::LitInt ? DType::LitFloat : DType::F32;
  return t;
}

// An integer literal, or the negation of one; nullopt (after an error naming `what`) otherwise.
std::optional<int64_t> BuiltinCall::intLiteral(const Expr* e, const std::string& what) {
  if (auto* il = e->as<IntLit>()) return il->value;
  if (auto* u = e->as<Unary>(); u && u->op == UnaryOp::Neg)
    if (auto* il2 = u->operand->as<IntLit>()) return -il2->value;
  error(e->loc, what + " must be an integer literal", e->length);
  return std::nullopt;
}

// A reduction's `dim = d` argument (or another named dimension: `key`), resolved against the
// rank; -1 (whole tensor) if absent.
bool BuiltinCall::dimArg(const Type& x, int& dim, const char* key) {
  dim = -1;
  auto it = named.find(key);
  if (it == named.end()) return true;
  Expr* e = it->second;
  auto v = intLiteral(e, quote(key));
  if (!v) return false;
  if (*v < -x.rank() || *v >= x.rank()) {
    error(e->loc, "dimension " + std::to_string(*v) + " is out of range for a tensor of rank " + std::to_string(x.rank()), e->length);
    return false;
  }
  dim = static_cast<int>(*v < 0 ? *v + x.rank() : *v);
  return true;
}

// A size argument (reshape's dimensions, narrow's length): a size expression, positive (a
// requirement where it is symbolic).
std::optional<SizeExpr> BuiltinCall::positiveSize(Expr* e, const std::string& what) {
  auto v = ck.toSize(*e, scope);
  if (!v) return std::nullopt;
  if (auto k = v->constantValue(); k && *k <= 0) {
    error(e->loc, what + " must be positive; it is " + std::to_string(*k), e->length);
    return std::nullopt;
  }
  if (!v->constantValue() && v->sign() <= 0) ck.addRequirement(*v, BinaryOp::Gt, SizeExpr::constant(0), what + " is positive", e->loc);
  return v;
}

// The input of a collective lives on the ranks of a group.
bool BuiltinCall::collectiveInput(Expr* e) {
  if (!e->type.group) {
    error(e->loc, name + " needs a value that lives on the ranks; " + describe(*e) + " is uniform (the same constant everywhere)",
          e->length);
    return false;
  }
  return true;
}

// exp, log, sqrt and the other math functions of ast/UnaryMath.def: a float tensor in, its type out.
Type BuiltinCall::mathFunction() {
  auto t = floatOperand(pos[0]);
  if (!t) return Type::error();
  Type r = pos[0]->type;
  r.dtype = *t;
  return r;
}

// abs, relu: a numeric tensor in, its type out.
Type BuiltinCall::absRelu() {
  if (pos[0]->type.dtype == DType::Bool) {
    error(pos[0]->loc, name + " needs a numeric tensor, got bool", pos[0]->length);
    return Type::error();
  }
  return pos[0]->type;
}

// pow, min, max: element-wise on two operands.
Type BuiltinCall::binaryMath() {
  auto p = promote(pos[0]->type.dtype, pos[1]->type.dtype);
  if (!p || *p == DType::Bool) {
    error(c.loc, "invalid operands to " + name + ": " + dtypeName(pos[0]->type.dtype) + " and " + dtypeName(pos[1]->type.dtype), len);
    return Type::error();
  }
  return ck.elementwise({pos[0], pos[1]}, *p, c.loc, len, name);
}

Type BuiltinCall::select() {
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
  return ck.elementwise({pos[0], pos[1], pos[2]}, *p, c.loc, len, name);
}

Type BuiltinCall::dropout() {
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
            "the seed of 'dropout' lives in group " + quote(seed->type.group->name) + ", the tensor in " + quote(pos[0]->type.group->name),
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

// sum, mean, norm, max and min over one dimension or the whole tensor.
Type BuiltinCall::reduction() {
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

// softmax, layernorm, rmsnorm: over the last dimension.
Type BuiltinCall::normalization() {
  Type x = pos[0]->type;
  auto dt = floatOperand(pos[0]);
  if (!dt) return Type::error();
  if (x.rank() == 0) {
    error(pos[0]->loc, name + " needs a tensor of rank 1 or more, got a scalar", pos[0]->length);
    return Type::error();
  }
  // `dim = d`: the dimension it normalizes (the last by default).
  int dim;
  if (!dimArg(x, dim)) return Type::error();
  if (dim < 0) dim = x.rank() - 1;
  c.dim = dim;
  if (x.group && x.layout.kind == Layout::Sliced && x.layout.dim == dim) {
    error(c.loc,
          name + " normalizes " + (dim == x.rank() - 1 ? std::string("the last dimension") : "dimension " + std::to_string(dim)) +
              ", which is sliced in " + describe(*pos[0]) + "; gather it first",
          len);
    return Type::error();
  }
  if (op == BuiltinOp::Layernorm || op == BuiltinOp::Rmsnorm) {
    if (op == BuiltinOp::Layernorm && pos.size() == 2) {
      error(c.loc, "'layernorm' takes x, or x with gamma and beta; got 2 arguments", len);
      return Type::error();
    }
    for (size_t i = 1; i < pos.size(); ++i) {
      const Type& g = pos[i]->type;
      if (g.rank() != 1 || g.shape[0] != x.shape[dim]) {
        error(pos[i]->loc,
              std::string(i == 1 ? "gamma" : "beta") + " of " + name + " must have shape [" + x.shape[dim].str() + "], got " +
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
      if (!ck.sameGroup(x, g, gg, c.loc, len, name)) return Type::error();
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

// matmul and gemv.
Type BuiltinCall::matmul() {
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
    auto batch = ck.broadcast(ba, bb, c.loc, len, name + " batch dimensions");
    if (!batch) return Type::error();
    shape = *batch;
    shape.push_back(a.shape[a.rank() - 2]);
    shape.push_back(b.shape.back());
  }
  rank = static_cast<int>(shape.size());
  const GroupInfo* g;
  if (!ck.sameGroup(a, b, g, c.loc, len, name)) return Type::error();
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

Type BuiltinCall::embedding() {
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
  if (!ck.sameGroup(tab, idx, g, c.loc, len, name)) return Type::error();
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

// allreduce, reduce_scatter, reduce.
Type BuiltinCall::reduceCollective() {
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
  // `dim = d`: the dimension it scatters (0 by default).
  int dim;
  if (!dimArg(t, dim)) return Type::error();
  if (dim < 0) dim = 0;
  c.dim = dim;
  ck.requireDivisible(t.shape[dim], t.group, "'reduce_scatter' splits dimension " + std::to_string(dim) + " over " + quote(t.group->name),
                      c.loc, /*even=*/true);
  return Type::tensor(t.dtype, t.shape, Layout::sliced(dim), t.group);
}

Type BuiltinCall::allGather() {
  Expr* x = pos[0];
  if (!collectiveInput(x)) return Type::error();
  if (x->type.layout.kind != Layout::Sliced) {
    error(x->loc, "'all_gather' needs a sliced tensor; " + describe(*x) + " is " + x->type.layout.str(), x->length);
    return Type::error();
  }
  return Type::tensor(x->type.dtype, x->type.shape, Layout::replicated(), x->type.group);
}

Type BuiltinCall::broadcastCollective() {
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

Type BuiltinCall::allToAll() {
  Expr* x = pos[0];
  if (!collectiveInput(x)) return Type::error();
  if (x->type.layout.kind == Layout::Sliced || x->type.rank() == 0) {
    error(x->loc, "'all_to_all' needs a local or replicated tensor of rank 1 or more; " + describe(*x) + " is " + x->type.str(), x->length);
    return Type::error();
  }
  // `dim = d`: the dimension it splits and joins (0 by default).
  int d;
  if (!dimArg(x->type, d)) return Type::error();
  c.dim = d < 0 ? 0 : d;
  ck.requireDivisible(x->type.shape[c.dim], x->type.group,
                      "'all_to_all' splits dimension " + std::to_string(c.dim) + " over " + quote(x->type.group->name), c.loc,
                      /*even=*/false);
  return Type::tensor(x->type.dtype, x->type.shape, Layout::local(), x->type.group);
}

Type BuiltinCall::send() {
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
    // Rank i receives rank i-1's value (i+1 for prev): a block would no longer be at its place,
    // and no layout says where it is.
    if (t.layout.kind == Layout::Sliced) {
      error(x->loc,
            "'send' to the next or previous rank takes a local or replicated value; " + describe(*x) + " is " + t.layout.str() +
                " (all_gather it first, or send it to the next group, where each block keeps its place)",
            x->length);
      return Type::error();
    }
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

}  // namespace builtin

Type Checker::checkBuiltin(Call& c, BuiltinOp op, Scope& scope) {
  builtin::BuiltinCall b(*this, c, op, scope);
  if (!b.checkArguments(scope)) return Type::error();
  switch (op) {
#define COCONET_UNARY_MATH(k, ...) case BuiltinOp::k:
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    return b.mathFunction();
    case BuiltinOp::Abs:
    case BuiltinOp::Relu: return b.absRelu();
    case BuiltinOp::Pow:
    case BuiltinOp::Min:
    case BuiltinOp::Max: return b.binaryMath();
    case BuiltinOp::Select: return b.select();
    case BuiltinOp::Dropout: return b.dropout();
    case BuiltinOp::Sum:
    case BuiltinOp::Mean:
    case BuiltinOp::Norm:
    case BuiltinOp::ReduceMax:
    case BuiltinOp::ReduceMin: return b.reduction();
    case BuiltinOp::Softmax:
    case BuiltinOp::Layernorm:
    case BuiltinOp::Rmsnorm: return b.normalization();
    case BuiltinOp::Matmul:
    case BuiltinOp::Gemv: return b.matmul();
    case BuiltinOp::Embedding: return b.embedding();
    case BuiltinOp::AllReduce:
    case BuiltinOp::ReduceScatter:
    case BuiltinOp::Reduce: return b.reduceCollective();
    case BuiltinOp::AllGather: return b.allGather();
    case BuiltinOp::Broadcast: return b.broadcastCollective();
    case BuiltinOp::AllToAll: return b.allToAll();
    case BuiltinOp::Send: return b.send();
    case BuiltinOp::Transpose: return b.transpose();
    case BuiltinOp::Permute: return b.permute();
    case BuiltinOp::Reshape:
    case BuiltinOp::View: return b.reshape();
    case BuiltinOp::Concat: return b.concat();
    case BuiltinOp::Narrow: return b.narrow();
    case BuiltinOp::Unsqueeze:
    case BuiltinOp::Squeeze: return b.squeeze();
    case BuiltinOp::Cast:
    case BuiltinOp::None: break;
  }
  internalError("checkBuiltin: unhandled operation " + std::string(builtinOpName(op)));
}

}  // namespace coconet::sema
