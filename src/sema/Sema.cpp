// Semantic analysis of names, sizes, requirements, programs and their parameters, modules and
// def instantiation. Statements are checked in Stmts.cpp, expressions in Ops.cpp and Builtins.cpp.
#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <climits>
#include <cstring>
#include <cmath>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>

#include "sema/SemaImpl.h"
#include "support/Strings.h"

namespace coconet::sema {

constexpr size_t kMaxInlineDepth = 64;
constexpr size_t kMaxInlinedStatements = 200000;  // functions inline per call: bound the total

// ---- Rendering ---------------------------------------------------------------------------
std::string exprText(const Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit: return static_cast<const IntLit&>(e).text;
    case ExprKind::FloatLit: return static_cast<const FloatLit&>(e).text;
    case ExprKind::BoolLit: return static_cast<const BoolLit&>(e).value ? "true" : "false";
    case ExprKind::NameRef: return static_cast<const NameRef&>(e).spelling();
    case ExprKind::OpToken: return reduceOpName(static_cast<const OpToken&>(e).op);
    case ExprKind::Unary: {
      auto& u = static_cast<const Unary&>(e);
      return std::string(unaryOpSpelling(u.op)) + exprText(*u.operand);
    }
    case ExprKind::Binary: {
      auto& b = static_cast<const Binary&>(e);
      auto side = [](const Expr& x) { return x.kind == ExprKind::Binary ? "(" + exprText(x) + ")" : exprText(x); };
      return side(*b.lhs) + " " + binaryOpSpelling(b.op) + " " + side(*b.rhs);
    }
    case ExprKind::Call: {
      auto& c = static_cast<const Call&>(e);
      std::string s = c.spelling() + "(";
      for (size_t i = 0; i < c.args.size(); ++i) {
        if (i) s += ", ";
        if (!c.args[i].name.empty()) s += c.args[i].name + " = ";
        s += exprText(*c.args[i].value);
      }
      return s + ")";
    }
  }
  return "?";
}

