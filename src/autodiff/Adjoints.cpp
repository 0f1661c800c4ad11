// Each operation's adjoint: from the adjoint ds of stage s (in s's distribution, or replicated
// for a local s), the contributions to its operands' adjoints.
#include <numeric>

#include "autodiff/Deriver.h"
#include "autodiff/ExprAdjoint.h"
#include "autodiff/ExprBuilder.h"

namespace coconet::autodiff::detail {

// ---- Element-wise ---------------------------------------------------------------------------
// One compute stage per operand differentiated: the expression's adjoint over the forward
// operands and ds, in s's shape and distribution, then summed over the dimensions the operand
// was broadcast along.
void Deriver::computeAdjoint(const Stage& s, int ds) {
  const int m = static_cast<int>(s.operands.size());
  std::map<int, DType> wanted;
  bool wide = s.type.dtype == DType::F64;
  for (int j = 0; j < m; ++j) {
    int o = s.operands[j];
    if (needs_[o]) wanted[j] = fwdType(o).dtype;
    wide = wide || fwdType(o).dtype == DType::F64;
  }
  const ENode* bad = nullptr;
  auto adj = expressionAdjoints(s.expr, wide ? DType::F64 : DType::F32, m, wanted, &bad);
  if (bad) {
    unsupported(s, std::string("'") + eopName(bad->op) + "' has no adjoint");
    return;
  }
  std::vector<int> operands = s.operands;
  operands.push_back(ds);
  std::vector<std::pair<const Expr*, int>> made;  // (the same adjoint for two operands, as x + b gives: computed once)
  for (auto& [j, e] : adj) {
    int o = s.operands[j];
    TensorType t = s.type;  // (s's distribution: ds has it, or is replicated where s is local)
    t.dtype = fwdType(o).dtype;
    std::string name = "d_" + f_.stages[o].name + "." + s.name;
    int g = -1;
    // dy itself, as the adjoint of an addition gives it (through casts to wider types and back): no copy
    bool identity = t == type(ds);
    for (auto& n : e.nodes)
      identity = identity && ((n.op == EOp::Operand && n.index == m) ||
                              (n.op == EOp::Cast && (n.dtype == DType::F32 || n.dtype == DType::F64 || n.dtype == t.dtype)));
    if (identity) g = ds;
    for (auto& [prev, id] : made)
      if (g < 0 && sameExpr(*prev, e) && type(id) == t) g = id;
    if (g < 0) made.emplace_back(&e, g = compute(name, t, operands, e, s.loc));
    g = reduceTo(g, fwdType(o), name, s.loc, s);
    if (failed_) return;
    contribute(o, g, s);
  }
}

// ---- Reductions -------------------------------------------------------------------------------
// sum: ds broadcast back over the reduced dimensions; mean: that over the count; norm: x / norm
// times it. The reduced dimension comes back with length 1 first (a reshape), so that ds
// broadcasts along it.
void Deriver::reduceAdjoint(const Stage& s, int ds) {
  const bool byValue = s.reduce == ReduceKind::Norm || s.reduce == ReduceKind::Max || s.reduce == ReduceKind::Min;
  int x = s.operands[0];
  const TensorType xt = fwdType(x);
  if (s.dim >= 0 && !s.keepdim) {
    // ds with the reduced dimension back as 1 (a reshape: its elements in the same order)
    Shape kept = type(ds).shape;
    kept.insert(kept.begin() + s.dim, SizeExpr::constant(1));
    Layout l = type(ds).layout;
    if (type(ds).group && l.kind == Layout::Sliced && l.dim >= s.dim) l = Layout::sliced(l.dim + 1);  // (a 1 inserted before it)
    ds = reshape(ds, kept, l, "d_" + s.name + ".kept", s.loc);
  } else if (s.dim < 0 && !s.keepdim && xt.rank() > 0) {
    Shape ones(xt.rank(), SizeExpr::constant(1));
    ds = reshape(ds, ones, type(ds).layout, "d_" + s.name + ".kept", s.loc);
  }
  // dx (x's shape; each rank's block of a sliced x from its own ds)
  Expr e;
  DType cd = xt.dtype == DType::F64 ? DType::F64 : DType::F32;
  int g = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, type(ds).dtype, {}, 1))}));
  if (s.reduce == ReduceKind::Mean) {
    // the count of reduced elements: a size expression, written as nodes
    std::vector<int> nodes;
    auto node = [&](ENode n) {
      nodes.push_back(e.add(std::move(n)));
      return std::to_string(nodes.size() - 1);
    };
    auto at = [&](const std::string& k) { return nodes[std::stoul(k)]; };
    SizeExpr::Spelling sp{[&](const std::string& name) {
                            ENode n = ENode::make(name == "world.size" ? EOp::GroupSize : EOp::Param, DType::I64);
                            n.name = name;
                            n.group = b_.world();
                            return node(n);
                          },
                          [&](int64_t c) {
                            ENode n = ENode::make(EOp::Const, DType::I64);
                            n.ivalue = c;
                            n.value = static_cast<double>(c);
                            return node(n);
                          },
                          [&](const std::string& a, const std::string& b) {
                            return node(ENode::make(EOp::Add, DType::I64, {at(a), at(b)}));
                          },
                          [&](const std::string& a, const std::string& b) {
                            return node(ENode::make(EOp::Mul, DType::I64, {at(a), at(b)}));
                          },
                          [&](const std::string& a, const std::string& b) {
                            return node(ENode::make(EOp::Div, DType::I64, {at(a), at(b)}));
                          },
                          [&](const std::string& a, const std::string& b) {
                            return node(ENode::make(EOp::Mod, DType::I64, {at(a), at(b)}));
                          }};
    SizeExpr count = SizeExpr::constant(1);
    for (int k = 0; k < xt.rank(); ++k)
      if (s.dim < 0 || k == s.dim) count = count * xt.shape[k];
    int c = at(count.spell(sp));
    g = e.add(ENode::make(EOp::Div, cd, {g, e.add(ENode::make(EOp::Cast, cd, {c}))}));
  } else if (byValue) {
    int xv = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, xt.dtype, {}, 0))}));
    int yv = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, s.type.dtype, {}, 2))}));
    int z = e.add(ENode::make(EOp::Const, cd));
    if (s.reduce == ReduceKind::Norm) {  // d|x| / dx = x / |x| (0 where |x| is 0)
      int isZero = e.add(ENode::make(EOp::Eq, DType::Bool, {yv, z}));
      int q = e.add(ENode::make(EOp::Div, cd, {xv, yv}));
      g = e.add(ENode::make(EOp::Mul, cd, {g, e.add(ENode::make(EOp::Select, cd, {isZero, z, q}))}));
    } else {  // max, min: shared evenly by the elements that are the result (ties: copies of one value)
      int hit = e.add(ENode::make(EOp::Eq, DType::Bool, {xv, yv}));
      int count = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, cd, {}, 3))}));
      g = e.add(ENode::make(EOp::Select, cd, {hit, e.add(ENode::make(EOp::Div, cd, {g, count})), z}));
    }
  }
  e.add(ENode::make(EOp::Cast, xt.dtype, {g}));
  std::vector<int> operands = {x, ds};
  if (byValue) {
    // the result (the norm, the maximum or the minimum) with the reduced dimensions kept as 1
    auto kept = [&](int v, const std::string& name) {
      if (s.keepdim || xt.rank() == 0) return v;
      Shape shape = s.dim >= 0 ? type(v).shape : Shape(xt.rank(), SizeExpr::constant(1));
      if (s.dim >= 0) shape.insert(shape.begin() + s.dim, SizeExpr::constant(1));
      Layout l = type(v).layout;
      if (type(v).group && l.kind == Layout::Sliced && s.dim >= 0 && l.dim >= s.dim) l = Layout::sliced(l.dim + 1);
      return reshape(v, shape, l, name, s.loc);
    };
    const int y = kept(b_.find(s.name), "d_" + s.name + ".result");
    operands.push_back(y);
    if (s.reduce != ReduceKind::Norm) {
      // how many elements are the result: a sum of the hits, reduced as the forward reduces
      Expr h;
      int hx = h.add(ENode::make(EOp::Operand, xt.dtype, {}, 0)), hy = h.add(ENode::make(EOp::Operand, s.type.dtype, {}, 1));
      int hit = h.add(ENode::make(EOp::Eq, DType::Bool, {hx, hy}));
      ENode one = ENode::make(EOp::Const, cd), zero = ENode::make(EOp::Const, cd);
      one.value = 1;
      h.add(ENode::make(EOp::Select, cd, {hit, h.add(one), h.add(zero)}));
      TensorType ht = xt;
      ht.dtype = cd;
      int hits = compute("d_" + s.name + ".hits", ht, {x, y}, std::move(h), s.loc);
      Stage r = make(StageKind::Reduce, "d_" + s.name + ".count", s.type, {hits}, s.loc);
      r.type.dtype = cd;
      r.reduce = ReduceKind::Sum;
      r.dim = s.dim;
      r.keepdim = s.keepdim;
      operands.push_back(kept(add(std::move(r)), "d_" + s.name + ".count.kept"));
    }
  }
  TensorType t = xt;
  if (isReplicated(xt) && isLocal(type(ds))) t.layout = Layout::local();  // (partial gradients: contribute sums them)
  int dx = compute("d_" + f_.stages[x].name + "." + s.name, t, operands, std::move(e), s.loc);
  contribute(x, dx, s);
}

