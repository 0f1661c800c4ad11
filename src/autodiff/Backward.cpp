// The backward program: the forward recomputed, then each stage's adjoint in reverse order
// (Backward.h says what the gradients mean). Adjoints of a stage go to its operands as
// contributions, each converted to its operand's distribution (Deriver::contribute).
#include "autodiff/Backward.h"

#include <map>
#include <set>

#include "autodiff/Deriver.h"
#include "ir/Rewrite.h"

namespace coconet::autodiff {

using namespace ir;

namespace detail {

// ---- Contributions ------------------------------------------------------------------------------
// c (a b_ stage with target's shape) is a contribution to the adjoint of forward stage `target`,
// in the distribution of the stage that made it: the same as target's, or replicated for a local
// target (each rank's the same), is taken as it is; a sliced one of a replicated target is its
// blocks (all_gather); a local one of a replicated or sliced target is the ranks' partial sums
// (allreduce; reduce_scatter); a replicated one of a sliced target is cut to each rank's block.
void Deriver::contribute(int target, int c, const Stage& consumer) {
  const TensorType T = fwdType(target);
  TensorType C = type(c);
  const std::string name = "d_" + f_.stages[target].name + "." + consumer.name;
  auto sameLayout = [&] { return C.layout == T.layout || (!C.group && !T.group); };
  if (C.dtype != T.dtype) {
    TensorType t = C;
    t.dtype = T.dtype;
    c = convert(c, t, name + ".cast", consumer.loc);
    C = type(c);
  }
  if (sameLayout() || (isLocal(T) && isReplicated(C))) {
    // as it is
  } else if (isReplicated(T) && C.layout.kind == Layout::Sliced) {
    Stage g = make(StageKind::AllGather, name, T, {c}, consumer.loc);
    g.dim = C.layout.dim;
    c = add(std::move(g));
  } else if (isReplicated(T) && isLocal(C)) {
    Stage g = make(StageKind::AllReduce, name, T, {c}, consumer.loc);
    g.op = ReduceOp::Sum;
    c = add(std::move(g));
  } else if (T.layout.kind == Layout::Sliced && isLocal(C)) {
    Stage g = make(StageKind::ReduceScatter, name, T, {c}, consumer.loc);
    g.op = ReduceOp::Sum;
    g.dim = T.layout.dim;
    c = add(std::move(g));
  } else if (T.layout.kind == Layout::Sliced && isReplicated(C)) {
    c = convert(c, T, name, consumer.loc);
  } else {
    unsupported(consumer, "its gradient for '" + f_.stages[target].name + "' is " + C.layout.str() + " and '" + f_.stages[target].name +
                              "' is " + T.layout.str());
    return;
  }
  contrib_[target].push_back(c);
}

// The sum of a stage's contributions (-1: none reached it).
int Deriver::adjointOf(int id) {
  auto& cs = contrib_[id];
  if (cs.empty()) return -1;
  int acc = cs[0];
  for (size_t k = 1; k < cs.size(); ++k) {
    TensorType t = type(acc);
    if (isReplicated(t) && !isReplicated(type(cs[k]))) t.layout = type(cs[k]).layout;  // (replicated + local: local)
    Expr e;
    int a = e.add(ENode::make(EOp::Operand, type(acc).dtype, {}, 0));
    int b = e.add(ENode::make(EOp::Operand, type(cs[k]).dtype, {}, 1));
    e.add(ENode::make(EOp::Add, t.dtype, {a, b}));
    acc = compute("d_" + f_.stages[id].name, t, {acc, cs[k]}, std::move(e), f_.stages[id].loc);
  }
  return acc;
}

// g (a gradient of a stage's shape) summed over the dimensions that `want` (an operand's shape,
// broadcast into the stage's) does not have or has as 1.
int Deriver::reduceTo(int g, const TensorType& want, const std::string& name, SourceLoc loc, const Stage& s) {
  auto sum = [&](int x, int dim, bool keepdim) {
    const TensorType& xt = type(x);
    Stage r = make(StageKind::Reduce, name + ".sum", xt, {x}, loc);
    r.reduce = ReduceKind::Sum;
    r.dim = dim;
    r.keepdim = keepdim;
    if (keepdim)
      r.type.shape[dim] = SizeExpr::constant(1);
    else
      r.type.shape.erase(r.type.shape.begin() + dim);
    if (xt.group && xt.layout.kind == Layout::Sliced) {
      int sd = xt.layout.dim;
      if (sd == dim)
        r.type.layout = Layout::local();  // each rank's partial sum over its block
      else if (sd > dim && !keepdim)
        r.type.layout = Layout::sliced(sd - 1);
    }
    return add(std::move(r));
  };
  while (type(g).rank() > want.rank()) g = sum(g, 0, false);
  for (int k = 0; k < want.rank(); ++k) {
    auto one = want.shape[k].constantValue();
    auto have = type(g).shape[k].constantValue();
    if (one && *one == 1 && !(have && *have == 1)) g = sum(g, k, true);
  }
  if (type(g).shape != want.shape) unsupported(s, "the shapes of its operands' gradients do not follow from broadcasting");
  return g;
}

// ---- The derivation -----------------------------------------------------------------------------
std::optional<Program> Deriver::run(const std::vector<int>& wrt, const std::vector<Recompute>& recompute) {
  const int n = static_cast<int>(f_.stages.size());
  for (auto& st : f_.states) {
    d_.error(f_.stages[st.entry].loc, "cannot derive the backward of '" + f_.name + "': it has state ('" + st.name +
                                          "'); a backward program takes inputs and returns gradients");
    return std::nullopt;
  }
  needs_.assign(n, false);
  for (int i : wrt) needs_[i] = true;
  for (int i = 0; i < n; ++i) {
    const Stage& s = f_.stages[i];
    for (int o : s.operands) needs_[i] = needs_[i] || needs_[o];
    needs_[i] = needs_[i] && floating(s.type.dtype);
  }
  b_.name = f_.name + "_backward";
  b_.outputs.clear();
  b_.outputNames.clear();
  b_.fused.clear();
  b_.overlaps.clear();
  for (auto& s : b_.stages) s.fusedInto.clear(), s.knobs = {};  // (a scheduled forward's: the backward's schedule is its own)
  contrib_.assign(n, {});
  // the cotangents: d_OUT for each floating-point output an input differentiated reaches
  std::set<int> seeded;
  for (size_t k = 0; k < f_.outputs.size(); ++k) {
    int o = f_.outputs[k];
    if (!needs_[o] || seeded.count(o)) continue;
    seeded.insert(o);
    contrib_[o].push_back(add(make(StageKind::Input, "d_" + f_.outputNames[k], fwdType(o), {}, f_.stages[o].loc)));
  }
  if (seeded.empty()) {
    d_.error(f_.stages[wrt.empty() ? 0 : wrt[0]].loc,
             "cannot derive the backward of '" + f_.name + "': no floating-point output depends on the inputs differentiated");
    return std::nullopt;
  }
  std::vector<int> grads(n, -1);
  for (int i = n - 1; i >= 0 && !failed_; --i) {
    if (!needs_[i]) continue;
    int ds = adjointOf(i);
    if (ds < 0) continue;
    const Stage s = b_.stages[i];  // (b_'s copy: its types and expressions point to b_'s groups)
    switch (s.kind) {
      case StageKind::Input: grads[i] = ds; break;
      case StageKind::Compute: computeAdjoint(s, ds); break;
      case StageKind::Reduce: reduceAdjoint(s, ds); break;
      case StageKind::Matmul:
      case StageKind::Gemv: matmulAdjoint(s, ds); break;
      case StageKind::AllReduce:
      case StageKind::ReduceScatter:
      case StageKind::AllGather:
      case StageKind::Broadcast:
      case StageKind::Reduce1:
      case StageKind::Send: collectiveAdjoint(s, ds); break;
      case StageKind::Permute:
      case StageKind::Reshape:
      case StageKind::Narrow:
      case StageKind::Concat: shapeAdjoint(s, ds); break;
      case StageKind::Softmax:
      case StageKind::Layernorm:
      case StageKind::Rmsnorm: rowAdjoint(s, ds); break;
      case StageKind::AllToAll: exchangeAdjoint(s, ds); break;
      case StageKind::Embedding: embeddingAdjoint(s, ds); break;
      default: unsupported(s, "its adjoint is not implemented yet");
    }
  }
  if (failed_) return std::nullopt;
  // the gradients, in the inputs' own types (zeros where no output depends on the input)
  for (int i : wrt) {
    const Stage in = b_.stages[i];
    int g = grads[i];
    if (g < 0) {
      Expr e;
      ENode z = ENode::make(EOp::Const, in.type.dtype);
      e.add(z);
      g = compute("d_" + in.name + ".zero", in.type, {}, std::move(e), in.loc);
    } else if (type(g).layout != in.type.layout && in.type.group) {
      g = convert(g, in.type, "d_" + in.name + ".own", in.loc);  // (a local input's replicated gradient)
    }
    b_.outputs.push_back(g);
    b_.outputNames.push_back("d_" + in.name);
  }
  // the forward's stages no adjoint reads (the output itself, often the whole forward: the
  // row-parallel layer's backward reads only its inputs and d_out) are not recomputed; those the
  // adjoints read are saved, unless recomputed
  eliminateDeadStages(b_);
  if (!saveReads(recompute)) return std::nullopt;
  eliminateDeadStages(b_);
  verifyStructure(b_);
  return std::move(b_);
}

// ---- Saved values -------------------------------------------------------------------------------
// The forward values the adjoints read become inputs of the backward, saved by the forward, except
// those recomputed: a value without operands (a constant) and those the request names, whose own
// forward operands are read in turn.
bool Deriver::saveReads(const std::vector<Recompute>& recompute) {
  std::map<std::string, const Recompute*> asked;
  for (auto& r : recompute) {
    const int j = f_.resolve(r.name);
    if (j < 0 || f_.stages[j].kind == StageKind::Input) {
      d_.error(r.loc,
               "cannot recompute '" + r.name + "': " +
                   (j < 0 ? "'" + f_.name + "' has no value named '" + r.name + "'"
                          : "it is an input of '" + f_.name + "', which the backward takes as it is"),
               r.length);
      return false;
    }
    asked.emplace(f_.stages[j].name, &r);
  }
  const int n = static_cast<int>(b_.stages.size());
  auto forward = [&](int i) { return b_.stages[i].kind != StageKind::Input && f_.find(b_.stages[i].name) >= 0; };
  enum : char { Unseen, Recomputed, Saved };
  std::vector<char> how(n, Unseen);
  std::vector<int> work(b_.outputs.begin(), b_.outputs.end());
  for (int i = 0; i < n; ++i)
    if (!forward(i)) work.insert(work.end(), b_.stages[i].operands.begin(), b_.stages[i].operands.end());
  std::set<std::string> recomputed;
  while (!work.empty()) {
    const int i = work.back();
    work.pop_back();
    if (!forward(i) || how[i] != Unseen) continue;
    const Stage& s = b_.stages[i];
    if (!s.operands.empty() && !asked.count(s.name)) {
      how[i] = Saved;
      continue;
    }
    how[i] = Recomputed;
    recomputed.insert(s.name);
    work.insert(work.end(), s.operands.begin(), s.operands.end());
  }
  std::string saved;
  for (int i = 0; i < n; ++i)
    if (how[i] == Saved) saved += (saved.empty() ? "'" : ", '") + b_.stages[i].name + "'";
  for (auto& [name, r] : asked)
    if (!recomputed.count(name)) {
      d_.error(r->loc,
               "cannot recompute '" + r->name + "': the backward of '" + f_.name + "' does not read it" +
                   (saved.empty() ? "" : " (it reads the forward values " + saved + ")"),
               r->length);
      return false;
    }
  for (int i = 0; i < n; ++i) {
    if (how[i] != Saved) continue;
    Stage& s = b_.stages[i];
    std::string name = s.name;  // (a forward output's: its output name, where that is free)
    for (size_t k = 0; k < f_.outputs.size(); ++k)
      if (f_.stages[f_.outputs[k]].name == s.name && b_.find(f_.outputNames[k]) < 0) {
        name = f_.outputNames[k];
        break;
      }
    for (auto& [alias, target] : b_.aliases)
      if (target == s.name) target = name;
    s = make(StageKind::Input, name, s.type, {}, s.loc);
    b_.savedInputs.push_back(name);
  }
  return true;
}

}  // namespace detail

std::vector<int> differentiated(const Program& p, const Request& r, DiagnosticEngine& d) {
  std::vector<int> out;
  std::set<std::string> asked(r.wrt.begin(), r.wrt.end());
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& s = p.stages[i];
    if (s.kind != StageKind::Input) continue;
    if (r.wrt.empty() ? detail::floating(s.type.dtype) : asked.count(s.name) > 0) {
      if (!detail::floating(s.type.dtype)) {
        d.error(s.loc, "cannot differentiate with respect to '" + s.name + "': it is " + std::string(ast::dtypeName(s.type.dtype)) +
                           ", not floating-point");
        return {};
      }
      out.push_back(static_cast<int>(i));
      asked.erase(s.name);
    }
  }
  for (auto& n : asked) {
    d.error(SourceLoc{}, "'" + p.name + "' has no input named '" + n + "' to differentiate");
    return {};
  }
  if (out.empty()) d.error(SourceLoc{}, "'" + p.name + "' has no floating-point input to differentiate");
  return out;
}

std::optional<Program> backward(const Program& p, const Request& r, DiagnosticEngine& d) {
  std::vector<int> wrt = differentiated(p, r, d);
  if (wrt.empty()) return std::nullopt;
  return detail::Deriver(p, d).run(wrt, r.recompute);
}

}  // namespace coconet::autodiff
