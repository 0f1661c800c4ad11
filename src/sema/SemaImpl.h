// Internal to sema: the checker class shared by Sema.cpp (names, sizes, defs, modules),
// Stmts.cpp (statements), Ops.cpp (typing of operators) and Builtins.cpp (built-in operations).
#pragma once

#include <set>
#include <unordered_map>

#include "sema/Sema.h"

namespace coconet::sema {

using namespace ast;

struct Scope {
  Scope* parent = nullptr;
  std::unordered_map<std::string, Symbol*> names;
  Symbol* find(const std::string& n) {
    for (Scope* s = this; s; s = s->parent) {
      auto it = s->names.find(n);
      if (it != s->names.end()) return it->second;
    }
    return nullptr;
  }
};

// Where unqualified and qualified calls resolve: the module whose code is being checked.
struct ModuleContext {
  const Module* module = nullptr;
  std::unordered_map<std::string, const DefDecl*> defs;
  std::unordered_map<std::string, const ModuleContext*> imports;
};

class Checker {
public:
  Checker(Compilation& c, CheckedProgram& out, DiagnosticEngine& d, const ModuleContext& main, const Options& opts)
      : comp_(c), out_(out), diags_(d), mainCtx_(main), opts_(opts) {}

  void checkProgram(const ProgramDecl& p);

  // ---- Sema.cpp ----
  Symbol* newSymbol(SymbolKind k, const std::string& name, SourceLoc loc, Type t);
  void declare(Scope& s, Symbol* sym);
  Type checkName(NameRef& e, Scope& scope);
  Type instantiate(Call& call, const DefDecl& def, const ModuleContext& ctx, Scope& scope);
  std::optional<SizeExpr> toSize(const Expr& e, Scope& scope, bool report = true);
  void addRequirement(SizeExpr lhs, BinaryOp op, SizeExpr rhs, std::string reason, SourceLoc loc, bool even = false);
  // (even: an even split of a sliced dimension, ast::Requirement::even)
  void requireDivisible(const SizeExpr& n, const GroupInfo* g, const std::string& what, SourceLoc loc, bool even);

  // ---- Stmts.cpp ----
  void checkStmt(Stmt& s, Scope& scope, bool inDef);
  void checkDecl(DeclStmt& d, Scope& scope);
  void checkGroup(GroupStmt& g, Scope& scope);
  void checkRequire(RequireStmt& r, Scope& scope);
  void checkLet(LetStmt& l, Scope& scope);
  void checkUpdate(UpdateStmt& u, Scope& scope);

  // ---- Ops.cpp ----
  Type checkExpr(Expr& e, Scope& scope);
  Type checkCall(Call& c, Scope& scope);
  Type singleResult(const Call& c, Type t);
  // Element-wise typing of operands (broadcast shapes, combine layouts and groups).
  Type elementwise(const std::vector<const Expr*>& operands, DType result, SourceLoc loc, uint32_t len, const std::string& what);
  std::optional<Shape> broadcast(const Shape& a, const Shape& b, SourceLoc loc, uint32_t len, const std::string& what);
  bool sameGroup(const Type& a, const Type& b, const GroupInfo*& out, SourceLoc loc, uint32_t len, const std::string& what);
  bool expectTensor(const Expr& e, const std::string& what);

  // ---- Builtins.cpp ----
  Type checkBuiltin(Call& c, BuiltinOp op, Scope& scope);

  void error(SourceLoc loc, const std::string& msg, uint32_t len = 1) { diags_.error(loc, msg, len); }
  void note(SourceLoc loc, const std::string& msg, uint32_t len = 1) { diags_.note(loc, msg, len); }

  Compilation& comp_;
  CheckedProgram& out_;
  DiagnosticEngine& diags_;
  const ModuleContext& mainCtx_;
  const Options& opts_;
  const ModuleContext* ctx_ = nullptr;  // module of the code being checked
  std::vector<const DefDecl*> instStack_;
  const Call* multiValueCall_ = nullptr;
  const std::set<const DefDecl*>* badDefs_ = nullptr;  // defs whose text has errors
  size_t inlined_ = 0;                                 // statements instantiated from defs so far
  bool inlineBudgetReported_ = false;                  // the value of the multiple assignment being checked
  std::unordered_map<const Symbol*, SourceLoc> updatedAt_;
  Scope globals_;
  const GroupInfo* world_ = nullptr;
};

// The value of a uniform constant expression (literals, bound parameters, arithmetic on
// them), if it has one at compile time.
std::optional<double> constantValue(const Expr& e);

// Renders an expression's syntax for messages ("H % 4 == 0").
std::string exprText(const Expr& e);

// An expression's syntax for messages, quoted and cut to 40 characters.
std::string describe(const Expr& e);

// A value's layout for messages: "uniform" for a value that lives in no group.
std::string layoutWord(const Type& t);

}  // namespace coconet::sema