std::optional<double> constantValue(const Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit: return static_cast<double>(static_cast<const IntLit&>(e).value);
    case ExprKind::FloatLit: return static_cast<const FloatLit&>(e).value;
    case ExprKind::NameRef: {
      auto& n = static_cast<const NameRef&>(e);
      if (n.member.empty() && n.target && n.target->arg) return constantValue(*n.target->arg);  // def parameter
      if (!n.member.empty() || !n.target || !n.target->param || !n.target->param->bound) return std::nullopt;
      const Param& p = *n.target->param;
      return p.isSize || isInteger(p.dtype) ? static_cast<double>(p.ivalue) : p.value;
    }
    case ExprKind::Unary: {
      auto& u = static_cast<const Unary&>(e);
      auto v = constantValue(*u.operand);
      if (!v || u.op != UnaryOp::Neg) return std::nullopt;
      return -*v;
    }
    case ExprKind::Binary: {
      auto& b = static_cast<const Binary&>(e);
      auto l = constantValue(*b.lhs), r = constantValue(*b.rhs);
      if (!l || !r) return std::nullopt;
      switch (b.op) {
        case BinaryOp::Add: return *l + *r;
        case BinaryOp::Sub: return *l - *r;
        case BinaryOp::Mul: return *l * *r;
        case BinaryOp::Div: return *r == 0 ? std::nullopt : std::optional<double>(*l / *r);
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

// ---- Symbols and scopes ----------------------------------------------------------------------
Symbol* Checker::newSymbol(SymbolKind k, const std::string& name, SourceLoc loc, Type t) {
  out_.symbols.push_back(Symbol{k, name, loc, std::move(t)});
  return &out_.symbols.back();
}

void Checker::declare(Scope& s, Symbol* sym) {
  if (auto it = s.names.find(sym->name); it != s.names.end()) {
    error(sym->loc, "redefinition of " + quote(sym->name), static_cast<uint32_t>(sym->name.size()));
    if (it->second->loc.valid()) note(it->second->loc, "previous definition is here");
    return;
  }
  if (globals_.names.count(sym->name)) {
    error(sym->loc, quote(sym->name) + " is a built-in name and cannot be redefined", static_cast<uint32_t>(sym->name.size()));
    return;
  }
  s.names[sym->name] = sym;
}

static std::vector<std::string> visibleNames(Scope& scope) {
  std::vector<std::string> names;
  for (Scope* s = &scope; s; s = s->parent)
    for (auto& [n, sym] : s->names) names.push_back(n);
  std::sort(names.begin(), names.end());
  return names;
}

Type Checker::checkName(NameRef& e, Scope& scope) {
  uint32_t len = static_cast<uint32_t>(e.name.size());
  Symbol* sym = scope.find(e.name);
  if (!sym) {
    if (ctx_ && ctx_->imports.count(e.name)) {
      if (e.member.empty()) {
        error(e.loc, quote(e.name) + " is a module, not a value", len);
      } else {
        error(e.loc, quote(e.spelling()) + " is not a value: modules hold functions; call it as " + quote(e.spelling() + "(...)"),
              static_cast<uint32_t>(e.spelling().size()));
      }
      return Type::error();
    }
    std::string msg = "use of undeclared name " + quote(e.name);
    std::string guess = diags_.takeSuggestion() ? closestMatch(e.name, visibleNames(scope)) : "";
    if (!guess.empty()) msg += "; did you mean " + quote(guess) + "?";
    error(e.loc, msg, len);
    return Type::error();
  }
  e.target = sym;
  if (e.member.empty()) return sym->type;

  // base.member: members of process groups.
  if (sym->type.kind != ValueKind::Group) {
    if (!sym->type.isError())
      error(e.memberLoc, quote(e.name) + " has no member " + quote(e.member) + ": only process groups have members",
            static_cast<uint32_t>(e.member.size()));
    return Type::error();
  }
  const GroupInfo* g = sym->type.group;
  if (e.member == "size") return Type::tensor(DType::I64, {}, Layout::replicated(), nullptr);
  if (e.member == "rank") return Type::tensor(DType::I32, {}, Layout::local(), g);
  if (e.member == "index") return Type::tensor(DType::I32, {}, Layout::replicated(), g);
  if (e.member == "next" || e.member == "prev") {
    if (g->depth == 0) {
      error(e.memberLoc,
            "the world is a single group, so it has no " + quote(e.member) + " group; use " + quote(e.member) + " to send between ranks",
            static_cast<uint32_t>(e.member.size()));
      return Type::error();
    }
    Type t;
    t.kind = ValueKind::Peer;
    t.peer = e.member == "next" ? PeerKind::NextGroup : PeerKind::PrevGroup;
    t.group = g;
    return t;
  }
  error(e.memberLoc,
        "group " + quote(e.name) + " has no member " + quote(e.member) + "; groups have 'size', 'rank', 'index', 'next' and 'prev'",
        static_cast<uint32_t>(e.member.size()));
  return Type::error();
}

// ---- Sizes and requirements --------------------------------------------------------------
std::optional<SizeExpr> Checker::toSize(const Expr& e, Scope& scope, bool report) {
  auto fail = [&](const std::string& msg) -> std::optional<SizeExpr> {
    if (report) error(e.loc, msg, e.length);
    return std::nullopt;
  };
  try {
    switch (e.kind) {
      case ExprKind::IntLit: {
        auto& lit = static_cast<const IntLit&>(e);
        return SizeExpr::constant(lit.value);
      }
      case ExprKind::NameRef: {
        auto& n = static_cast<const NameRef&>(e);
        Symbol* sym = scope.find(n.name);
        if (!sym) {
          std::string msg = "use of undeclared name " + quote(n.name);
          std::string guess = diags_.takeSuggestion() ? closestMatch(n.name, visibleNames(scope)) : "";
          if (!guess.empty()) msg += "; did you mean " + quote(guess) + "?";
          return fail(msg);
        }
        if (!n.member.empty()) {
          if (sym->kind == SymbolKind::Group && n.member == "size") return sym->group->size;
          return fail(quote(n.spelling()) +
                      " is not a size; sizes are built from size parameters, "
                      "group sizes and integer literals");
        }
        if (sym->kind == SymbolKind::SizeParam) {
          if (sym->param && sym->param->bound) return SizeExpr::constant(sym->param->ivalue);
          return SizeExpr::symbol(sym->name);
        }
        if (sym->kind == SymbolKind::Builtin && sym->name == "nranks") return world_->size;
        return fail(quote(n.name) +
                    " is not a size; sizes are built from size parameters, "
                    "group sizes and integer literals");
      }
      case ExprKind::Binary: {
        auto& b = static_cast<const Binary&>(e);
        if (b.op > BinaryOp::Mod) return fail("expected a size expression, found " + quote(exprText(e)));
        auto l = toSize(*b.lhs, scope, report);
        auto r = toSize(*b.rhs, scope, report);
        if (!l || !r) return std::nullopt;
        switch (b.op) {
          case BinaryOp::Add: return *l + *r;
          case BinaryOp::Sub: return *l - *r;
          case BinaryOp::Mul: return *l * *r;
          case BinaryOp::Div:
            if (r->constantValue() == 0) return fail("division by zero in a size expression");
            return SizeExpr::div(*l, *r);
          case BinaryOp::Mod:
            if (r->constantValue() == 0) return fail("remainder by zero in a size expression");
            return SizeExpr::mod(*l, *r);
          default: break;
        }
        return std::nullopt;
      }
      case ExprKind::Unary: {
        auto& u = static_cast<const Unary&>(e);
        if (u.op != UnaryOp::Neg) return fail("expected a size expression, found " + quote(exprText(e)));
        auto v = toSize(*u.operand, scope, report);
        if (!v) return std::nullopt;
        return SizeExpr::constant(0) - *v;
      }
      default:
        return fail("expected a size expression, found " + quote(exprText(e)) +
                    "; sizes are built from size parameters, group sizes and integer literals");
    }
  } catch (const SizeOverflow&) {
    return fail("size expression " + quote(exprText(e)) + " overflows 64 bits");
  }
}

void Checker::addRequirement(SizeExpr lhs, BinaryOp op, SizeExpr rhs, std::string reason, SourceLoc loc, bool even) {
  for (auto& r : out_.requirements)
    if (r.lhs == lhs && r.op == op && r.rhs == rhs) {
      if (r.even && !even) r.reason = std::move(reason), r.loc = loc;  // (the language's need outweighs
      r.even = r.even && even;                                         //  the CUDA code's; name it)
      return;
    }
  out_.requirements.push_back({std::move(lhs), op, std::move(rhs), std::move(reason), loc, even});
}

void Checker::requireDivisible(const SizeExpr& n, const GroupInfo* g, const std::string& what, SourceLoc loc, bool even) {
  if (!g) return;
  SizeExpr rem = SizeExpr::mod(n, g->size);
  if (auto c = rem.constantValue()) {
    if (*c == 0) return;
  }
  addRequirement(rem, BinaryOp::Eq, SizeExpr::constant(0), what, loc, even);
}

// ---- Def instantiation -------------------------------------------------------------------
Type Checker::instantiate(Call& call, const DefDecl& def, const ModuleContext& ctx, Scope& scope) {
  uint32_t len = call.length;
  if (badDefs_ && badDefs_->count(&def)) return Type::error();  // its text errors are reported
  for (auto& a : call.args)
    if (!a.name.empty()) {
      error(a.nameLoc, quote(call.spelling()) + " is a function; its arguments are positional", static_cast<uint32_t>(a.name.size()));
      return Type::error();
    }
  if (call.args.size() != def.params.size()) {
    error(call.loc,
          quote(call.spelling()) + " takes " + std::to_string(def.params.size()) + " argument" + (def.params.size() == 1 ? "" : "s") +
              ", got " + std::to_string(call.args.size()),
          len);
    note(def.name.loc, quote(def.name.name) + " is defined here");
    return Type::error();
  }
  if (std::find(instStack_.begin(), instStack_.end(), &def) != instStack_.end()) {
    error(call.loc, "recursive call of " + quote(call.spelling()) + "; functions are inlined, so they cannot call themselves", len);
    return Type::error();
  }
  if (instStack_.size() >= kMaxInlineDepth) {
    error(call.loc, "functions nest more than " + std::to_string(kMaxInlineDepth) + " calls deep", len);
    return Type::error();
  }
  bool argsOk = true;
  std::vector<Type> argTypes;
  for (auto& a : call.args) {
    Type t = checkExpr(*a.value, scope);
    argsOk = argsOk && !t.isError();
    argTypes.push_back(t);
  }
  if (!argsOk) return Type::error();

  inlined_ += def.body.stmts.size();
  if (inlined_ > kMaxInlinedStatements) {
    if (!inlineBudgetReported_)
      error(call.loc,
            "inlining functions expands the program past " + std::to_string(kMaxInlinedStatements) +
                " statements (every call inlines its function's body, so nested calls multiply)",
            len);
    inlineBudgetReported_ = true;
    return Type::error();
  }
  call.def = &def;
  unsigned errorsBefore = diags_.errorCount();
  Scope body{&globals_, {}};
  for (size_t i = 0; i < def.params.size(); ++i) {
    const Type& t = argTypes[i];
    SymbolKind k = t.kind == ValueKind::Group ? SymbolKind::Group : SymbolKind::Value;
    Symbol* sym = newSymbol(k, def.params[i].name, def.params[i].loc, t);
    sym->group = t.kind == ValueKind::Group ? t.group : nullptr;
    sym->arg = call.args[i].value.get();
    declare(body, sym);
    call.params.push_back(sym);
  }
  const ModuleContext* savedCtx = ctx_;
  ctx_ = &ctx;
  instStack_.push_back(&def);
  const ReturnStmt* ret = nullptr;
  for (auto& s : def.body.stmts) {
    call.body.push_back(cloneStmt(*s));
    Stmt& st = *call.body.back();
    if (ret) break;  // reported with the def's text
    if (auto* r = st.as<ReturnStmt>()) {
      ret = r;
      for (auto& v : r->values) {
        Type t = checkExpr(*v, body);
        if (!t.isError() && !t.isTensor())
          error(v->loc, "functions return tensors; " + quote(exprText(*v)) + " is " + t.describe(), v->length);
        Symbol* res = newSymbol(SymbolKind::Value, exprText(*v), v->loc, t);
        call.results.push_back(res);
      }
      continue;
    }
    checkStmt(st, body, /*inDef=*/true);
    if (diags_.tooManyErrors()) break;
  }
  instStack_.pop_back();
  ctx_ = savedCtx;
  if (diags_.errorCount() != errorsBefore) {
    note(call.loc, "in the call of " + quote(call.spelling()) + " here", len);
    return Type::error();
  }
  if (call.results.empty()) return Type::error();
  return call.results[0]->type;
}

// ---- Programs ----------------------------------------------------------------------------
static bool checkFloat(double v, DType t, double& dv, std::string& why) {
  double max = t == DType::F16 ? 65504.0 : t == DType::BF16 ? 3.3895313892515355e38 : t == DType::F64 ? DBL_MAX : FLT_MAX;
  if (std::fabs(v) > max) {
    why = "out of range for " + std::string(dtypeName(t));
    return false;
  }
  dv = v;
  return true;
}

// Parses a parameter's value from -D text: sizes and integers in strict decimal, floats as
// C numbers, bools as true/false/1/0; each checked against its type's range.
static bool parseParamValue(const std::string& text, const Param& prm, double& dv, int64_t& iv, std::string& why) {
  auto checkInt = [&](int64_t v) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (prm.isSize)
      lo = 1;
    else if (prm.dtype == DType::I8)
      lo = -128, hi = 127;
    else if (prm.dtype == DType::U8)
      lo = 0, hi = 255;
    else if (prm.dtype == DType::I32)
      lo = INT32_MIN, hi = INT32_MAX;
    if (v < lo || v > hi) {
      why = prm.isSize
                ? "not a positive integer"
                : "out of range for " + std::string(dtypeName(prm.dtype)) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return false;
    }
    iv = v;
    dv = static_cast<double>(v);
    return true;
  };
  if (prm.isSize || isInteger(prm.dtype)) {
    size_t start = !prm.isSize && !text.empty() && text[0] == '-' ? 1 : 0;
    bool digits = text.size() > start;
    for (size_t i = start; i < text.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(text[i]));
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!digits || ec != std::errc() || ptr != text.data() + text.size()) {
      why = prm.isSize ? "not a positive decimal integer" : "not a decimal integer";
      return false;
    }
    return checkInt(v);
  }
  if (prm.dtype == DType::Bool) {
    if (text == "true" || text == "1") return dv = 1, iv = 1, true;
    if (text == "false" || text == "0") return dv = 0, iv = 0, true;
    why = "neither true nor false";
    return false;
  }
  char* end = nullptr;
  errno = 0;
  double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? NAN : std::strtod(text.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v)) {
    why = "not a finite number";
    return false;
  }
  return checkFloat(v, prm.dtype, dv, why);
}

