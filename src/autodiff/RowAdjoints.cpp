// Adjoints of the row-wise operations (softmax, layernorm, rmsnorm over the last dimension) and
// of all_to_all and max/min reductions. The row statistics are recomputed as reductions over
// the last dimension (kept with length 1, so that they broadcast along the row).
#include "autodiff/Deriver.h"
#include "autodiff/ExprBuilder.h"

namespace coconet::autodiff::detail {

using Ex = ExprBuilder;

// A reduction of x over its last dimension, kept with length 1.
int Deriver::rowReduce(int x, ReduceKind k, const std::string& name, SourceLoc loc) {
  TensorType t = type(x);
  Stage r = make(StageKind::Reduce, name, t, {x}, loc);
  r.reduce = k;
  r.dim = t.rank() - 1;
  r.keepdim = true;
  r.type.shape.back() = SizeExpr::constant(1);
  return add(std::move(r));
}

// softmax: dx = y (dy - sum(dy y)); layernorm: with xhat = (x - mean) rstd and g = dy gamma,
// dx = rstd (g - mean(g) - xhat mean(g xhat)), dgamma = sum(dy xhat), dbeta = sum(dy);
// rmsnorm: xhat = x rstd, dx = rstd (g - xhat mean(g xhat)), dgamma = sum(dy xhat).
void Deriver::rowAdjoint(const Stage& s, int ds) {
  const int x = s.operands[0];
  const TensorType xt = fwdType(x);
  const DType cd = xt.dtype == DType::F64 ? DType::F64 : DType::F32;
  const std::string base = "d_" + f_.stages[x].name + "." + s.name;
  TensorType wide = xt;
  wide.dtype = cd;
  if (isLocal(type(ds))) wide.layout = Layout::local();
  if (s.kind == StageKind::Softmax) {
    const int y = b_.find(s.name);
    Ex p(cd);
    p.op(EOp::Mul, p.in(0, type(ds).dtype), p.in(1, s.type.dtype));
    int dyy = compute(base + ".dyy", wide, {ds, y}, p.done(cd), s.loc);
    int t = rowReduce(dyy, ReduceKind::Sum, base + ".sum", s.loc);
    Ex q(cd);
    q.op(EOp::Mul, q.in(1, s.type.dtype), q.op(EOp::Sub, q.in(0, type(ds).dtype), q.in(2, cd)));
    TensorType dt = wide;
    dt.dtype = xt.dtype;
    contribute(x, compute(base, dt, {ds, y, t}, q.done(xt.dtype), s.loc), s);
    return;
  }
  const bool layer = s.kind == StageKind::Layernorm;
  const bool affine = s.operands.size() > 1;
  // the row statistics: xc = x - mean (layernorm) or x, rstd = 1 / sqrt(mean(xc^2) + eps)
  TensorType xw = xt;
  xw.dtype = cd;
  int xc = x;
  if (layer) {
    int mu = rowReduce(x, ReduceKind::Mean, base + ".mean", s.loc);
    Ex e(cd);
    e.op(EOp::Sub, e.in(0, xt.dtype), e.in(1, xt.dtype));
    xc = compute(base + ".centered", xw, {x, mu}, e.done(cd), s.loc);
  }
  Ex sq(cd);
  int v = sq.in(0, type(xc).dtype);
  sq.op(EOp::Mul, v, v);
  int var = rowReduce(compute(base + ".sq", xw, {xc}, sq.done(cd), s.loc), ReduceKind::Mean, base + ".var", s.loc);
  Ex rs(cd);
  rs.un(EOp::Rsqrt, rs.op(EOp::Add, rs.in(0, cd), rs.scalar(s.eps)));
  TensorType rt = type(var);
  int rstd = compute(base + ".rstd", rt, {var}, rs.done(cd), s.loc);
  Ex xh(cd);
  xh.op(EOp::Mul, xh.in(0, type(xc).dtype), xh.in(1, cd));
  int xhat = compute(base + ".xhat", xw, {xc, rstd}, xh.done(cd), s.loc);
  // g = dy gamma
  int g = ds;
  if (affine) {
    Ex ge(cd);
    ge.op(EOp::Mul, ge.in(0, type(ds).dtype), ge.in(1, fwdType(s.operands[1]).dtype));
    g = compute(base + ".g", wide, {ds, s.operands[1]}, ge.done(cd), s.loc);
  }
  Ex gx(cd);
  gx.op(EOp::Mul, gx.in(0, type(g).dtype), gx.in(1, cd));
  int b = rowReduce(compute(base + ".gxhat", wide, {g, xhat}, gx.done(cd), s.loc), ReduceKind::Mean, base + ".b", s.loc);
  std::vector<int> ops = {g, xhat, b, rstd};
  Ex dx(cd);
  int inner = dx.op(EOp::Sub, dx.in(0, type(g).dtype), dx.op(EOp::Mul, dx.in(1, cd), dx.in(2, cd)));
  if (layer) {
    ops.push_back(rowReduce(g, ReduceKind::Mean, base + ".a", s.loc));
    inner = dx.op(EOp::Sub, inner, dx.in(4, cd));
  }
  dx.op(EOp::Mul, dx.in(3, cd), inner);
  TensorType dt = wide;
  dt.dtype = xt.dtype;
  if (needs_[x]) contribute(x, compute(base, dt, ops, dx.done(xt.dtype), s.loc), s);
  if (!affine || failed_) return;
  // gamma and beta: replicated [n], read by every row
  const int gamma = s.operands[1];
  if (needs_[gamma]) {
    Ex e(cd);
    e.op(EOp::Mul, e.in(0, type(ds).dtype), e.in(1, cd));
    TensorType t = wide;
    t.dtype = fwdType(gamma).dtype;
    const std::string name = "d_" + f_.stages[gamma].name + "." + s.name;
    int c = reduceTo(compute(name, t, {ds, xhat}, e.done(t.dtype), s.loc), fwdType(gamma), name, s.loc, s);
    if (!failed_) contribute(gamma, c, s);
  }
  if (layer && s.operands.size() > 2 && needs_[s.operands[2]] && !failed_) {
    const int beta = s.operands[2];
    const std::string name = "d_" + f_.stages[beta].name + "." + s.name;
    TensorType t = type(ds);
    t.dtype = fwdType(beta).dtype;
    int c = reduceTo(t == type(ds) ? ds : convert(ds, t, name, s.loc), fwdType(beta), name, s.loc, s);
    if (!failed_) contribute(beta, c, s);
  }
}

// all_to_all is a permutation of the ranks' blocks that is its own inverse: its adjoint is itself.
// max / min: the gradient goes to the elements equal to the result (each of them, on ties).
void Deriver::exchangeAdjoint(const Stage& s, int ds) {
  const int x = s.operands[0];
  TensorType t = type(ds);
  t.layout = Layout::local();
  Stage a = make(StageKind::AllToAll, "d_" + f_.stages[x].name + "." + s.name, t, {ds}, s.loc);
  contribute(x, add(std::move(a)), s);
}

// embedding(table, idx): the table's gradient sums dy's rows into the rows idx names (an
// embedding_grad stage: deterministic, in position order). Each rank sums its own dy and
// indices: a row-sliced table gets its block's rows (no communication: the forward's rows of
// other blocks were zero there), a column-sliced one its columns; otherwise the sums are partial
// (local) where dy or idx differs between ranks, and contribute adds them up.
void Deriver::embeddingAdjoint(const Stage& s, int ds) {
  const int table = s.operands[0], idx = s.operands[1];
  TensorType t = fwdType(table);
  if (!t.group) t.group = b_.world();
  if (t.layout.kind != Layout::Sliced)
    t.layout = isReplicated(type(ds)) && isReplicated(fwdType(idx)) ? Layout::replicated() : Layout::local();
  Stage g = make(StageKind::EmbeddingGrad, "d_" + f_.stages[table].name + "." + s.name, t, {ds, idx}, s.loc);
  contribute(table, add(std::move(g)), s);
}

}  // namespace coconet::autodiff::detail