// ---- Matrix products ----------------------------------------------------------------------------
// The layout of a matmul (gemv) of a and b, as sema types it (docs/language.md 11.4); nullopt
// where it does not.
std::optional<Layout> Deriver::matmulLayout(const TensorType& a, const TensorType& b, int ry, bool gemv) const {
  auto kind = [](const TensorType& t) { return t.group ? t.layout.kind : Layout::Replicated; };
  const int ra = a.rank(), rb = b.rank();
  Layout::Kind ka = kind(a), kb = kind(b);
  if (ka == Layout::Replicated && kb == Layout::Replicated) return Layout::replicated();
  if ((ka == Layout::Local && kb != Layout::Sliced) || (kb == Layout::Local && ka != Layout::Sliced)) return Layout::local();
  const int kdimA = ra - 1, kdimB = gemv ? 0 : rb - 2;
  if (ka == Layout::Sliced && kb == Layout::Sliced && a.layout.dim == kdimA && b.layout.dim == kdimB) return Layout::local();
  if (ka == Layout::Sliced && kb == Layout::Replicated && a.layout.dim != kdimA) return Layout::sliced(gemv ? 0 : a.layout.dim + (ry - ra));
  if (gemv) return std::nullopt;
  if (ka == Layout::Replicated && kb == Layout::Sliced && b.layout.dim == rb - 1) return Layout::sliced(ry - 1);
  if (ka == Layout::Replicated && kb == Layout::Sliced && b.layout.dim < rb - 2) return Layout::sliced(b.layout.dim + (ry - rb));
  if (ka == Layout::Sliced && kb == Layout::Sliced && a.layout.dim < ra - 2 && b.layout.dim < rb - 2 &&
      a.layout.dim + (ry - ra) == b.layout.dim + (ry - rb))
    return Layout::sliced(a.layout.dim + (ry - ra));
  return std::nullopt;
}