void Checker::checkProgram(const ProgramDecl& p) {
  unsigned programErrorsBefore = diags_.errorCount();
  out_.decl = &p;
  ctx_ = &mainCtx_;
  out_.groups.push_back(GroupInfo{"world", nullptr, SizeExpr::constant(1), SizeExpr::symbol("world.size"), 0});
  world_ = &out_.groups.front();
  Type worldT;
  worldT.kind = ValueKind::Group;
  worldT.group = world_;
  Symbol* w = newSymbol(SymbolKind::Group, "world", {}, worldT);
  w->group = world_;
  globals_.names["world"] = w;
  globals_.names["rank"] = newSymbol(SymbolKind::Builtin, "rank", {}, Type::tensor(DType::I32, {}, Layout::local(), world_));
  globals_.names["nranks"] = newSymbol(SymbolKind::Builtin, "nranks", {}, Type::tensor(DType::I64, {}, Layout::replicated(), nullptr));
  for (auto [name, kind] : {std::pair{"next", PeerKind::NextRank}, {"prev", PeerKind::PrevRank}}) {
    Type t;
    t.kind = ValueKind::Peer;
    t.peer = kind;
    globals_.names[name] = newSymbol(SymbolKind::Builtin, name, {}, t);
  }

  Scope scope{&globals_, {}};
  // Parameters, with -D bindings.
  for (auto& prm : const_cast<ProgramDecl&>(p).params) {
    Type t = prm.isSize ? Type::tensor(DType::I64, {}, Layout::replicated(), nullptr)
                        : Type::tensor(prm.dtype, {}, Layout::replicated(), nullptr);
    if (prm.defaultValue) {
      const Expr* d = prm.defaultValue.get();
      double sign = 1;
      if (auto* u = d->as<Unary>(); u && u->op == UnaryOp::Neg) sign = -1, d = u->operand.get();
      bool ok = false;
      std::string why;
      if (auto* il = d->as<IntLit>()) {
        if (prm.isSize || isInteger(prm.dtype))
          ok = parseParamValue((sign < 0 ? "-" : "") + il->text, prm, prm.value, prm.ivalue, why);
        else if (isFloat(prm.dtype))
          ok = checkFloat(sign * static_cast<double>(il->value), prm.dtype, prm.value, why);
      } else if (auto* fl = d->as<FloatLit>()) {
        ok = !prm.isSize && isFloat(prm.dtype) && checkFloat(sign * fl->value, prm.dtype, prm.value, why);
      } else if (auto* bl = d->as<BoolLit>()) {
        ok = !prm.isSize && prm.dtype == DType::Bool && sign > 0;
        prm.value = bl->value;
        prm.ivalue = bl->value;
      }
      if (!ok && !why.empty()) {
        error(prm.defaultValue->loc, "default value " + quote(exprText(*prm.defaultValue)) + " of " + quote(prm.name.name) + " is " + why,
              prm.defaultValue->length);
      } else if (!ok) {
        std::string want = prm.isSize                 ? "a positive integer literal"
                           : prm.dtype == DType::Bool ? "true or false"
                           : isInteger(prm.dtype)     ? "an integer literal"
                                                      : "a number literal";
        error(prm.defaultValue->loc,
              "default value " + quote(exprText(*prm.defaultValue)) + " of " + quote(prm.name.name) + " must be " + want,
              prm.defaultValue->length);
      } else {
        prm.bound = true;  // a default binds; -D overrides it
      }
    }
    for (auto& [name, value] : opts_.defines) {
      if (name != prm.name.name) continue;
      std::string why;
      if (!parseParamValue(value, prm, prm.value, prm.ivalue, why)) {
        error({}, "-D " + name + "=" + value + ": " + quote(value) + " is " + why + " (" + quote(prm.name.name) + " is " +
                      (prm.isSize ? "a size" : dtypeName(prm.dtype)) + ")");
        continue;
      }
      prm.bound = true;
      prm.boundOnCommandLine = true;
    }
    Symbol* sym = newSymbol(prm.isSize ? SymbolKind::SizeParam : SymbolKind::ScalarParam, prm.name.name, prm.name.loc, t);
    sym->param = &prm;
    prm.symbol = sym;
    declare(scope, sym);
    out_.params.push_back(sym);
  }

  const ReturnStmt* ret = nullptr;
  for (auto& s : p.body.stmts) {
    if (diags_.tooManyErrors()) return;
    if (ret) {
      error(s->loc, "statement after 'return'");
      break;
    }
    if (auto* r = s->as<ReturnStmt>()) {
      ret = r;
      std::set<std::string> seen;
      for (auto& v : r->values) {
        auto* n = v->as<NameRef>();
        if (!n || !n->member.empty()) {
          error(v->loc, "program outputs must be names; assign " + quote(exprText(*v)) + " to a name first", v->length);
          continue;
        }
        Type t = checkExpr(*v, scope);
        if (t.isError()) continue;
        if (!t.isTensor()) {
          error(v->loc, "program outputs are tensors; " + quote(n->name) + " is a " + t.str(), v->length);
          continue;
        }
        // A parameter or builtin has no stage of its own: the program computes nothing for it.
        if (const Symbol* sym = n->target;
            sym && (sym->kind == SymbolKind::SizeParam || sym->kind == SymbolKind::ScalarParam || sym->kind == SymbolKind::Builtin)) {
          const char* what = sym->kind == SymbolKind::SizeParam     ? "a size parameter"
                             : sym->kind == SymbolKind::ScalarParam ? "a scalar parameter"
                                                                    : "a builtin";
          error(v->loc,
                "program outputs are tensors it takes in or computes; " + quote(n->name) + " is " + what + ": assign it to a name first (" +
                    n->name + "_out = " + n->name + ";)",
                v->length);
          continue;
        }
        if (!seen.insert(n->name).second) {
          error(v->loc, quote(n->name) + " is returned twice", v->length);
          continue;
        }
        out_.outputs.push_back(n->target);
      }
      continue;
    }
    checkStmt(*s, scope, /*inDef=*/false);
  }
  if (diags_.errorCount() == programErrorsBefore && out_.outputs.empty() && out_.updates.empty())
    error(p.name.loc, "program " + quote(p.name.name) + " has no effect: it returns nothing and updates no state",
          static_cast<uint32_t>(p.name.name.size()));
}

