// The abstract syntax tree of .cnet programs.
//
// The parser builds it untyped; sema (src/sema) resolves names, instantiates calls of `def`
// functions and fills in every expression's Type. Node kinds are listed once in the X-macros
// below so that the printer and the cloner cannot drift apart. Every node keeps its SourceLoc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ast/Types.h"
#include "support/Diagnostics.h"

namespace coconet::ast {

// ---- Expressions ---------------------------------------------------------------------------
// clang-format off
#define COCONET_EXPR_KINDS(X)                                                     \
  X(IntLit)    /* an integer literal                                            */ \
  X(FloatLit)  /* a floating-point literal                                      */ \
  X(BoolLit)   /* true / false                                                  */ \
  X(NameRef)   /* a name, or `base.member` (stage.next, world.size)             */ \
  X(OpToken)   /* a reduction operator written as an argument: allreduce(+, y) */ \
  X(Unary)     /* -x, !x                                                        */ \
  X(Binary)    /* arithmetic, comparison and logic                              */ \
  X(Call)      /* a built-in operation, a cast, or a call of a `def`            */
// clang-format on

enum class ExprKind : uint8_t {
#define X(k) k,
  COCONET_EXPR_KINDS(X)
#undef X
};

enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
const char* unaryOpSpelling(UnaryOp op);
const char* binaryOpSpelling(BinaryOp op);

// A condition on sizes that must hold at run time, lhs op rhs: stated by `requires`, implied by
// the program (a group split into parts, an all_to_all's blocks) or added by a schedule. Sema
// collects them, the IR carries them, the backend checks them in run().
//
// An `even` one says that a sliced dimension divides evenly among its group's ranks (a sliced
// declaration, reduce_scatter, split, slice). The language does not need it: a sliced dimension
// is cut into blocks as ir::sliceBlock says, evenly or not, and the interpreter and verify take
// any size. The CUDA code takes uneven blocks too, but for its overlaps of a sliced value (its
// device-API forms run their NCCL calls where a run's slices are uneven). Where a plan has such
// an overlap the backend checks the even requirements as any other, and runs the program
// without its schedule where that takes the uneven blocks (Emitter::findEvenNeed); elsewhere
// it drops them.
struct Requirement {
  SizeExpr lhs;
  BinaryOp op = BinaryOp::Eq;
  SizeExpr rhs;
  std::string reason;  // "stated", or what implies it
  SourceLoc loc;
  bool even = false;
  std::string str() const;
  // How `emit` prints it: the condition, the reason, and for an even one that only the CUDA
  // code's fused forms need it.
  std::string described() const { return str() + "  (" + reason + (even ? "; even for the CUDA code's fused forms" : "") + ")"; }
  // The same condition (the reason and place aside).
  bool sameCondition(const Requirement& o) const { return op == o.op && lhs == o.lhs && rhs == o.rhs; }
};
bool isComparison(BinaryOp op);
bool isLogical(BinaryOp op);

struct Stmt;
struct DefDecl;
struct Symbol;
using StmtPtr = std::unique_ptr<Stmt>;

struct Expr {
  explicit Expr(ExprKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  SourceLoc loc;
  uint32_t length = 1;  // source extent of the leading token, for underlining
  Type type;            // set by sema
  template <class T> T* as() { return T::classof(this) ? static_cast<T*>(this) : nullptr; }
  template <class T> const T* as() const { return T::classof(this) ? static_cast<const T*>(this) : nullptr; }
};
using ExprPtr = std::unique_ptr<Expr>;

#define COCONET_EXPR_CLASSOF(K) \
  static bool classof(const Expr* e) { return e->kind == ExprKind::K; }

struct IntLit : Expr {
  IntLit(SourceLoc l, int64_t v, std::string t) : Expr(ExprKind::IntLit, l), value(v), text(std::move(t)) {}
  COCONET_EXPR_CLASSOF(IntLit)
  int64_t value;
  std::string text;
};

struct FloatLit : Expr {
  FloatLit(SourceLoc l, double v, std::string t) : Expr(ExprKind::FloatLit, l), value(v), text(std::move(t)) {}
  COCONET_EXPR_CLASSOF(FloatLit)
  double value;
  std::string text;
};

struct BoolLit : Expr {
  BoolLit(SourceLoc l, bool v) : Expr(ExprKind::BoolLit, l), value(v) {}
  COCONET_EXPR_CLASSOF(BoolLit)
  bool value;
};

struct NameRef : Expr {
  NameRef(SourceLoc l, std::string n, std::string m, SourceLoc ml)
      : Expr(ExprKind::NameRef, l), name(std::move(n)), member(std::move(m)), memberLoc(ml) {}
  COCONET_EXPR_CLASSOF(NameRef)
  std::string name;
  std::string member;  // empty unless written `name.member`
  SourceLoc memberLoc;
  const Symbol* target = nullptr;  // set by sema for plain names
  std::string spelling() const { return member.empty() ? name : name + "." + member; }
};

struct OpToken : Expr {
  OpToken(SourceLoc l, ReduceOp o) : Expr(ExprKind::OpToken, l), op(o) {}
  COCONET_EXPR_CLASSOF(OpToken)
  ReduceOp op;
};

struct Unary : Expr {
  Unary(SourceLoc l, UnaryOp o, ExprPtr e) : Expr(ExprKind::Unary, l), op(o), operand(std::move(e)) {}
  COCONET_EXPR_CLASSOF(Unary)
  UnaryOp op;
  ExprPtr operand;
};

struct Binary : Expr {
  Binary(SourceLoc l, BinaryOp o, ExprPtr a, ExprPtr b) : Expr(ExprKind::Binary, l), op(o), lhs(std::move(a)), rhs(std::move(b)) {}
  COCONET_EXPR_CLASSOF(Binary)
  BinaryOp op;
  ExprPtr lhs, rhs;
};

struct Arg {
  std::string name;  // empty for positional arguments
  SourceLoc nameLoc;
  ExprPtr value;
};

// Built-in operations (sema/Ops.cpp types each one). Listed once: name, spelling; the math
// functions of one float tensor (sqrt, exp, gelu, ...) in UnaryMath.def.
// clang-format off
#define COCONET_BUILTIN_OPS(X)                                                          \
  X(Cast, "cast") X(Abs, "abs") X(Relu, "relu")                                          \
  X(Pow, "pow") X(Min, "min") X(Max, "max") X(Select, "select") X(Dropout, "dropout")     \
  X(Sum, "sum") X(Mean, "mean") X(Norm, "norm") X(ReduceMax, "max") X(ReduceMin, "min")   \
  X(Softmax, "softmax") X(Layernorm, "layernorm") X(Rmsnorm, "rmsnorm") X(Matmul, "matmul")\
  X(Gemv, "gemv")                                                                        \
  X(Embedding, "embedding") X(AllReduce, "allreduce") X(ReduceScatter, "reduce_scatter")  \
  X(AllGather, "all_gather") X(Broadcast, "broadcast") X(Reduce, "reduce")                \
  X(AllToAll, "all_to_all") X(Send, "send") X(Transpose, "transpose")   \
  X(Unsqueeze, "unsqueeze") X(Squeeze, "squeeze") X(Permute, "permute")                  \
  X(Reshape, "reshape") X(View, "view") X(Concat, "concat") X(Narrow, "narrow")
// clang-format on

enum class BuiltinOp : uint8_t {
  None,
#define X(k, s) k,
  COCONET_BUILTIN_OPS(X)
#undef X
#define COCONET_UNARY_MATH(k, ...) k,
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
};
// Whether op is one of UnaryMath.def's functions.
bool isUnaryMath(BuiltinOp op);
const char* builtinOpName(BuiltinOp op);
bool isCollective(BuiltinOp op);

struct Call : Expr {
  Call(SourceLoc l, std::string q, std::string c) : Expr(ExprKind::Call, l), qualifier(std::move(q)), callee(std::move(c)) {}
  COCONET_EXPR_CLASSOF(Call)
  std::string qualifier;  // module name of `optim.adam(...)`, else empty
  std::string callee;     // operation or def name; a dtype name for casts
  std::vector<Arg> args;