int Deriver::permute(int x, const std::vector<int>& perm, const std::string& name, SourceLoc loc) {
  const TensorType& xt = type(x);
  Stage t = make(StageKind::Permute, name, xt, {x}, loc);
  for (size_t k = 0; k < perm.size(); ++k) {
    t.type.shape[k] = xt.shape[perm[k]];
    if (xt.group && xt.layout.kind == Layout::Sliced && xt.layout.dim == perm[k]) t.type.layout = Layout::sliced(static_cast<int>(k));
  }
  t.perm = perm;
  return add(std::move(t));
}

int Deriver::reshape(int x, const Shape& shape, Layout layout, const std::string& name, SourceLoc loc) {
  TensorType t = type(x);
  t.shape = shape;
  t.layout = layout;
  return add(make(StageKind::Reshape, name, t, {x}, loc));
}

// y = a b: da = dy b^T, db = a^T dy, each summed over the batch dimensions its operand was
// broadcast along. gemv (y = A x): dA = dy x^T (element-wise, dy as a column), dx = A^T dy.
void Deriver::matmulAdjoint(const Stage& s, int ds) {
  const bool gemv = s.kind == StageKind::Gemv;
  int a = s.operands[0], b = s.operands[1];
  // A local product of sliced operands (partial sums over the sliced K) whose adjoint is local too
  // (as the adjoint of max, min or * across ranks makes it): each rank's block of an operand's
  // gradient comes from its own dy and its own block of the other operand, so the product has the
  // operand's layout, which no forward rule gives a local times a sliced value.
  const bool partialProduct = isLocal(s.type) && isLocal(type(ds));
  auto product = [&](int l, int r, const std::string& name, const TensorType* target = nullptr) -> int {
    TensorType t = type(l);
    const TensorType& rt = type(r);
    Shape ls = t.shape, rs = rt.shape;
    Shape ys;
    if (gemv) {
      ys = {ls[0]};
    } else {
      // batch dimensions broadcast (right-aligned), then [n, m]
      int rb = std::max(t.rank(), rt.rank()) - 2;
      for (int k = 0; k < rb; ++k) {
        int kl = k - (rb - (t.rank() - 2)), kr = k - (rb - (rt.rank() - 2));
        SizeExpr dl = kl >= 0 ? ls[kl] : SizeExpr::constant(1), dr = kr >= 0 ? rs[kr] : SizeExpr::constant(1);
        ys.push_back(dl.constantValue() == 1 ? dr : dl);
      }
      ys.push_back(ls[t.rank() - 2]);
      ys.push_back(rs[rt.rank() - 1]);
    }
    auto layout = matmulLayout(t, rt, static_cast<int>(ys.size()), gemv);
    if (!layout && partialProduct && target && target->group && target->layout.kind == Layout::Sliced &&
        static_cast<int>(ys.size()) == target->rank())
      layout = target->layout;
    if (!layout) {
      unsupported(s, "the product for its gradient '" + name + "' (" + t.layout.str() + " times " + rt.layout.str() +
                         ") has no layout; not supported yet");
      return -1;
    }
    t.shape = ys;
    t.layout = *layout;
    if (!t.group) t.group = rt.group;
    return add(make(gemv ? StageKind::Gemv : StageKind::Matmul, name, t, {l, r}, s.loc));
  };
  auto swapLast = [](int rank) {
    std::vector<int> p(rank);
    std::iota(p.begin(), p.end(), 0);
    std::swap(p[rank - 1], p[rank - 2]);
    return p;
  };
  const std::string da = "d_" + f_.stages[a].name + "." + s.name, db = "d_" + f_.stages[b].name + "." + s.name;
  const TensorType aType = fwdType(a), bType = fwdType(b);
  if (gemv) {
    if (needs_[a]) {  // dy as a column times x as a row: dA[i, j] = dy[i] x[j]
      Layout l = type(ds).layout;
      int col = reshape(ds, {type(ds).shape[0], SizeExpr::constant(1)}, l, da + ".col", s.loc);
      Expr e;
      DType cd = fwdType(a).dtype == DType::F64 ? DType::F64 : DType::F32;
      int p = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, type(col).dtype, {}, 0))}));
      int q = e.add(ENode::make(EOp::Cast, cd, {e.add(ENode::make(EOp::Operand, fwdType(b).dtype, {}, 1))}));
      e.add(ENode::make(EOp::Cast, fwdType(a).dtype, {e.add(ENode::make(EOp::Mul, cd, {p, q}))}));
      // a sliced A: each rank's block from its own dy and x; otherwise partial (local) where dy or x is
      TensorType t = fwdType(a);
      if (!(t.group && t.layout.kind == Layout::Sliced))
        t.layout = isLocal(type(ds)) || isLocal(fwdType(b)) ? Layout::local() : Layout::replicated();
      contribute(a, compute(da, t, {col, b}, std::move(e), s.loc), s);
    }
    if (needs_[b] && !failed_) {
      int at = permute(a, {1, 0}, f_.stages[a].name + ".T", s.loc);
      int g = product(at, ds, db, &bType);
      if (g >= 0) contribute(b, g, s);
    }
    return;
  }
  if (needs_[a]) {
    int bt = permute(b, swapLast(fwdType(b).rank()), f_.stages[b].name + ".T", s.loc);
    int g = product(ds, bt, da, &aType);
    if (g >= 0) g = reduceTo(g, fwdType(a), da, s.loc, s);
    if (g >= 0 && !failed_) contribute(a, g, s);
  }
  if (needs_[b] && !failed_) {
    // A matrix b that every batch shares (a linear layer's weight): a's and dy's leading dimensions
    // merge into the rows (a reshape: the same elements), so that one product sums over them all
    // (no batched product, no sum of its rounded slices). Where a sliced dimension is not the
    // last, the product is batched and summed.
    auto lastOrNone = [&](const TensorType& t) { return !t.group || t.layout.kind != Layout::Sliced || t.layout.dim == t.rank() - 1; };
    const TensorType at0 = fwdType(a), dt0 = type(ds);
    if (fwdType(b).rank() == 2 && at0.rank() > 2 && dt0.rank() == at0.rank() && lastOrNone(at0) && lastOrNone(dt0)) {
      auto rows = [&](int v, const TensorType& t, const std::string& name) {
        SizeExpr n = SizeExpr::constant(1);
        for (int k = 0; k + 1 < t.rank(); ++k) n = n * t.shape[k];
        Layout l = t.group && t.layout.kind == Layout::Sliced ? Layout::sliced(1) : t.layout;
        return reshape(v, {n, t.shape.back()}, l, name, s.loc);
      };
      int a2 = rows(a, at0, f_.stages[a].name + ".rows"), d2 = rows(ds, dt0, db + ".rows");
      int g = product(permute(a2, {1, 0}, f_.stages[a].name + ".rows.T", s.loc), d2, db, &bType);
      if (g >= 0 && !failed_) contribute(b, g, s);
      return;
    }
    int at = permute(a, swapLast(fwdType(a).rank()), f_.stages[a].name + ".T", s.loc);
    int g = product(at, ds, db, &bType);
    if (g >= 0) g = reduceTo(g, fwdType(b), db, s.loc, s);
    if (g >= 0 && !failed_) contribute(b, g, s);
  }
}

