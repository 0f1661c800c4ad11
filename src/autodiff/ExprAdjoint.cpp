// The adjoint of an element-wise expression: reverse mode over its node DAG, in one expression
// that recomputes the forward nodes and reads the result's adjoint as an extra operand.
#include "autodiff/ExprAdjoint.h"

#include <cmath>
#include <map>

#include "autodiff/ExprBuilder.h"

namespace coconet::autodiff {

using namespace ir;

namespace {

class Sweep {
public:
  Sweep(const Expr& fwd, DType cd, int adjOperand) : f_(fwd), b_(cd), adjOperand_(adjOperand) { b_.e.nodes = fwd.nodes; }

  // Runs the sweep; returns per operand index the node of its adjoint (-1: none), or the node
  // whose operation has no adjoint (through *unsupported).
  std::map<int, int> run(const ENode** unsupported) {
    const int n = static_cast<int>(f_.nodes.size());
    adj_.assign(n, -1);
    ENode y = ENode::make(EOp::Operand, b_.cd, {}, adjOperand_);
    adj_[n - 1] = b_.e.add(y);
    std::map<int, int> out;
    for (int k = n - 1; k >= 0; --k) {
      if (adj_[k] < 0) continue;
      const ENode& node = f_.nodes[k];
      if (node.op == EOp::Operand) {
        auto it = out.find(node.index);
        out[node.index] = it == out.end() ? adj_[k] : bin(EOp::Add, it->second, adj_[k]);
        continue;
      }
      if (!step(k, node)) {
        *unsupported = &f_.nodes[k];
        return {};
      }
    }
    return out;
  }

  Expr& expr() { return b_.e; }

private:
  const Expr& f_;
  detail::ExprBuilder b_;  // the forward's nodes, then the adjoint's
  int adjOperand_;
  std::vector<int> adj_;
  std::map<int, int> asCd_;

  bool isFloatNode(int k) const {
    DType t = f_.nodes[k].dtype;
    return ast::isFloat(t);
  }
  // Forward node k's value in the compute type.
  int val(int k) {
    if (f_.nodes[k].dtype == b_.cd) return k;
    auto it = asCd_.find(k);
    if (it != asCd_.end()) return it->second;
    return asCd_[k] = b_.e.add(ENode::make(EOp::Cast, b_.cd, {k}));
  }
  int cst(double v) { return b_.c(v); }
  int bin(EOp op, int a, int b) { return b_.op(op, a, b); }
  int un(EOp op, int a) { return b_.un(op, a); }
  int sel(int cond, int a, int b) { return b_.sel(cond, a, b); }
  int cmp(EOp op, int a, int b) { return b_.cmp(op, a, b); }
  // Adds g to the adjoint of forward node k (only floating nodes carry adjoints).
  void acc(int k, int g) {
    if (!isFloatNode(k)) return;
    adj_[k] = adj_[k] < 0 ? g : bin(EOp::Add, adj_[k], g);
  }

