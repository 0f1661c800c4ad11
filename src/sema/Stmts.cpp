// Semantic analysis of statements: tensor declarations, process groups, requirements, named
// values and state updates.
#include "sema/SemaImpl.h"
#include "support/Strings.h"

namespace coconet::sema {

static bool holds(int64_t l, BinaryOp op, int64_t r) {
  switch (op) {
    case BinaryOp::Eq: return l == r;
    case BinaryOp::Ne: return l != r;
    case BinaryOp::Lt: return l < r;
    case BinaryOp::Le: return l <= r;
    case BinaryOp::Gt: return l > r;
    case BinaryOp::Ge: return l >= r;
    default: return false;
  }
}

void Checker::checkStmt(Stmt& st, Scope& scope, bool inDef) {
  if (inDef && (st.kind == StmtKind::Decl || st.kind == StmtKind::Group || st.kind == StmtKind::Require || st.kind == StmtKind::Update))
    return;  // reported with the def's text (checkDefText)
  switch (st.kind) {
    case StmtKind::Decl: return checkDecl(static_cast<DeclStmt&>(st), scope);
    case StmtKind::Group: return checkGroup(static_cast<GroupStmt&>(st), scope);
    case StmtKind::Require: return checkRequire(static_cast<RequireStmt&>(st), scope);
    case StmtKind::Let: return checkLet(static_cast<LetStmt&>(st), scope);
    case StmtKind::Update: return checkUpdate(static_cast<UpdateStmt&>(st), scope);
    case StmtKind::Return: return;  // handled by the enclosing program or def
  }
}

void Checker::checkDecl(DeclStmt& d, Scope& scope) {
  Shape shape;
  bool ok = true;
  for (auto& dim : d.dims) {
    auto s = toSize(*dim, scope);
    if (!s) {
      ok = false;
      continue;
    }
    if (auto c = s->constantValue(); c && *c <= 0) {
      error(dim->loc,
            "dimension " + quote(exprText(*dim)) + " of " + quote(d.name.name) + " is " + std::to_string(*c) +
                "; dimensions must be positive",
            dim->length);
      ok = false;
    } else if (s->sign() < 0) {
      error(dim->loc, "dimension " + quote(exprText(*dim)) + " of " + quote(d.name.name) + " is never positive", dim->length);
      ok = false;
    } else if (s->sign() == 0) {
      addRequirement(*s, BinaryOp::Gt, SizeExpr::constant(0), "dimensions of " + quote(d.name.name) + " are positive", dim->loc);
    }
    shape.push_back(*s);
  }
  const GroupInfo* group = world_;
  if (!d.group.name.empty()) {
    Symbol* g = scope.find(d.group.name);
    if (!g) {
      error(d.group.loc, "use of undeclared process group " + quote(d.group.name), static_cast<uint32_t>(d.group.name.size()));
      ok = false;
    } else if (g->kind != SymbolKind::Group) {
      error(d.group.loc, quote(d.group.name) + " is not a process group", static_cast<uint32_t>(d.group.name.size()));
      ok = false;
    } else {
      group = g->group;
    }
  }
  Layout layout{d.layoutKind, -1};
  if (d.layoutKind == Layout::Sliced) {
    int64_t dim = 0;
    bool lit = false;
    if (auto* il = d.slicedDim->as<IntLit>())
      dim = il->value, lit = true;
    else if (auto* u = d.slicedDim->as<Unary>(); u && u->op == UnaryOp::Neg)
      if (auto* il2 = u->operand->as<IntLit>()) dim = -il2->value, lit = true;
    int rank = static_cast<int>(shape.size());
    if (!lit) {
      error(d.slicedDim->loc, "the sliced dimension must be an integer literal", d.slicedDim->length);
      ok = false;
    } else if (rank == 0) {
      error(d.layoutLoc, "a scalar cannot be sliced", 6);
      ok = false;
    } else if (dim < -rank || dim >= rank) {
      error(d.slicedDim->loc,
            "sliced(" + std::to_string(dim) + ") is out of range for " + quote(d.name.name) + " of rank " + std::to_string(rank),
            d.slicedDim->length);
      ok = false;
    } else {
      layout.dim = static_cast<int>(dim < 0 ? dim + rank : dim);
    }
  }
  if (ok && !storageCountable(shape, d.dtype)) {
    error(d.name.loc,
          "the storage of " + quote(d.name.name) + " (" + dtypeName(d.dtype) + shapeStr(shape) +
              ") overflows 64 bits: a tensor takes at most 2^63 - 1 bytes",
          static_cast<uint32_t>(d.name.name.size()));
    ok = false;
  }
  Type t = ok ? Type::tensor(d.dtype, shape, layout, group) : Type::error();
  Symbol* sym = newSymbol(d.role == Role::State ? SymbolKind::State : SymbolKind::Input, d.name.name, d.name.loc, t);
  sym->stmt = &d;
  d.symbol = sym;
  declare(scope, sym);
  (d.role == Role::State ? out_.states : out_.inputs).push_back(sym);
  if (ok && layout.kind == Layout::Sliced)
    requireDivisible(shape[layout.dim], group,
                     "dimension " + std::to_string(layout.dim) + " of " + quote(d.name.name) + " is sliced over " + quote(group->name),
                     d.name.loc, /*even=*/true);
}

void Checker::checkGroup(GroupStmt& g, Scope& scope) {
  Type t = Type::error();
  if (g.function.name != "split") {
    error(g.function.loc, "unknown group operation " + quote(g.function.name) + "; groups are made with 'split(parent, count)'",
          static_cast<uint32_t>(g.function.name.size()));
  } else if (Symbol* parent = scope.find(g.parent.name); !parent) {
    error(g.parent.loc, "use of undeclared process group " + quote(g.parent.name), static_cast<uint32_t>(g.parent.name.size()));
  } else if (parent->kind != SymbolKind::Group) {
    error(g.parent.loc, quote(g.parent.name) + " is not a process group", static_cast<uint32_t>(g.parent.name.size()));
  } else if (auto count = toSize(*g.count, scope)) {
    if (auto c = count->constantValue(); c && *c <= 0) {
      error(g.count->loc, "a group cannot be split into " + std::to_string(*c) + " parts", g.count->length);
    } else {
      const GroupInfo* pg = parent->group;
      out_.groups.push_back(GroupInfo{g.name.name, pg, *count, SizeExpr::div(pg->size, *count), pg->depth + 1});
      const GroupInfo* gi = &out_.groups.back();
      SizeExpr rem = SizeExpr::mod(pg->size, *count);
      if (rem.constantValue() != 0)
        addRequirement(rem, BinaryOp::Eq, SizeExpr::constant(0), "group " + quote(pg->name) + " is split into " + count->str() + " parts",
                       g.name.loc);
      t.kind = ValueKind::Group;
      t.group = gi;
    }
  }
  Symbol* sym = newSymbol(SymbolKind::Group, g.name.name, g.name.loc, t);
  sym->group = t.group;
  sym->stmt = &g;
  g.symbol = sym;
  if (t.isError()) sym->kind = SymbolKind::Value;
  declare(scope, sym);
}

void Checker::checkRequire(RequireStmt& r, Scope& scope) {
  std::vector<const Expr*> parts{r.cond.get()};
  for (size_t i = 0; i < parts.size(); ++i) {
    const Expr* e = parts[i];
    auto* b = e->as<Binary>();
    if (b && b->op == BinaryOp::And) {
      parts.push_back(b->lhs.get());
      parts.push_back(b->rhs.get());
      continue;
    }
    if (!b || !isComparison(b->op)) {
      error(e->loc, "'require' takes comparisons of sizes, such as 'H % world.size == 0'", e->length);
      continue;
    }
    auto l = toSize(*b->lhs, scope), rr = toSize(*b->rhs, scope);
    if (!l || !rr) continue;
    auto lc = l->constantValue(), rc = rr->constantValue();
    if (lc && rc) {
      if (!holds(*lc, b->op, *rc)) {
        // a divisibility requirement (a % m == 0) says which value is not a multiple of which
        std::string why = std::to_string(*lc) + " " + binaryOpSpelling(b->op) + " " + std::to_string(*rc) + " is false";
        const auto* mod = b->lhs->as<Binary>();
        if (b->op == BinaryOp::Eq && *rc == 0 && mod && mod->op == BinaryOp::Mod) {
          auto a = toSize(*mod->lhs, scope), m = toSize(*mod->rhs, scope);
          auto av = a ? a->constantValue() : std::nullopt, mv = m ? m->constantValue() : std::nullopt;
          auto named = [](const Expr& x, int64_t v) {
            const std::string t = exprText(x), n = std::to_string(v);
            return t == n ? n : t + " = " + n;
          };
          if (av && mv) why = named(*mod->lhs, *av) + " is not a multiple of " + named(*mod->rhs, *mv);
        }
        error(b->loc, "requirement " + quote(exprText(*b)) + " does not hold: " + why, b->length);
      }
      continue;
    }
    addRequirement(*l, b->op, *rr, "stated", b->loc);
  }
}

void Checker::checkLet(LetStmt& l, Scope& scope) {
  auto* call = l.value->as<Call>();
  const Call* outer = multiValueCall_;  // a def's body is checked inside its caller's let
  multiValueCall_ = l.names.size() > 1 ? call : nullptr;
  Type t = checkExpr(*l.value, scope);
  multiValueCall_ = outer;
  if (t.isTensor() && isLiteral(t.dtype)) {  // `c = 1.5`: a named value gets a real type
    t.dtype = concrete(t.dtype);
    l.value->type.dtype = t.dtype;
  }
  size_t nresults = call && call->def ? call->results.size() : 1;
  bool ok = !t.isError();
  if (ok && nresults != l.names.size()) {
    if (nresults > 1)
      error(l.value->loc,
            quote(call->spelling()) + " returns " + std::to_string(nresults) + " values, but " + std::to_string(l.names.size()) +
                (l.names.size() == 1 ? " name is" : " names are") + " assigned",
            l.value->length);
    else
      error(l.names[1].loc, std::to_string(l.names.size()) + " names are assigned, but the value is a single tensor");
    ok = false;
  }
  if (ok && !t.isTensor()) {
    error(l.value->loc, "only tensors can be named; " + quote(exprText(*l.value)) + " is a " + t.str(), l.value->length);
    ok = false;
  }
  for (size_t i = 0; i < l.names.size(); ++i) {
    Type ti = !ok ? Type::error() : nresults > 1 ? call->results[i]->type : t;
    Symbol* sym = newSymbol(SymbolKind::Value, l.names[i].name, l.names[i].loc, ti);
    sym->stmt = &l;
    l.symbols.push_back(sym);
    declare(scope, sym);
  }
}

void Checker::checkUpdate(UpdateStmt& u, Scope& scope) {
  Type t = checkExpr(*u.value, scope);
  uint32_t len = static_cast<uint32_t>(u.name.name.size());
  Symbol* cur = scope.find(u.name.name);
  const Symbol* state = cur && cur->state ? cur->state : cur;
  if (!cur) {
    error(u.name.loc, "use of undeclared name " + quote(u.name.name), len);
    return;
  }
  if (state->kind != SymbolKind::State) {
    error(u.name.loc,
          quote(u.name.name) +
              " is not state; only tensors declared with "
              "'state' can be updated",
          len);
    if (state->loc.valid()) note(state->loc, quote(u.name.name) + " is declared here");
    return;
  }
  if (auto it = updatedAt_.find(state); it != updatedAt_.end()) {
    error(u.name.loc, "state " + quote(u.name.name) + " is updated twice", len);
    note(it->second, "first update is here");
    return;
  }
  updatedAt_[state] = u.name.loc;
  u.state = state;
  Symbol* sym = newSymbol(SymbolKind::Value, u.name.name, u.name.loc, state->type);
  sym->state = state;
  sym->stmt = &u;
  u.symbol = sym;
  out_.updates[state] = sym;
  // From here on the name denotes the updated value.
  for (Scope* s = &scope; s; s = s->parent)
    if (auto it = s->names.find(u.name.name); it != s->names.end()) {
      it->second = sym;
      break;
    }
  const Type& st_t = state->type;
  if (t.isError() || st_t.isError()) return;
  if (!t.isTensor()) {
    error(u.value->loc, "the new value of " + quote(u.name.name) + " must be a tensor", u.value->length);
    return;
  }
  if (isLiteral(t.dtype) && (promote(t.dtype, st_t.dtype) != st_t.dtype || st_t.dtype == DType::Bool)) {
    error(u.value->loc,
          "update of " + quote(u.name.name) + " (" + dtypeName(st_t.dtype) + ") with " +
              (t.dtype == DType::LitFloat ? "a floating-point" : "an integer") + " literal",
          u.value->length);
    return;
  }
  if (isLiteral(t.dtype) && isInteger(st_t.dtype)) {
    auto v = constantValue(*u.value);
    double lo = st_t.dtype == DType::U8 ? 0 : st_t.dtype == DType::I8 ? -128 : st_t.dtype == DType::I32 ? -2147483648.0 : -9.2e18;
    double hi = st_t.dtype == DType::U8 ? 255 : st_t.dtype == DType::I8 ? 127 : st_t.dtype == DType::I32 ? 2147483647.0 : 9.2e18;
    if (v && (*v < lo || *v > hi)) {
      error(
          u.value->loc,
          "update of " + quote(u.name.name) + " with " + quote(exprText(*u.value)) + ", which is out of range for " + dtypeName(st_t.dtype),
          u.value->length);
      return;
    }
  }
  if (t.dtype != st_t.dtype && !isLiteral(t.dtype)) {
    error(u.value->loc,
          "update of " + quote(u.name.name) + " (" + dtypeName(st_t.dtype) + ") with a value of type " + dtypeName(t.dtype) +
              "; convert it with " + dtypeName(st_t.dtype) + "(...)",
          u.value->length);
    return;
  }
  if (t.shape != st_t.shape) {
    auto b = broadcast(t.shape, st_t.shape, u.value->loc, u.value->length, "update");
    if (!b) return;
    if (*b != st_t.shape) {
      error(u.value->loc, "update of " + quote(u.name.name) + " " + shapeStr(st_t.shape) + " with a value of shape " + shapeStr(t.shape),
            u.value->length);
      return;
    }
  }
  if (t.group && t.group != st_t.group) {
    error(u.value->loc,
          "update of " + quote(u.name.name) + ", which lives in group " + quote(st_t.group->name) + ", with a value in group " +
              quote(t.group->name),
          u.value->length);
    return;
  }
  // A value fits the state's layout if every rank has what the state keeps there.
  bool fits = t.layout == st_t.layout || t.layout.kind == Layout::Replicated || !t.group;
  if (st_t.layout.kind == Layout::Local && t.layout.kind != Layout::Sliced) fits = true;
  if (!fits)
    error(u.value->loc,
          "update of " + quote(u.name.name) + " (" + st_t.layout.str() + ") with a " + t.layout.str() + " value: the layouts do not meet",
          u.value->length);
}
}  // namespace coconet::sema