// ---- Collectives ----------------------------------------------------------------------------
// allreduce(+, x): each rank's x gets dy (a replicated x, reduced P times, P dy); reduce_scatter:
// the all_gather of dy, likewise; reduce(+, x, root): the root's dy, broadcast; all_gather of a
// sliced x: each rank's block of dy. max, min and * below (combineAdjoint); send: dy sent back.
void Deriver::collectiveAdjoint(const Stage& s, int ds) {
  int x = s.operands[0];
  const std::string name = "d_" + f_.stages[x].name + "." + s.name;
  if (s.kind == StageKind::Broadcast) {
    // y = the root's x: the root's x gets dy, the other ranks' none (a replicated x: dy itself)
    if (isReplicated(fwdType(x))) {
      contribute(x, ds, s);
      return;
    }
    Expr e;
    ENode rank = ENode::make(EOp::Rank, DType::I64);
    rank.group = type(ds).group;
    ENode root = ENode::make(s.root.param.empty() ? EOp::Const : EOp::Param, DType::I64);
    root.name = s.root.param;
    root.ivalue = static_cast<int64_t>(s.root.value);
    root.value = s.root.value;
    int isRoot = e.add(ENode::make(EOp::Eq, DType::Bool, {e.add(rank), e.add(root)}));
    int g = e.add(ENode::make(EOp::Operand, type(ds).dtype, {}, 0));
    e.add(ENode::make(EOp::Select, type(ds).dtype, {isRoot, g, e.add(ENode::make(EOp::Const, type(ds).dtype))}));
    TensorType t = type(ds);
    t.layout = Layout::local();
    contribute(x, compute(name, t, {ds}, std::move(e), s.loc), s);
    return;
  }
  if (s.kind == StageKind::Send) {
    // y on rank i is x of rank i - 1 (next; i + 1 for prev): dy goes back the other way
    Stage back = make(StageKind::Send, name, type(ds), {ds}, s.loc);
    back.peer = s.peer == Peer::NextRank    ? Peer::PrevRank
                : s.peer == Peer::PrevRank  ? Peer::NextRank
                : s.peer == Peer::NextGroup ? Peer::PrevGroup
                                            : Peer::NextGroup;
    contribute(x, add(std::move(back)), s);
    return;
  }
  if (s.kind == StageKind::AllGather) {
    contribute(x, ds, s);
    return;
  }
  // dy as every rank's whole value: a reduce_scatter's gathered, a reduce's broadcast from its root
  int g = wholeOfReduction(s, ds, name + (s.kind == StageKind::ReduceScatter ? ".gather" : ".bcast"));
  if (s.op != ReduceOp::Sum) {
    combineAdjoint(s, g, name);
    return;
  }
  if (isReplicated(fwdType(x))) g = timesGroupSize(g, name, s.loc);
  contribute(x, g, s);
}

