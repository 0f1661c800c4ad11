// The adjoint of an element-wise expression (a compute stage's), for the backward program.
#pragma once

#include <map>

#include "ir/IR.h"

namespace coconet::autodiff {

// For a compute stage's expression `fwd`, the expressions of its operands' adjoints: each
// recomputes the forward nodes it needs and reads the result's adjoint as operand `adjOperand`;
// arithmetic in `cd` (f32, or f64), each ending in a cast to the type operandTypes gives the
// operand (only the operands listed get one, and only those an adjoint reaches). A node whose
// operation has no adjoint sets *unsupported (and the map is empty).
std::map<int, ir::Expr> expressionAdjoints(const ir::Expr& fwd, ir::DType cd, int adjOperand, const std::map<int, ir::DType>& operandTypes,
                                           const ir::ENode** unsupported);

// Whether two expressions are the same nodes (the same arithmetic over the same operands).
bool sameExpr(const ir::Expr& a, const ir::Expr& b);

}  // namespace coconet::autodiff
