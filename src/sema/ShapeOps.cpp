// Typing of the shape operations: transpose, permute, reshape and view, concat, narrow,
// unsqueeze and squeeze, with their layout rules (docs/language.md, "Shape operations"): each rank
// reshapes, permutes, joins or cuts what it holds.
#include "sema/BuiltinCall.h"
#include "support/Strings.h"

namespace coconet::sema::builtin {

namespace {

// The type of x with its dimensions permuted (result dimension k is x's perm[k]); a sliced
// dimension moves with its data, since each rank permutes what it holds.
Type permuted(const Type& x, const std::vector<int>& perm) {
  Type t = x;
  for (size_t k = 0; k < perm.size(); ++k) {
    t.shape[k] = x.shape[perm[k]];
    if (x.layout.kind == Layout::Sliced && x.layout.dim == perm[k]) t.layout = Layout::sliced(static_cast<int>(k));
  }
  return t;
}

}  // namespace

// transpose(x[, dim0 = a, dim1 = b]): x with dimensions a and b swapped (the last two by
// default).
Type BuiltinCall::transpose() {
  const Type& x = pos[0]->type;
  if (x.rank() < 2) {
    error(pos[0]->loc, name + " needs a tensor of rank 2 or more; " + describe(*pos[0]) + " is " + x.tensorTypeStr(), pos[0]->length);
    return Type::error();
  }
  int a = -1, b = -1;
  if (!dimArg(x, a, "dim0") || !dimArg(x, b, "dim1")) return Type::error();
  if ((a < 0) != (b < 0)) {
    error(c.loc, name + " takes both 'dim0' and 'dim1', or neither (the last two dimensions)", len);
    return Type::error();
  }
  if (a < 0) a = x.rank() - 2, b = x.rank() - 1;
  c.perm.resize(x.rank());
  for (int k = 0; k < x.rank(); ++k) c.perm[k] = k == a ? b : k == b ? a : k;
  return permuted(x, c.perm);
}

// permute(x, d0, d1, ...): result dimension k is x's dimension dk (each dimension once;
// negative ones count from the end).
Type BuiltinCall::permute() {
  const Type& x = pos[0]->type;
  const int R = x.rank();
  if (static_cast<int>(pos.size()) - 1 != R) {
    error(c.loc,
          name + " takes a dimension for each dimension of " + describe(*pos[0]) + " (" + x.tensorTypeStr() + ", rank " +
              std::to_string(R) + "), got " + std::to_string(pos.size() - 1),
          len);
    return Type::error();
  }
  std::vector<int> perm;
  std::vector<bool> seen(R, false);
  for (size_t i = 1; i < pos.size(); ++i) {
    auto v = intLiteral(pos[i], "a dimension of " + name);
    if (!v) return Type::error();
    if (*v < -R || *v >= R) {
      error(pos[i]->loc, "dimension " + std::to_string(*v) + " is out of range for a tensor of rank " + std::to_string(R), pos[i]->length);
      return Type::error();
    }
    const int d = static_cast<int>(*v < 0 ? *v + R : *v);
    if (seen[d]) {
      error(pos[i]->loc, "dimension " + std::to_string(d) + " appears twice in " + name + "; each dimension appears once", pos[i]->length);
      return Type::error();
    }
    seen[d] = true;
    perm.push_back(d);
  }
  c.perm = perm;
  return permuted(x, perm);
}

// reshape(x, s0, s1, ...) and view(...): the same elements in row-major order with the shape
// given (one size may be -1: the one the element count leaves). Each rank reshapes its block:
// a sliced(d) tensor keeps dimension d as a dimension of its own (those before it may merge or
// split among themselves, and so may those after it).
Type BuiltinCall::reshape() {
  const Type& x = pos[0]->type;
  Shape out;
  int infer = -1;
  for (size_t i = 1; i < pos.size(); ++i) {
    Expr* e = pos[i];
    const auto* u = e->as<Unary>();
    const bool minusOne = (u && u->op == UnaryOp::Neg && u->operand->as<IntLit>() && u->operand->as<IntLit>()->value == 1) ||
                          (e->as<IntLit>() && e->as<IntLit>()->value == -1);
    if (minusOne) {
      if (infer >= 0) {
        error(e->loc, name + " can leave one dimension to the element count (-1), not two", e->length);
        return Type::error();
      }
      infer = static_cast<int>(out.size());
      out.push_back(SizeExpr::constant(1));
      continue;
    }
    auto v = positiveSize(e, "dimension " + std::to_string(i - 1) + " of " + name);
    if (!v) return Type::error();
    out.push_back(*v);
  }
  SizeExpr numel = SizeExpr::constant(1), given = SizeExpr::constant(1);
  for (auto& d : x.shape) numel = numel * d;
  for (auto& d : out) given = given * d;
  if (infer >= 0) {
    out[infer] = SizeExpr::div(numel, given);
    if (out[infer] * given != numel) {
      error(pos[infer + 1]->loc,
            name + " cannot tell dimension " + std::to_string(infer) + " from the element count: " + describe(*pos[0]) + " has " +
                numel.str() + " elements, " +
                (numel.isConstant() && given.isConstant() ? "not a multiple of " : "which the sizes do not show to be a multiple of ") +
                given.str(),
            pos[infer + 1]->length);
      return Type::error();
    }
  } else if (given != numel) {
    error(c.loc,
          name + " keeps the element count: " + describe(*pos[0]) + " (" + x.tensorTypeStr() + ") has " + numel.str() +
              " elements, the shape " + shapeStr(out) + " has " + given.str() +
              (numel.isConstant() && given.isConstant() ? "" : " (as far as the sizes show)"),
          len);
    return Type::error();
  }
  Type t = x;
  t.shape = out;
  if (x.layout.kind == Layout::Sliced) {
    // the sliced dimension stays a dimension of its own, the ones before it holding as many
    // elements as before (they may merge or split, and so may the ones after it)
    const int d = x.layout.dim;
    SizeExpr before = SizeExpr::constant(1), acc = SizeExpr::constant(1);
    for (int k = 0; k < d; ++k) before = before * x.shape[k];
    int at = -1;
    for (size_t k = 0; k < out.size() && at < 0; ++k) {
      if (acc == before && out[k] == x.shape[d]) at = static_cast<int>(k);
      acc = acc * out[k];
    }
    if (at < 0) {
      error(c.loc,
            name + " of " + describe(*pos[0]) + ", which is " + x.layout.str() + ", must keep its dimension " + std::to_string(d) + " (" +
                x.shape[d].str() + ") as a dimension of its own, after dimensions of " + before.str() + " elements in all (" +
                x.tensorTypeStr() + "): each rank reshapes its block (all_gather it first)",
            len);
      return Type::error();
    }
    t.layout = Layout::sliced(at);
  }
  return t;
}

// concat(a, b, ..., dim = d): the operands one after another along dimension d (0 by default);
// the other dimensions, the element type and the group agree. Each rank concatenates what it
// holds, so no operand may be sliced along d.
Type BuiltinCall::concat() {
  const Type& x = pos[0]->type;
  if (x.rank() == 0) {
    error(pos[0]->loc, name + " needs tensors of rank 1 or more; " + describe(*pos[0]) + " is a scalar", pos[0]->length);
    return Type::error();
  }
  int d;
  if (!dimArg(x, d)) return Type::error();
  if (d < 0) d = 0;
  c.dim = d;
  Type t = x;
  bool anyLocal = false;
  for (Expr* e : pos) {
    const Type& y = e->type;
    if (y.dtype != x.dtype || y.rank() != x.rank() || y.group != x.group) {
      error(e->loc,
            name + " takes tensors of one element type, rank and group; " + describe(*e) + " is " + y.str() + " and " + describe(*pos[0]) +
                " is " + x.str(),
            e->length);
      return Type::error();
    }
    for (int k = 0; k < x.rank(); ++k)
      if (k != d && y.shape[k] != x.shape[k]) {
        error(e->loc,
              name + " along dimension " + std::to_string(d) + " needs the other dimensions equal; dimension " + std::to_string(k) +
                  " of " + describe(*e) + " is " + y.shape[k].str() + ", of " + describe(*pos[0]) + " " + x.shape[k].str(),
              e->length);
        return Type::error();
      }
    if (y.layout.kind == Layout::Sliced && y.layout.dim == d) {
      error(e->loc,
            name + " along dimension " + std::to_string(d) + " cannot take " + describe(*e) +
                ", which is sliced along it (all_gather it first)",
            e->length);
      return Type::error();
    }
    if ((x.layout.kind == Layout::Sliced || y.layout.kind == Layout::Sliced) && !(y.layout == x.layout)) {
      error(e->loc,
            "layouts of " + name + " do not meet: " + describe(*pos[0]) + " is " + x.layout.str() + " and " + describe(*e) + " is " +
                y.layout.str(),
            e->length);
      return Type::error();
    }
    anyLocal |= y.layout.kind == Layout::Local;
    if (e != pos[0]) t.shape[d] = t.shape[d] + y.shape[d];
  }
  if (t.layout.kind != Layout::Sliced) t.layout = anyLocal ? Layout::local() : Layout::replicated();
  return t;
}

// narrow(x, dim = d, start = a, length = n): indices a to a + n - 1 of dimension d (sizes; the
// range lies inside the dimension). Not of a sliced dimension: each rank takes its range from
// what it holds.
Type BuiltinCall::narrow() {
  const Type& x = pos[0]->type;
  for (const char* k : {"dim", "start", "length"})
    if (!named.count(k)) {
      error(c.loc, name + " needs " + quote(k) + ": narrow(x, dim = d, start = a, length = n)", len);
      return Type::error();
    }
  if (x.rank() == 0) {
    error(pos[0]->loc, name + " needs a tensor of rank 1 or more; " + describe(*pos[0]) + " is a scalar", pos[0]->length);
    return Type::error();
  }
  int d;
  if (!dimArg(x, d)) return Type::error();
  if (x.layout.kind == Layout::Sliced && x.layout.dim == d) {
    error(named["dim"]->loc, name + " cannot take a range of the sliced dimension of " + describe(*pos[0]) + " (all_gather it first)",
          named["dim"]->length);
    return Type::error();
  }
  auto start = ck.toSize(*named["start"], scope);
  if (!start) return Type::error();
  if (start->sign() < 0 || (start->constantValue() && *start->constantValue() < 0)) {
    error(named["start"]->loc, "'start' of " + name + " must not be negative; it is " + start->str(), named["start"]->length);
    return Type::error();
  }
  if (!start->constantValue() && start->sign() <= 0)
    ck.addRequirement(*start, BinaryOp::Ge, SizeExpr::constant(0), "'start' of " + name + " is not negative", named["start"]->loc);
  auto length = positiveSize(named["length"], "'length' of " + name);
  if (!length) return Type::error();
  const SizeExpr end = *start + *length, over = end - x.shape[d];                 // (over > 0: past the end)
  if (auto k = over.constantValue(); (k && *k > 0) || (!k && over.sign() > 0)) {  // (past the end for every size)
    error(c.loc,
          name + " takes indices " + start->str() + " to " + (end - SizeExpr::constant(1)).str() + " of dimension " + std::to_string(d) +
              ", which has " + x.shape[d].str(),
          len);
    return Type::error();
  }
  if (!over.constantValue() && over.sign() == 0)  // (sign < 0: inside for every size)
    ck.addRequirement(end, BinaryOp::Le, x.shape[d], "the range of " + name + " lies inside dimension " + std::to_string(d), c.loc);
  c.dim = d;
  c.start = *start;
  Type t = x;
  t.shape[d] = *length;
  return t;
}

// unsqueeze(x, dim = d): a dimension of length 1 inserted at d (0 to x's rank; negative counts
// from the end of the result); squeeze(x, dim = d): dimension d, of length 1, removed. The same
// elements in the same order: a sliced dimension keeps its data and shifts its index.
Type BuiltinCall::squeeze() {
  const Type& x = pos[0]->type;
  const bool add = op == BuiltinOp::Unsqueeze;
  auto it = named.find("dim");
  if (it == named.end()) {
    error(c.loc, name + " needs the dimension: " + name.substr(1, name.size() - 2) + "(x, dim = d)", len);
    return Type::error();
  }
  Type shape = x;
  if (add) shape.shape.push_back(SizeExpr::constant(1));  // (dim ranges over the result's rank)
  int d;
  if (!dimArg(shape, d)) return Type::error();
  c.dim = d;
  Type t = x;
  if (add) {
    t.shape.insert(t.shape.begin() + d, SizeExpr::constant(1));
    if (t.layout.kind == Layout::Sliced && t.layout.dim >= d) t.layout = Layout::sliced(t.layout.dim + 1);
    return t;
  }
  if (x.shape[d].constantValue() != std::optional<int64_t>(1)) {
    error(
        it->second->loc,
        name + " removes a dimension of length 1; dimension " + std::to_string(d) + " of " + describe(*pos[0]) + " is " + x.shape[d].str(),
        it->second->length);
    return Type::error();
  }
  if (t.layout.kind == Layout::Sliced && t.layout.dim == d) {
    error(it->second->loc, name + " cannot remove the sliced dimension of " + describe(*pos[0]), it->second->length);
    return Type::error();
  }
  t.shape.erase(t.shape.begin() + d);
  if (t.layout.kind == Layout::Sliced && t.layout.dim > d) t.layout = Layout::sliced(t.layout.dim - 1);
  return t;
}

}  // namespace coconet::sema::builtin
