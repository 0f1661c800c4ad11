// Parse tree -> untyped AST. Literal values are decoded here (with range checks); everything
// about names, types and layouts is left to sema.
#include "frontend/ASTBuilder.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace coconet::frontend {
namespace {

using namespace ast;
using P = cnetgen::CnetParser;

class Builder {
public:
  Builder(uint32_t file, DiagnosticEngine& d) : file_(file), diags_(d) {}

  std::unique_ptr<Module> build(P::File_Context* ctx) {
    auto m = std::make_unique<Module>();
    m->file = file_;
    for (auto* imp : ctx->importDecl()) m->imports.push_back({nameOf(imp->IDENT())});
    for (auto* top : ctx->topDecl()) {
      if (auto* p = top->programDecl())
        m->programs.push_back(program(p));
      else if (auto* d = top->defDecl())
        m->defs.push_back(def(d));
    }
    return m;
  }

private:
  uint32_t file_;
  DiagnosticEngine& diags_;

  SourceLoc loc(antlr4::Token* t) const {
    return {file_, static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
  }
  SourceLoc loc(antlr4::tree::TerminalNode* n) const { return loc(n->getSymbol()); }
  SourceLoc loc(antlr4::ParserRuleContext* c) const { return loc(c->getStart()); }
  NameLoc nameOf(antlr4::tree::TerminalNode* n) const { return {n->getText(), loc(n)}; }

  std::unique_ptr<ProgramDecl> program(P::ProgramDeclContext* ctx) {
    auto p = std::make_unique<ProgramDecl>();
    p->loc = loc(ctx);
    p->name = nameOf(ctx->IDENT());
    for (auto* pc : ctx->param()) {
      Param prm;
      prm.name = nameOf(pc->IDENT());
      if (pc->SIZE()) {
        prm.isSize = true;
        prm.typeLoc = loc(pc->SIZE());
      } else {
        prm.dtype = dtypeOf(pc->dtype());
        prm.typeLoc = loc(pc->dtype());
      }
      if (pc->expr()) prm.defaultValue = expr(pc->expr());
      p->params.push_back(std::move(prm));
    }
    block(ctx->block(), p->body);
    return p;
  }

  std::unique_ptr<DefDecl> def(P::DefDeclContext* ctx) {
    auto d = std::make_unique<DefDecl>();
    d->loc = loc(ctx);
    auto ids = ctx->IDENT();
    d->name = nameOf(ids[0]);
    for (size_t i = 1; i < ids.size(); ++i) d->params.push_back(nameOf(ids[i]));
    block(ctx->block(), d->body);
    return d;
  }

  void block(P::BlockContext* ctx, Block& b) {
    b.open = loc(ctx->LBRACE());
    b.close = loc(ctx->RBRACE());
    for (auto* s : ctx->stmt())
      if (auto st = stmt(s)) b.stmts.push_back(std::move(st));
  }

  DType dtypeOf(P::DtypeContext* ctx) {
    auto t = dtypeFromName(ctx->getText());
    if (!t) internalError("unknown dtype token " + ctx->getText());
    return *t;
  }

  // The alternatives of `stmt` and `primary` are told apart by their first token (each one's
  // differs, by the grammar), not by dynamic_cast: the parse tree's classes derive from the ANTLR
  // runtime's in another shared library, where a failing cast compares type names as strings
  // (a tenth of checking a 100,000-statement program).
  template <class C> static C* as(antlr4::ParserRuleContext* ctx) { return static_cast<C*>(ctx); }

  StmtPtr stmt(P::StmtContext* ctx) {
    const size_t first = ctx->getStart()->getType();
    if (first == P::IN || first == P::STATE) {
      auto* c = as<P::DeclStmtContext>(ctx);
      auto s = std::make_unique<DeclStmt>(loc(c));
      s->role = c->role->getType() == P::STATE ? Role::State : Role::Input;
      auto ids = c->IDENT();
      s->name = nameOf(ids[0]);
      if (ids.size() > 1) s->group = nameOf(ids[1]);
      auto* tt = c->tensorType();
      s->dtype = dtypeOf(tt->dtype());
      s->dtypeLoc = loc(tt->dtype());
      s->hasShape = tt->LBRACK() != nullptr;
      for (auto* e : tt->expr()) s->dims.push_back(expr(e));
      if (auto* l = c->layout()) {
        s->layoutLoc = loc(l);
        if (l->LOCAL())
          s->layoutKind = Layout::Local;
        else if (l->SLICED()) {
          s->layoutKind = Layout::Sliced;
          s->slicedDim = expr(l->expr());
        }
      } else {
        s->layoutLoc = s->dtypeLoc;
      }
      return s;
    }
    if (first == P::GROUP) {
      auto* c = as<P::GroupStmtContext>(ctx);
      auto s = std::make_unique<GroupStmt>(loc(c));
      auto ids = c->IDENT();
      s->name = nameOf(ids[0]);
      s->function = nameOf(ids[1]);
      s->parent = nameOf(ids[2]);
      s->count = expr(c->expr());
      return s;
    }
    if (first == P::REQUIRE) {
      auto* c = as<P::RequireStmtContext>(ctx);
      return std::make_unique<RequireStmt>(loc(c), expr(c->expr()));
    }
    if (first == P::UPDATE) {
      auto* c = as<P::UpdateStmtContext>(ctx);
      auto s = std::make_unique<UpdateStmt>(loc(c));
      s->name = nameOf(c->IDENT());
      s->value = expr(c->expr());
      return s;
    }
    if (first == P::IDENT) {
      auto* c = as<P::LetStmtContext>(ctx);
      auto s = std::make_unique<LetStmt>(loc(c));
      for (auto* id : c->IDENT()) s->names.push_back(nameOf(id));
      s->value = expr(c->expr());
      return s;
    }
    if (first == P::RETURN) {
      auto* c = as<P::ReturnStmtContext>(ctx);
      auto s = std::make_unique<ReturnStmt>(loc(c));
      for (auto* e : c->expr()) s->values.push_back(expr(e));
      return s;
    }
    internalError("unknown statement alternative");
  }

  // ---- Expressions -----------------------------------------------------------------------
  ExprPtr expr(P::ExprContext* ctx) { return chain(ctx->orExpr()); }

  static BinaryOp binop(size_t tokenType) {
    switch (tokenType) {
      case P::PLUS: return BinaryOp::Add;
      case P::MINUS: return BinaryOp::Sub;
      case P::STAR: return BinaryOp::Mul;
      case P::SLASH: return BinaryOp::Div;
      case P::PERCENT: return BinaryOp::Mod;
      case P::LT: return BinaryOp::Lt;
      case P::LE: return BinaryOp::Le;
      case P::GT: return BinaryOp::Gt;
      case P::GE: return BinaryOp::Ge;
      case P::EQ: return BinaryOp::Eq;
      case P::NE: return BinaryOp::Ne;
      case P::ANDAND: return BinaryOp::And;
      case P::OROR: return BinaryOp::Or;
    }
    internalError("unknown binary operator token");
  }

  // One precedence level: operands and operator tokens alternate among the children; fold
  // them left to right (a loop, so a 100,000-term sum costs no parser recursion).
  ExprPtr chain(antlr4::ParserRuleContext* ctx) {
    if (ctx->getRuleIndex() == P::RuleUnaryExpr) return unary(as<P::UnaryExprContext>(ctx));
    // A level's children alternate: operand, operator token, operand, ...
    ExprPtr acc;
    antlr4::Token* pendingOp = nullptr;
    for (size_t i = 0; i < ctx->children.size(); ++i) {
      auto* child = ctx->children[i];
      if (i % 2) {
        pendingOp = static_cast<antlr4::tree::TerminalNode*>(child)->getSymbol();
        continue;
      }
      ExprPtr operand = chain(static_cast<antlr4::ParserRuleContext*>(child));
      if (!acc) {
        acc = std::move(operand);
      } else {
        auto b = std::make_unique<Binary>(loc(pendingOp), binop(pendingOp->getType()), std::move(acc), std::move(operand));
        b->length = static_cast<uint32_t>(pendingOp->getText().size());
        acc = std::move(b);
      }
    }
    if (!acc) internalError("empty expression in parse tree");
    return acc;
  }

  ExprPtr unary(P::UnaryExprContext* ctx) {
    if (ctx->op) {
      auto op = ctx->op->getType() == P::MINUS ? UnaryOp::Neg : UnaryOp::Not;
      return std::make_unique<Unary>(loc(ctx->op), op, unary(ctx->unaryExpr()));
    }
    return primary(ctx->primary());
  }

  ExprPtr primary(P::PrimaryContext* ctx) {
    const size_t first = ctx->getStart()->getType();
    // A call ends with ')' (a parenthesized expression starts with '('); a name does not.
    const bool call = first != P::LPAREN && ctx->getStop()->getType() == P::RPAREN;
    if (first == P::INT) {
      auto* c = as<P::IntLitContext>(ctx);
      std::string text = c->getText();
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size())
        diags_.error(loc(c), "integer literal " + quote(text) + " is too large", static_cast<uint32_t>(text.size()));
      auto e = std::make_unique<IntLit>(loc(c), v, text);
      e->length = static_cast<uint32_t>(text.size());
      return e;
    }
    if (first == P::FLOAT) {
      auto* c = as<P::FloatLitContext>(ctx);
      std::string text = c->getText();
      errno = 0;
      double v = std::strtod(text.c_str(), nullptr);
      if (std::isinf(v) || (errno == ERANGE && std::fabs(v) > 1.0))
        diags_.error(loc(c), "floating-point literal " + quote(text) + " is out of range", static_cast<uint32_t>(text.size()));
      auto e = std::make_unique<FloatLit>(loc(c), v, text);
      e->length = static_cast<uint32_t>(text.size());
      return e;
    }
    if (first == P::TRUE || first == P::FALSE) {
      auto* c = as<P::BoolLitContext>(ctx);
      auto e = std::make_unique<BoolLit>(loc(c), c->TRUE() != nullptr);
      e->length = static_cast<uint32_t>(c->getText().size());
      return e;
    }
    if (first == P::IDENT && !call) {
      auto* c = as<P::NameRefContext>(ctx);
      auto* id = c->IDENT();
      auto* m = c->member();
      auto e = std::make_unique<NameRef>(loc(id), id->getText(), m ? m->getText() : "", m ? loc(m) : SourceLoc{});
      e->length = static_cast<uint32_t>(e->spelling().size());
      return e;
    }
    if (first == P::LPAREN) return expr(as<P::ParenContext>(ctx)->expr());
    {
      auto* c = as<P::CallContext>(ctx);
      std::string q, callee;
      SourceLoc at = loc(c);
      if (auto* dt = c->dtype()) {
        callee = dt->getText();
      } else {
        auto ids = c->IDENT();
        if (ids.size() > 1) {
          q = ids[0]->getText();
          callee = ids[1]->getText();
        } else {
          callee = ids[0]->getText();
        }
      }
      auto call = std::make_unique<Call>(at, q, callee);
      call->length = static_cast<uint32_t>(call->spelling().size());
      for (auto* a : c->arg()) {
        Arg arg;
        if (a->opTok) {
          auto op = a->opTok->getType() == P::PLUS ? ReduceOp::Sum : ReduceOp::Prod;
          arg.value = std::make_unique<OpToken>(loc(a->opTok), op);
        } else {
          if (a->IDENT()) arg.name = a->IDENT()->getText(), arg.nameLoc = loc(a->IDENT());
          arg.value = expr(a->expr());
        }
        call->args.push_back(std::move(arg));
      }
      return call;
    }
    internalError("unknown primary alternative");
  }
};

}  // namespace

std::unique_ptr<ast::Module> buildAST(cnetgen::CnetParser::File_Context* tree, uint32_t file, DiagnosticEngine& diags) {
  return Builder(file, diags).build(tree);
}

}  // namespace coconet::frontend