// v (dy or y of the reducing collective s) as every rank's whole value.
int Deriver::wholeOfReduction(const Stage& s, int v, const std::string& name) {
  if (s.kind == StageKind::AllReduce) return v;
  TensorType t = type(v);
  t.layout = Layout::replicated();
  t.group = s.type.group;
  Stage w = make(s.kind == StageKind::ReduceScatter ? StageKind::AllGather : StageKind::Broadcast, name, t, {v}, s.loc);
  w.dim = s.kind == StageKind::ReduceScatter ? s.dim : -1;
  w.root = s.root;
  return add(std::move(w));
}

// max, min: dy shared evenly by the ranks whose x is the result (a replicated x: every rank, dy / P
// each, summed back to dy). *: dy times the product of the other ranks' x, from the product of the
// nonzero x and the count of zeros (exact where some x is 0: only the one zero, if alone, gets it).
// g: dy as every rank's whole value. The per-rank terms are local; contribute sums them for a
// replicated x.
void Deriver::combineAdjoint(const Stage& s, int g, const std::string& name) {
  const int x = s.operands[0];
  const TensorType xt = fwdType(x);
  const DType cd = xt.dtype == DType::F64 ? DType::F64 : DType::F32;
  TensorType lt = xt;
  lt.dtype = cd;
  lt.layout = Layout::local();
  lt.group = s.type.group;
  TensorType rt = lt;
  rt.layout = Layout::replicated();
  auto allreduce = [&](int v, ReduceOp op, const std::string& n) {
    Stage r = make(StageKind::AllReduce, n, rt, {v}, s.loc);
    r.op = op;
    return add(std::move(r));
  };
  // 1 where `test` holds of an element, else 0 (over `operands`, x first)
  auto indicator = [&](const std::string& n, std::vector<int> operands, auto&& test) {
    ExprBuilder h(cd);
    h.sel(test(h), h.c(1), h.c(0));
    return compute(n, lt, std::move(operands), h.done(cd), s.loc);
  };
  std::vector<int> operands = {x, g};
  ExprBuilder e(cd);
  const int xv = e.in(0, xt.dtype), dy = e.in(1, type(g).dtype);
  if (s.op == ReduceOp::Max || s.op == ReduceOp::Min) {
    const int y = wholeOfReduction(s, b_.find(s.name), "d_" + s.name + ".result");
    const int hits =
        indicator(name + ".hits", {x, y}, [&](ExprBuilder& h) { return h.cmp(EOp::Eq, h.in(0, xt.dtype), h.in(1, type(y).dtype)); });
    const int count = allreduce(hits, ReduceOp::Sum, name + ".count");
    operands.insert(operands.end(), {y, count});
    const int hit = e.cmp(EOp::Eq, xv, e.in(2, type(y).dtype));
    e.sel(hit, e.op(EOp::Div, dy, e.in(3, cd)), e.c(0));
  } else {  // *
    const int zeros = allreduce(indicator(name + ".zeros", {x}, [&](ExprBuilder& h) { return h.cmp(EOp::Eq, h.in(0, xt.dtype), h.c(0)); }),
                                ReduceOp::Sum, name + ".zeros.count");
    ExprBuilder q(cd);
    const int qx = q.in(0, xt.dtype);
    q.sel(q.cmp(EOp::Eq, qx, q.c(0)), q.c(1), qx);
    const int others = allreduce(compute(name + ".nonzero", lt, {x}, q.done(cd), s.loc), ReduceOp::Prod, name + ".nonzero.prod");
    operands.insert(operands.end(), {zeros, others});
    const int nz = e.in(2, cd), prod = e.in(3, cd);
    const int ifZero = e.sel(e.cmp(EOp::Eq, nz, e.c(1)), prod, e.c(0));
    const int ifNot = e.sel(e.cmp(EOp::Eq, nz, e.c(0)), e.op(EOp::Div, prod, xv), e.c(0));
    e.op(EOp::Mul, dy, e.sel(e.cmp(EOp::Eq, xv, e.c(0)), ifZero, ifNot));
  }
  TensorType dt = lt;
  dt.dtype = xt.dtype;
  contribute(x, compute(name, dt, operands, e.done(xt.dtype), s.loc), s);
}