  // Set by sema.
  BuiltinOp op = BuiltinOp::None;
  DType castTo = DType::F32;           // Cast
  ReduceOp reduceOp = ReduceOp::Sum;   // collectives and reductions that take one
  int dim = -1;                        // reductions, concat, narrow, all_to_all: the dimension; -1: whole tensor
  std::vector<int> perm;               // transpose, permute: result dimension k is operand dimension perm[k]
  SizeExpr start;                      // narrow: the first index taken
  bool keepdim = false;                // reductions: the reduced dimensions stay, with length 1
  const DefDecl* def = nullptr;        // a call of a def: its instantiated body follows
  std::vector<StmtPtr> body;           // the def's statements, typed for this call
  std::vector<const Symbol*> params;   // the def's parameters as bound in this call
  std::vector<const Symbol*> results;  // the def's returned values
  std::string spelling() const { return qualifier.empty() ? callee : qualifier + "." + callee; }
};

// ---- Statements ----------------------------------------------------------------------------
// clang-format off
#define COCONET_STMT_KINDS(X)                                                           \
  X(Decl)     /* in / state: a tensor the program takes (state is updated in place)   */ \
  X(Group)    /* group g = split(parent, K): a process group                          */ \
  X(Require)  /* require <size condition>: a constraint on sizes checked at run time  */ \
  X(Let)      /* name = expr (or a, b = def_call(...)): a named statement              */ \
  X(Update)   /* update s = expr: the new value of state s                            */ \
  X(Return)   /* return a, b: the program's outputs / a def's results                 */
// clang-format on

enum class StmtKind : uint8_t {
#define X(k) k,
  COCONET_STMT_KINDS(X)
#undef X
};

struct Stmt {
  Stmt(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  SourceLoc loc;
  template <class T> T* as() { return T::classof(this) ? static_cast<T*>(this) : nullptr; }
  template <class T> const T* as() const { return T::classof(this) ? static_cast<const T*>(this) : nullptr; }
};

#define COCONET_STMT_CLASSOF(K) \
  static bool classof(const Stmt* s) { return s->kind == StmtKind::K; }

struct NameLoc {
  std::string name;
  SourceLoc loc;
};

enum class Role : uint8_t { Input, State };

struct DeclStmt : Stmt {
  DeclStmt(SourceLoc l) : Stmt(StmtKind::Decl, l) {}
  COCONET_STMT_CLASSOF(Decl)
  Role role = Role::Input;
  NameLoc name;
  DType dtype = DType::F32;
  SourceLoc dtypeLoc;
  bool hasShape = false;
  std::vector<ExprPtr> dims;
  Layout::Kind layoutKind = Layout::Replicated;
  SourceLoc layoutLoc;
  ExprPtr slicedDim;               // sliced(<expr>)
  NameLoc group;                   // empty name: the world
  const Symbol* symbol = nullptr;  // set by sema
};

struct GroupStmt : Stmt {
  GroupStmt(SourceLoc l) : Stmt(StmtKind::Group, l) {}
  COCONET_STMT_CLASSOF(Group)
  NameLoc name, function, parent;
  ExprPtr count;
  const Symbol* symbol = nullptr;
};

struct RequireStmt : Stmt {
  RequireStmt(SourceLoc l, ExprPtr c) : Stmt(StmtKind::Require, l), cond(std::move(c)) {}
  COCONET_STMT_CLASSOF(Require)
  ExprPtr cond;
};

struct LetStmt : Stmt {
  LetStmt(SourceLoc l) : Stmt(StmtKind::Let, l) {}
  COCONET_STMT_CLASSOF(Let)
  std::vector<NameLoc> names;
  ExprPtr value;
  std::vector<const Symbol*> symbols;  // set by sema, one per name
};

struct UpdateStmt : Stmt {
  UpdateStmt(SourceLoc l) : Stmt(StmtKind::Update, l) {}
  COCONET_STMT_CLASSOF(Update)
  NameLoc name;
  ExprPtr value;
  const Symbol* state = nullptr;   // the state declaration
  const Symbol* symbol = nullptr;  // the updated value
};

struct ReturnStmt : Stmt {
  ReturnStmt(SourceLoc l) : Stmt(StmtKind::Return, l) {}
  COCONET_STMT_CLASSOF(Return)
  std::vector<ExprPtr> values;
};

// ---- Declarations --------------------------------------------------------------------------
struct Param {
  NameLoc name;
  bool isSize = false;
  DType dtype = DType::I64;  // scalar parameters
  SourceLoc typeLoc;
  ExprPtr defaultValue;
  // Set by sema: a value bound by -D or a default. Sizes bound to a constant fold into shapes.
  bool bound = false;
  double value = 0;    // floating-point and bool parameters
  int64_t ivalue = 0;  // sizes and integer parameters (exact)
  bool boundOnCommandLine = false;
  const Symbol* symbol = nullptr;
};

struct Block {
  SourceLoc open, close;
  std::vector<StmtPtr> stmts;
};

struct ProgramDecl {
  NameLoc name;
  SourceLoc loc;
  std::vector<Param> params;
  Block body;
};

struct DefDecl {
  NameLoc name;
  SourceLoc loc;
  std::vector<NameLoc> params;
  Block body;
  std::string module;  // the module that defines it ("" for the main file)
};

struct Import {
  NameLoc name;
};

struct Module {
  uint32_t file = 0;
  std::string name;  // module name for imports, file stem otherwise
  std::vector<Import> imports;
  std::vector<std::unique_ptr<ProgramDecl>> programs;
  std::vector<std::unique_ptr<DefDecl>> defs;
};

// ---- Symbols (what names resolve to; owned by sema's CheckedProgram) -----------------------
enum class SymbolKind : uint8_t {
  SizeParam,    // a `size` parameter
  ScalarParam,  // a scalar parameter
  Input,        // `in`
  State,        // `state` (its value before any update)
  Group,        // world or a `group` statement
  Value,        // a named statement, a def parameter inside an instantiation, an update
  Builtin,      // rank, nranks
};

struct Symbol {
  SymbolKind kind;
  std::string name;
  SourceLoc loc;
  Type type;
  const GroupInfo* group = nullptr;  // Group symbols
  const Stmt* stmt = nullptr;        // the defining statement, if any
  const Param* param = nullptr;      // parameters
  const Symbol* state = nullptr;     // Value made by `update s`: the state it updates
  const Expr* arg = nullptr;         // a def parameter: the argument bound to it in this call
};

// Deep copy of syntax (types and resolutions are not copied): used to instantiate defs.
ExprPtr cloneExpr(const Expr& e);
StmtPtr cloneStmt(const Stmt& s);

}  // namespace coconet::ast
