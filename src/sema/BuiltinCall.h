// The typing of one call of a built-in operation, shared by Builtins.cpp (math, reductions,
// matmul, collectives) and ShapeOps.cpp (permute, reshape, concat, narrow, squeeze).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sema/SemaImpl.h"

namespace coconet::sema::builtin {

// A call of a built-in operation: its arguments, positional and named, and the checks that
// several operations share. Each member function types one group of operations.
struct BuiltinCall {
  Checker& ck;
  Call& c;
  BuiltinOp op;
  Scope& scope;
  uint32_t len;
  const std::string name;  // quoted, for messages
  std::vector<Expr*> pos;
  std::unordered_map<std::string, Expr*> named;

  BuiltinCall(Checker& ck, Call& c, BuiltinOp op, Scope& scope) : ck(ck), c(c), op(op), scope(scope), len(c.length), name(quote(c.callee)) {
    for (auto& a : c.args) (a.name.empty() ? pos.push_back(a.value.get()) : void(named[a.name] = a.value.get()));
  }

  void error(SourceLoc loc, const std::string& msg, uint32_t length = 1) { ck.error(loc, msg, length); }

  // Types the arguments: the reduction operator of allreduce, reduce_scatter and reduce, then
  // every argument, each a tensor but send's peer. False after an error.
  bool checkArguments(Scope& scope);
  bool constOrParam(Expr* e, const char* what);
  bool scalarArg(Expr* e, const char* what, bool integer);
  std::optional<DType> floatOperand(Expr* e);
  std::optional<int64_t> intLiteral(const Expr* e, const std::string& what);
  bool dimArg(const Type& x, int& dim, const char* key = "dim");
  std::optional<SizeExpr> positiveSize(Expr* e, const std::string& what);
  bool collectiveInput(Expr* e);

  Type mathFunction();
  Type absRelu();
  Type binaryMath();
  Type select();
  Type dropout();
  Type reduction();
  Type normalization();
  Type matmul();
  Type embedding();
  Type reduceCollective();
  Type allGather();
  Type broadcastCollective();
  Type allToAll();
  Type send();
  Type transpose();
  Type permute();
  Type squeeze();
  Type reshape();
  Type concat();
  Type narrow();
};

}  // namespace coconet::sema::builtin