// ---- Shape operations ---------------------------------------------------------------------------
void Deriver::shapeAdjoint(const Stage& s, int ds) {
  int x = s.operands[0];
  const std::string name = "d_" + f_.stages[x].name + "." + s.name;
  if (s.kind == StageKind::Permute) {
    std::vector<int> inv(s.perm.size());
    for (size_t k = 0; k < s.perm.size(); ++k) inv[s.perm[k]] = static_cast<int>(k);
    contribute(x, permute(ds, inv, name, s.loc), s);
    return;
  }
  if (s.kind == StageKind::Reshape) {
    Layout l = isReplicated(type(ds)) ? Layout::replicated() : fwdType(x).layout;
    contribute(x, reshape(ds, fwdType(x).shape, l, name, s.loc), s);
    return;
  }
  if (s.kind == StageKind::Narrow) {
    // dy back in its place along the dimension, zeros before and after it
    const TensorType xt = fwdType(x);
    const SizeExpr len = s.type.shape[s.dim], after = xt.shape[s.dim] - s.start - len;
    auto zeros = [&](const SizeExpr& n, const std::string& part) {
      TensorType t = type(ds);
      t.shape[s.dim] = n;
      Expr e;
      e.add(ENode::make(EOp::Const, t.dtype));
      return compute(name + "." + part, t, {}, std::move(e), s.loc);
    };
    std::vector<int> parts;
    if (s.start.constantValue() != 0) parts.push_back(zeros(s.start, "before"));
    parts.push_back(ds);
    if (after.constantValue() != 0) parts.push_back(zeros(after, "after"));
    TensorType t = type(ds);
    t.shape = xt.shape;
    Stage c = make(StageKind::Concat, name, t, parts, s.loc);
    c.dim = s.dim;
    contribute(x, parts.size() == 1 ? ds : add(std::move(c)), s);
    return;
  }
  // concat: each operand's part of dy along the dimension
  SizeExpr offset = SizeExpr::constant(0);
  for (int o : s.operands) {
    const TensorType ot = fwdType(o);
    if (needs_[o] && !failed_) {
      TensorType t = type(ds);
      t.shape[s.dim] = ot.shape[s.dim];
      Stage n = make(StageKind::Narrow, "d_" + f_.stages[o].name + "." + s.name, t, {ds}, s.loc);
      n.dim = s.dim;
      n.start = offset;
      contribute(o, add(std::move(n)), s);
    }
    offset = offset + ot.shape[s.dim];
  }
}

}  // namespace coconet::autodiff::detail
