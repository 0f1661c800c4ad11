// Building element-wise expressions node by node, arithmetic in one compute type (f32 or f64),
// for the adjoints (ExprAdjoint.cpp, RowAdjoints.cpp).
#pragma once

#include <utility>

#include "ir/IR.h"

namespace coconet::autodiff::detail {

struct ExprBuilder {
  ir::Expr e;
  ir::DType cd;
  explicit ExprBuilder(ir::DType computeType) : cd(computeType) {}

  // operand `index` (of type t) in the compute type
  int in(int index, ir::DType t) {
    return e.add(ir::ENode::make(ir::EOp::Cast, cd, {e.add(ir::ENode::make(ir::EOp::Operand, t, {}, index))}));
  }
  int c(double v) {
    ir::ENode n = ir::ENode::make(ir::EOp::Const, cd);
    n.value = v;
    return e.add(n);
  }
  int op(ir::EOp o, int a, int b) { return e.add(ir::ENode::make(o, cd, {a, b})); }
  int un(ir::EOp o, int a) { return e.add(ir::ENode::make(o, cd, {a})); }
  int sel(int cond, int a, int b) { return e.add(ir::ENode::make(ir::EOp::Select, cd, {cond, a, b})); }
  int cmp(ir::EOp o, int a, int b) { return e.add(ir::ENode::make(o, ir::DType::Bool, {a, b})); }
  // a scalar that is a constant or a program parameter
  int scalar(const ir::ScalarRef& r) {
    if (r.param.empty()) return c(r.value);
    ir::ENode n = ir::ENode::make(ir::EOp::Param, ir::DType::F32);
    n.name = r.param;
    return e.add(ir::ENode::make(ir::EOp::Cast, cd, {e.add(n)}));
  }
  // the expression, its last node cast to t
  ir::Expr done(ir::DType t) {
    int last = static_cast<int>(e.nodes.size()) - 1;
    if (t != cd) e.add(ir::ENode::make(ir::EOp::Cast, t, {last}));
    return std::move(e);
  }
};

}  // namespace coconet::autodiff::detail