// ---- Files and modules ---------------------------------------------------------------------
// Checks what a def's text gets wrong whatever it is called with: duplicate parameters,
// statements that belong in programs, names used before they are defined, a missing return.
// (Types depend on the arguments: they are checked per call.)
static bool checkDefText(const DefDecl& d, const ModuleContext& ctx, DiagnosticEngine& diags) {
  unsigned before = diags.errorCount();
  const std::set<std::string> builtins{"world", "rank", "nranks", "next", "prev"};
  std::set<std::string> known = builtins;
  for (auto& p : d.params) {
    if (builtins.count(p.name))
      diags.error(p.loc, quote(p.name) + " is a built-in name and cannot be redefined", static_cast<uint32_t>(p.name.size()));
    else if (!known.insert(p.name).second)
      diags.error(p.loc, "parameter " + quote(p.name) + " of " + quote(d.name.name) + " is declared twice",
                  static_cast<uint32_t>(p.name.size()));
  }
  std::function<void(const Expr&)> names = [&](const Expr& e) {
    if (auto* n = e.as<NameRef>()) {
      if (!known.count(n->name) && !ctx.imports.count(n->name)) {
        std::string guess = diags.takeSuggestion() ? closestMatch(n->name, std::vector<std::string>(known.begin(), known.end())) : "";
        diags.error(n->loc, "use of undeclared name " + quote(n->name) + (guess.empty() ? "" : "; did you mean " + quote(guess) + "?"),
                    static_cast<uint32_t>(n->name.size()));
      }
    } else if (auto* u = e.as<Unary>()) {
      names(*u->operand);
    } else if (auto* b = e.as<Binary>()) {
      names(*b->lhs);
      names(*b->rhs);
    } else if (auto* c = e.as<Call>()) {
      for (auto& a : c->args)
        if (!(a.name.empty() && a.value->as<NameRef>() && (a.value->as<NameRef>()->name == "max" || a.value->as<NameRef>()->name == "min")))
          names(*a.value);
    }
  };
  const ReturnStmt* returned = nullptr;
  for (auto& s : d.body.stmts) {
    if (returned) {
      diags.error(s->loc, "statement after 'return'");
      break;
    }
    switch (s->kind) {
      case StmtKind::Decl:
      case StmtKind::Group:
      case StmtKind::Require:
      case StmtKind::Update:
        diags.error(s->loc, std::string(s->kind == StmtKind::Update  ? "'update' statements"
                                        : s->kind == StmtKind::Decl  ? "tensor declarations ('in', 'state')"
                                        : s->kind == StmtKind::Group ? "'group' statements"
                                                                     : "'require' statements") +
                                " belong in a program, not in a function");
        break;
      case StmtKind::Let: {
        auto& l = static_cast<const LetStmt&>(*s);
        names(*l.value);
        for (auto& n : l.names) known.insert(n.name);
        break;
      }
      case StmtKind::Return:
        for (auto& v : static_cast<const ReturnStmt&>(*s).values) names(*v);
        returned = static_cast<const ReturnStmt*>(s.get());
        break;
    }
  }
  if (!returned)
    diags.error(d.body.close, "function " + quote(d.name.name) + " must end with 'return'");
  else if (returned->values.empty())
    diags.error(returned->loc, "function " + quote(d.name.name) + " must return at least one value", 6);
  return diags.errorCount() == before;
}

