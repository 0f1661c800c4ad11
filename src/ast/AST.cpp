#include "ast/AST.h"

namespace coconet::ast {

const char* unaryOpSpelling(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

const char* binaryOpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

std::string Requirement::str() const { return lhs.str() + " " + binaryOpSpelling(op) + " " + rhs.str(); }

bool isComparison(BinaryOp op) { return op >= BinaryOp::Lt && op <= BinaryOp::Ne; }
bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

const char* builtinOpName(BuiltinOp op) {
  switch (op) {
    case BuiltinOp::None: return "<none>";
#define X(k, s) \
  case BuiltinOp::k: return s;
      COCONET_BUILTIN_OPS(X)
#undef X
#define COCONET_UNARY_MATH(k, s, ...) \
  case BuiltinOp::k:                  \
    return s;
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
  }
  return "?";
}

bool isUnaryMath(BuiltinOp op) {
  switch (op) {
#define COCONET_UNARY_MATH(k, ...) case BuiltinOp::k:
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    return true;
    default: return false;
  }
}

bool isCollective(BuiltinOp op) {
  switch (op) {
    case BuiltinOp::AllReduce:
    case BuiltinOp::ReduceScatter:
    case BuiltinOp::AllGather:
    case BuiltinOp::Broadcast:
    case BuiltinOp::Reduce:
    case BuiltinOp::AllToAll:
    case BuiltinOp::Send: return true;
    default: return false;
  }
}

// ---- Cloning (syntax only) ---------------------------------------------------------------
static ExprPtr cloneOpt(const ExprPtr& e) { return e ? cloneExpr(*e) : nullptr; }

ExprPtr cloneExpr(const Expr& e) {
  ExprPtr r;
  switch (e.kind) {
    case ExprKind::IntLit: {
      auto& x = static_cast<const IntLit&>(e);
      r = std::make_unique<IntLit>(x.loc, x.value, x.text);
      break;
    }
    case ExprKind::FloatLit: {
      auto& x = static_cast<const FloatLit&>(e);
      r = std::make_unique<FloatLit>(x.loc, x.value, x.text);
      break;
    }
    case ExprKind::BoolLit: {
      auto& x = static_cast<const BoolLit&>(e);
      r = std::make_unique<BoolLit>(x.loc, x.value);
      break;
    }
    case ExprKind::NameRef: {
      auto& x = static_cast<const NameRef&>(e);
      r = std::make_unique<NameRef>(x.loc, x.name, x.member, x.memberLoc);
      break;
    }
    case ExprKind::OpToken: {
      auto& x = static_cast<const OpToken&>(e);
      r = std::make_unique<OpToken>(x.loc, x.op);
      break;
    }
    case ExprKind::Unary: {
      auto& x = static_cast<const Unary&>(e);
      r = std::make_unique<Unary>(x.loc, x.op, cloneExpr(*x.operand));
      break;
    }
    case ExprKind::Binary: {
      auto& x = static_cast<const Binary&>(e);
      r = std::make_unique<Binary>(x.loc, x.op, cloneExpr(*x.lhs), cloneExpr(*x.rhs));
      break;
    }
    case ExprKind::Call: {
      auto& x = static_cast<const Call&>(e);
      auto c = std::make_unique<Call>(x.loc, x.qualifier, x.callee);
      for (auto& a : x.args) c->args.push_back({a.name, a.nameLoc, cloneExpr(*a.value)});
      r = std::move(c);
      break;
    }
  }
  r->length = e.length;
  return r;
}

StmtPtr cloneStmt(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Decl: {
      auto& x = static_cast<const DeclStmt&>(s);
      auto r = std::make_unique<DeclStmt>(x.loc);
      r->role = x.role;
      r->name = x.name;
      r->dtype = x.dtype;
      r->dtypeLoc = x.dtypeLoc;
      r->hasShape = x.hasShape;
      for (auto& d : x.dims) r->dims.push_back(cloneExpr(*d));
      r->layoutKind = x.layoutKind;
      r->layoutLoc = x.layoutLoc;
      r->slicedDim = cloneOpt(x.slicedDim);
      r->group = x.group;
      return r;
    }
    case StmtKind::Group: {
      auto& x = static_cast<const GroupStmt&>(s);
      auto r = std::make_unique<GroupStmt>(x.loc);
      r->name = x.name;
      r->function = x.function;
      r->parent = x.parent;
      r->count = cloneOpt(x.count);
      return r;
    }
    case StmtKind::Require: {
      auto& x = static_cast<const RequireStmt&>(s);
      return std::make_unique<RequireStmt>(x.loc, cloneExpr(*x.cond));
    }
    case StmtKind::Let: {
      auto& x = static_cast<const LetStmt&>(s);
      auto r = std::make_unique<LetStmt>(x.loc);
      r->names = x.names;
      r->value = cloneExpr(*x.value);
      return r;
    }
    case StmtKind::Update: {
      auto& x = static_cast<const UpdateStmt&>(s);
      auto r = std::make_unique<UpdateStmt>(x.loc);
      r->name = x.name;
      r->value = cloneExpr(*x.value);
      return r;
    }
    case StmtKind::Return: {
      auto& x = static_cast<const ReturnStmt&>(s);
      auto r = std::make_unique<ReturnStmt>(x.loc);
      for (auto& v : x.values) r->values.push_back(cloneExpr(*v));
      return r;
    }
  }
  internalError("cloneStmt: unknown statement kind");
}

}  // namespace coconet::ast
