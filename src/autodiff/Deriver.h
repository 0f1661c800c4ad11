// The backward program's deriver, shared by Backward.cpp (the sweep, contributions) and
// Adjoints.cpp (each operation's adjoint).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autodiff/Backward.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace coconet::autodiff::detail {

using namespace ir;

inline bool floating(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }

class Deriver {
public:
  Deriver(const Program& f, DiagnosticEngine& d) : f_(f), d_(d), b_(clone(f)) {}

  std::optional<Program> run(const std::vector<int>& wrt, const std::vector<Recompute>& recompute);

private:
  const Program& f_;
  DiagnosticEngine& d_;
  Program b_;
  std::vector<std::vector<int>> contrib_;  // per forward stage: contributions to its adjoint (b_ ids)
  std::vector<bool> needs_;                // per forward stage: depends on an input differentiated
  bool failed_ = false;

  // A forward stage's type, with b_'s groups (b_ is f_'s clone: the forward's stages keep their ids).
  TensorType fwdType(int id) const { return b_.stages[id].type; }
  const TensorType& type(int id) const { return b_.stages[id].type; }
  bool isLocal(const TensorType& t) const { return t.group && t.layout.kind == Layout::Local; }
  bool isReplicated(const TensorType& t) const { return !t.group || t.layout.kind == Layout::Replicated; }

  void unsupported(const Stage& s, const std::string& why) {
    if (failed_) return;
    failed_ = true;
    d_.error(s.loc, "cannot differentiate " + describe(s) + " '" + s.name + "': " + why);
  }

  int add(Stage s) {
    s.name = b_.freshName(s.name);
    b_.stages.push_back(std::move(s));
    return static_cast<int>(b_.stages.size()) - 1;
  }
  static Stage make(StageKind k, const std::string& name, TensorType t, std::vector<int> operands, SourceLoc loc) {
    Stage s;
    s.kind = k;
    s.name = name;
    s.type = std::move(t);
    s.operands = std::move(operands);
    s.loc = loc;
    return s;
  }
  // A compute stage of type t over the operands with the expression e (only the operands e reads
  // stay: an adjoint that does not need a forward value lets that value go unrecomputed).
  int compute(const std::string& name, TensorType t, std::vector<int> operands, Expr e, SourceLoc loc) {
    std::vector<int> index(operands.size(), -1), kept;
    for (auto& n : e.nodes)
      if (n.op == EOp::Operand) {
        if (index[n.index] < 0) index[n.index] = static_cast<int>(kept.size()), kept.push_back(operands[n.index]);
        n.index = index[n.index];
      }
    Stage s = make(StageKind::Compute, name, std::move(t), std::move(kept), loc);
    s.expr = std::move(e);
    return add(std::move(s));
  }
  // x in type t (another layout or dtype; the same shape): element by element.
  int convert(int x, TensorType t, const std::string& name, SourceLoc loc) {
    Expr e;
    int o = e.add(ENode::make(EOp::Operand, type(x).dtype, {}, 0));
    if (t.dtype != type(x).dtype) e.add(ENode::make(EOp::Cast, t.dtype, {o}));
    return compute(name, std::move(t), {x}, std::move(e), loc);
  }
  // x times the size of its group (the adjoint of reducing a replicated value over the group).
  int timesGroupSize(int x, const std::string& name, SourceLoc loc) {
    Expr e;
    int o = e.add(ENode::make(EOp::Operand, type(x).dtype, {}, 0));
    ENode n = ENode::make(EOp::GroupSize, DType::I64);
    n.group = type(x).group;
    int g = e.add(n);
    e.add(ENode::make(EOp::Mul, type(x).dtype, {o, g}));
    return compute(name, type(x), {x}, std::move(e), loc);
  }

  bool saveReads(const std::vector<Recompute>& recompute);
  void contribute(int target, int c, const Stage& consumer);
  int reduceTo(int g, const TensorType& want, const std::string& name, SourceLoc loc, const Stage& s);
  int adjointOf(int id);
  void computeAdjoint(const Stage& s, int ds);
  void reduceAdjoint(const Stage& s, int ds);
  void matmulAdjoint(const Stage& s, int ds);
  void collectiveAdjoint(const Stage& s, int ds);
  void combineAdjoint(const Stage& s, int g, const std::string& name);
  int wholeOfReduction(const Stage& s, int v, const std::string& name);
  void shapeAdjoint(const Stage& s, int ds);
  void rowAdjoint(const Stage& s, int ds);
  void exchangeAdjoint(const Stage& s, int ds);
  void embeddingAdjoint(const Stage& s, int ds);
  int rowReduce(int x, ReduceKind k, const std::string& name, SourceLoc loc);
  int permute(int x, const std::vector<int>& perm, const std::string& name, SourceLoc loc);
  int reshape(int x, const Shape& shape, Layout layout, const std::string& name, SourceLoc loc);
  std::optional<Layout> matmulLayout(const TensorType& a, const TensorType& b, int ry, bool gemv) const;
};

}  // namespace coconet::autodiff::detail