namespace {

struct Loader {
  Compilation& comp;
  DiagnosticEngine& diags;
  const ModuleLoader& loadModule;
  std::deque<ModuleContext> contexts;
  std::unordered_map<std::string, ModuleContext*> byName;
  std::vector<std::string> loading;
  std::vector<std::pair<const DefDecl*, const ModuleContext*>> pendingText;  // defs to check once loaded

  ModuleContext* makeContext(ast::Module& m) {
    contexts.push_back({});
    ModuleContext& ctx = contexts.back();
    ctx.module = &m;
    for (auto& d : m.defs) {
      d->module = m.name;
      auto [it, fresh] = ctx.defs.emplace(d->name.name, d.get());
      if (fresh) pendingText.push_back({d.get(), &ctx});
      if (!fresh) {
        diags.error(d->name.loc, "redefinition of function " + quote(d->name.name), static_cast<uint32_t>(d->name.name.size()));
        diags.note(it->second->name.loc, "previous definition is here");
      }
    }
    for (auto& imp : m.imports) {
      if (ctx.imports.count(imp.name.name)) continue;
      if (ModuleContext* dep = load(imp.name)) ctx.imports[imp.name.name] = dep;
    }
    return &ctx;
  }

  ModuleContext* load(const NameLoc& name) {
    uint32_t len = static_cast<uint32_t>(name.name.size());
    if (auto it = byName.find(name.name); it != byName.end()) return it->second;
    if (auto at = std::find(loading.begin(), loading.end(), name.name); at != loading.end()) {
      std::string path;
      for (auto it = at; it != loading.end(); ++it) path += *it + " -> ";
      diags.error(name.loc, "import cycle: " + path + name.name, len);
      return nullptr;
    }
    auto m = loadModule(name.name, name.loc, len);
    if (!m) return nullptr;
    m->name = name.name;
    for (auto& p : m->programs)
      diags.error(p->name.loc, "module " + quote(name.name) + " defines a program; modules hold only functions ('def')");
    comp.modules.push_back(std::move(m));
    loading.push_back(name.name);
    ModuleContext* ctx = makeContext(*comp.modules.back());
    loading.pop_back();
    byName[name.name] = ctx;
    return ctx;
  }
};

}  // namespace