  bool step(int k, const ENode& n) {
    const int g = adj_[k];
    auto arg = [&](int i) { return n.args[i]; };
    auto v = [&](int i) { return val(n.args[i]); };
    switch (n.op) {
      case EOp::Const:
      case EOp::Param:
      case EOp::Rank:
      case EOp::GroupIndex:
      case EOp::GroupSize: return true;
      case EOp::Neg: acc(arg(0), un(EOp::Neg, g)); return true;
      case EOp::Add:
        acc(arg(0), g);
        acc(arg(1), g);
        return true;
      case EOp::Sub:
        acc(arg(0), g);
        acc(arg(1), un(EOp::Neg, g));
        return true;
      case EOp::Mul:
        acc(arg(0), bin(EOp::Mul, g, v(1)));
        acc(arg(1), bin(EOp::Mul, g, v(0)));
        return true;
      case EOp::Div: {
        int q = bin(EOp::Div, g, v(1));  // g / b
        acc(arg(0), q);
        acc(arg(1), un(EOp::Neg, bin(EOp::Mul, q, bin(EOp::Div, v(0), v(1)))));  // -g a / b^2
        return true;
      }
      case EOp::Mod: {  // fmod(a, b) = a - trunc(a / b) b: 1 and -trunc(a / b) = (fmod(a, b) - a) / b
        acc(arg(0), g);
        if (isFloatNode(arg(1))) acc(arg(1), bin(EOp::Mul, g, bin(EOp::Div, bin(EOp::Sub, val(k), v(0)), v(1))));
        return true;
      }
      case EOp::Pow: {  // a^b: b a^(b-1) and a^b log(a)
        acc(arg(0), bin(EOp::Mul, g, bin(EOp::Mul, v(1), bin(EOp::Pow, v(0), bin(EOp::Sub, v(1), cst(1))))));
        if (isFloatNode(arg(1))) acc(arg(1), bin(EOp::Mul, g, bin(EOp::Mul, val(k), un(EOp::Log, v(0)))));
        return true;
      }
      case EOp::Min:
      case EOp::Max: {  // the first operand on ties, as the forward picks it
        int first = cmp(n.op == EOp::Max ? EOp::Ge : EOp::Le, v(0), v(1));
        acc(arg(0), sel(first, g, cst(0)));
        acc(arg(1), sel(first, cst(0), g));
        return true;
      }
      case EOp::Select:
        acc(arg(1), sel(arg(0), g, cst(0)));
        acc(arg(2), sel(arg(0), cst(0), g));
        return true;
      case EOp::Abs: acc(arg(0), sel(cmp(EOp::Lt, v(0), cst(0)), un(EOp::Neg, g), sel(cmp(EOp::Gt, v(0), cst(0)), g, cst(0)))); return true;
      case EOp::Relu: acc(arg(0), sel(cmp(EOp::Gt, v(0), cst(0)), g, cst(0))); return true;
      case EOp::Cast: acc(arg(0), g); return true;  // (a cast to an integer type carries no adjoint: acc skips)
      case EOp::Dropout: {
        // The same mask: the same generator key (seed, salt, element), drawn again.
        ENode d = ENode::make(EOp::Dropout, b_.cd, {g, arg(1)});
        if (n.args.size() > 2) d.args.push_back(arg(2));
        d.salt = n.salt;
        acc(arg(0), b_.e.add(d));
        return true;
      }
      case EOp::Sqrt: acc(arg(0), bin(EOp::Div, bin(EOp::Mul, g, cst(0.5)), val(k))); return true;
      case EOp::Rsqrt: {  // -x^(-3/2) / 2 = -y^3 / 2
        int y = val(k);
        acc(arg(0), bin(EOp::Mul, g, bin(EOp::Mul, cst(-0.5), bin(EOp::Mul, y, bin(EOp::Mul, y, y)))));
        return true;
      }
      case EOp::Exp: acc(arg(0), bin(EOp::Mul, g, val(k))); return true;
      case EOp::Log: acc(arg(0), bin(EOp::Div, g, v(0))); return true;
      case EOp::Tanh: {
        int y = val(k);
        acc(arg(0), bin(EOp::Mul, g, bin(EOp::Sub, cst(1), bin(EOp::Mul, y, y))));
        return true;
      }
      case EOp::Sigmoid: {
        int y = val(k);
        acc(arg(0), bin(EOp::Mul, g, bin(EOp::Mul, y, bin(EOp::Sub, cst(1), y))));
        return true;
      }
      case EOp::Gelu: {
        // gelu(x) = x Phi(x): gelu'(x) = Phi(x) + x phi(x), with Phi(x) = gelu(x) / x (1/2 at 0)
        int x = v(0);
        int Phi = sel(cmp(EOp::Eq, x, cst(0)), cst(0.5), bin(EOp::Div, val(k), x));
        int phi = bin(EOp::Mul, un(EOp::Exp, bin(EOp::Mul, cst(-0.5), bin(EOp::Mul, x, x))), cst(0.3989422804014327));
        acc(arg(0), bin(EOp::Mul, g, bin(EOp::Add, Phi, bin(EOp::Mul, x, phi))));
        return true;
      }
      default: return false;  // comparisons and logic: bool results, no adjoint reaches them
    }
  }
};

// The nodes of e that `root` depends on, renumbered; root last.
Expr prune(const Expr& e, int root) {
  std::vector<bool> live(e.nodes.size(), false);
  live[root] = true;
  for (int k = root; k >= 0; --k)
    if (live[k])
      for (int a : e.nodes[k].args) live[a] = true;
  std::vector<int> index(e.nodes.size(), -1);
  Expr out;
  for (int k = 0; k <= root; ++k) {
    if (!live[k]) continue;
    ENode n = e.nodes[k];
    for (int& a : n.args) a = index[a];
    index[k] = out.add(n);
  }
  return out;
}

}  // namespace

std::map<int, Expr> expressionAdjoints(const Expr& fwd, DType cd, int adjOperand, const std::map<int, DType>& operandTypes,
                                       const ENode** unsupported) {
  Sweep s(fwd, cd, adjOperand);
  auto roots = s.run(unsupported);
  std::map<int, Expr> out;
  for (auto [operand, node] : roots) {
    auto t = operandTypes.find(operand);
    if (t == operandTypes.end()) continue;  // (an operand that is not differentiated)
    int root = s.expr().add(ENode::make(EOp::Cast, t->second, {node}));
    out[operand] = prune(s.expr(), root);
  }
  return out;
}

bool sameExpr(const Expr& a, const Expr& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t k = 0; k < a.nodes.size(); ++k) {
    const ENode &x = a.nodes[k], &y = b.nodes[k];
    if (x.op != y.op || x.dtype != y.dtype || x.args != y.args || x.index != y.index || x.value != y.value || x.ivalue != y.ivalue ||
        x.name != y.name || x.group != y.group || x.salt != y.salt)
      return false;
  }
  return true;
}

}  // namespace coconet::autodiff