void check(Compilation& c, std::unique_ptr<ast::Module> m, const Options& opts, const ModuleLoader& load, DiagnosticEngine& diags) {
  if (m->programs.empty() && m->defs.empty()) {
    diags.error({m->file, 1, 1}, "no program or function in " + quotePath(c.sources.name(m->file)));
    return;
  }
  c.modules.push_back(std::move(m));
  ast::Module& main = *c.modules.front();

  Loader loader{c, diags, load, {}, {}, {}, {}};
  loader.loading.push_back(main.name);
  ModuleContext* mainCtx = loader.makeContext(main);
  if (diags.hasErrors()) return;
  // Every def's text, called or not; a def with errors is not instantiated again.
  std::set<const DefDecl*> badDefs;
  for (auto& [d, ctx] : loader.pendingText)
    if (!checkDefText(*d, *ctx, diags)) badDefs.insert(d);

  std::unordered_map<std::string, const ProgramDecl*> names;
  for (auto& p : main.programs) {
    auto [it, fresh] = names.emplace(p->name.name, p.get());
    if (!fresh) {
      diags.error(p->name.loc, "redefinition of program " + quote(p->name.name), static_cast<uint32_t>(p->name.name.size()));
      diags.note(it->second->name.loc, "previous definition is here");
    }
  }
  std::set<std::string> used;
  for (auto& p : main.programs) {
    for (auto& prm : p->params) used.insert(prm.name.name);
    c.programs.push_back(std::make_unique<CheckedProgram>());
    Checker checker(c, *c.programs.back(), diags, *mainCtx, opts);
    checker.badDefs_ = &badDefs;
    checker.checkProgram(*p);
    if (diags.tooManyErrors()) return;
  }
  for (auto& [name, value] : opts.defines)
    if (!used.count(name)) {
      std::string where = main.programs.empty() ? "the file defines no program" : "no program has a parameter " + quote(name);
      diags.error({}, "-D " + name + "=" + value + ": " + where);
    }
}

}  // namespace coconet::sema
