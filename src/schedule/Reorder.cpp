// reorder: computation that consumes an all_gather runs before it, on slices.
//
// Each listed stage is rewritten in place: reads of the all_gather read its sliced source
// instead, and the stage's value becomes a slice (softmax and layernorm too, while the slices
// hold whole rows of their last dimension). A reduction over the sliced dimension (or
// the whole tensor) becomes a partial reduction on the slice followed by an allreduce of the
// partials; a norm becomes sqrt(allreduce(+, sum(x * x))). A moved value that something
// outside the moved set still needs whole (another stage, an output, a state's new value) is
// gathered again right after it; the last such gather takes the all_gather's name when the
// original all_gather has no reader left.
#include <algorithm>
#include <map>
#include <set>

#include "ir/Rewrite.h"
#include "schedule/Primitives.h"

namespace coconet::schedule {

using namespace ir;

namespace {

struct Plan {
  int sliceDim = -1;               // the stage's sliced dimension after the move, -1 if not sliced
  bool partial = false;            // a reduction whose result must be combined across ranks
  std::vector<int> sliceOperands;  // operand positions of replicated values read on slices (reductions)
};

// One reorder step: step 1 checks every precondition and plans the rewrite without changing
// anything (checkArguments, planMoves); step 2 rewrites the program (rewrite).
struct Reorder {
  StepContext& c;
  Program& p;
  std::vector<const Arg*> pos;
  int agId = -1;                    // the all_gather
  int src = -1;                     // its sliced source
  int d = -1;                       // the gathered dimension
  int agRank = 0;                   // the all_gather's rank
  std::map<int, const Arg*> argOf;  // each listed stage's argument
  std::vector<int> moved;           // the listed stages, ascending: program order
  std::map<int, Plan> plan;
  std::map<int, bool> escapes;  // whether a moved sliced value is still needed whole outside the moved set
  bool agKeeps = false;         // the original all_gather still has readers outside the moved set

  // Step 2's state: the all_gather's name and group, the last moved value gathered again, and
  // the stages inside the move (the moved ones and the ones made for them), which keep reading
  // slices.
  std::string agName;
  const GroupInfo* group = nullptr;
  int lastEscaping = -1;
  std::set<std::string> inside;

  explicit Reorder(StepContext& ctx) : c(ctx), p(ctx.p) {}

  bool checkArguments();
  int slicedDimOf(int id) const;
  bool planStage(int id);
  bool planMoves();
  void rewrite();
  int sliceReplicatedOperands(int id, const Plan& pl);
  void combinePartial(int id);
  void redirect(int from, int to);
};

// The all_gather and the listed stages: what each is and where it runs.
bool Reorder::checkArguments() {
  if (!c.expectShape({}, 2, -1, 0)) return false;
  pos = c.positional();
  agId = c.stage(*pos[0]);
  if (agId < 0) return false;
  const Stage& ag = p.stages[agId];
  if (ag.kind != StageKind::AllGather) return c.fail(pos[0], pos[0]->value, "it is " + describe(ag) + ", not an all_gather");
  if (!ag.fusedInto.empty()) return c.fail(pos[0], ag.name, "it is fused into " + quote(ag.fusedInto) + "; reorder before fusing");
  src = ag.operands[0];
  d = p.stages[src].type.layout.dim;
  agRank = ag.type.rank();

  for (size_t i = 1; i < pos.size(); ++i) {
    int id = c.stage(*pos[i]);
    if (id < 0) return false;
    const Stage& s = p.stages[id];
    if (argOf.count(id)) return c.fail(pos[i], pos[i]->value, "it is listed twice");
    if (id == agId) return c.fail(pos[i], pos[i]->value, "it is the all_gather itself");
    if (id < agId) return c.fail(pos[i], s.name, "it runs before " + quote(ag.name));
    if (!s.fusedInto.empty()) return c.fail(pos[i], s.name, "it is fused into " + quote(s.fusedInto) + "; reorder before fusing");
    if (s.kind == StageKind::Send && (s.peer == Peer::NextRank || s.peer == Peer::PrevRank))
      return c.fail(pos[i], s.name,
                    "it sends to a neighbouring rank, which would hold another rank's slice; only "
                    "sends between groups (GROUP.next, GROUP.prev) move onto slices");
    if (s.kind != StageKind::Compute && s.kind != StageKind::Reduce && s.kind != StageKind::Send && !isNormalizationKind(s.kind))
      return c.fail(pos[i], s.name,
                    "it is " + describe(s) +
                        "; only element-wise computes, reductions, softmax, "
                        "layernorm and sends between groups move onto slices");
    if (s.type.group != ag.type.group && s.type.group)
      return c.fail(pos[i], s.name, "it lives in group " + quote(s.type.group->name) + ", the all_gather in " + quote(ag.type.group->name));
    argOf[id] = pos[i];
  }
  for (auto& [id, a] : argOf) moved.push_back(id);
  return true;
}

// Where a value is sliced after the move: -1 whole, else its sliced dimension.
int Reorder::slicedDimOf(int id) const {
  if (id == agId) return d;
  if (auto it = plan.find(id); it != plan.end()) return it->second.sliceDim;
  return -1;
}

// Plans one listed stage (after the ones before it): which dimension its value is sliced along,
// or whether it becomes a partial reduction.
bool Reorder::planStage(int id) {
  const Stage& ag = p.stages[agId];
  const Stage& s = p.stages[id];
  const Arg* at = argOf[id];
  Plan pl;
  int want = -1;  // the sliced dimension in s's operand coordinates
  for (size_t k = 0; k < s.operands.size(); ++k) {
    int o = s.operands[k];
    const Stage& os = p.stages[o];
    int sd = slicedDimOf(o);
    int inRank = s.kind == StageKind::Reduce ? os.type.rank() : s.type.rank();
    if (sd >= 0) {
      int aligned = sd + (inRank - os.type.rank());
      if (want >= 0 && want != aligned) return c.fail(at, s.name, "its operands would be sliced along different dimensions");
      want = aligned;
      continue;
    }
    if (argOf.count(o)) continue;  // a moved value that stays whole (a combined reduction)
    if (os.type.group && os.type.layout.kind == Layout::Local)
      return c.fail(at, s.name, "it reads " + quote(os.name) + ", which is local and has no slices");
    if (os.type.group && os.type.layout.kind == Layout::Sliced)
      return c.fail(at, s.name, "it reads " + quote(os.name) + ", which is already " + os.type.layout.str());
    // A replicated value with the all_gather's shape can be read on slices too.
    if (os.type.shape == ag.type.shape && os.type.group) {
      if (want >= 0 && want != d + (inRank - agRank)) return c.fail(at, s.name, "its operands would be sliced along different dimensions");
      want = d + (inRank - agRank);
      pl.sliceOperands.push_back(static_cast<int>(k));
    }
  }
  if (want < 0) {
    // Reads only whole values: allowed for a stage that combines moved results (a ratio of
    // two combined norms), which then stays whole where it is.
    bool readsMoved = false;
    for (int o : s.operands) readsMoved = readsMoved || argOf.count(o);
    if (!readsMoved)
      return c.fail(at, s.name,
                    "it reads neither " + quote(ag.name) +
                        ", nor a stage moved with it, nor a value "
                        "it can slice");
    plan[id] = pl;
    return true;
  }
  if (s.kind == StageKind::Send) {
    pl.sliceDim = want;  // position i of one group instance sends to position i of the next
  } else if (s.kind == StageKind::Compute) {
    // The output must span the sliced dimension in full (not broadcast along it).
    const Stage* ref = nullptr;
    for (int o : s.operands)
      if (slicedDimOf(o) >= 0) ref = &p.stages[o];
    if (ref) {
      int rd = slicedDimOf(static_cast<int>(ref - p.stages.data()));
      if (s.type.shape[want] != ref->type.shape[rd])
        return c.fail(at, s.name, "its value is not sliced the way its operands are (dimension " + std::to_string(want) + " is broadcast)");
    }
    pl.sliceDim = want;
  } else if (isNormalizationKind(s.kind)) {  // rows of the last dimension: whole rows compute on their own
    // Whole rows on every rank: the slices must cut a dimension before the last. (Layernorm's
    // scale and shift have the last dimension's length alone: sliced, they would align with
    // the last dimension, so this check refuses that too, and they stay whole otherwise.)
    if (want == s.type.rank() - 1)
      return c.fail(
          at, s.name,
          "it normalizes along its last dimension (" + std::to_string(want) + "), which the slices of " + quote(ag.name) + " would cut");
    pl.sliceDim = want;
  } else {  // Reduce
    if (s.dim >= 0 && s.dim != want) {
      pl.sliceDim = s.dim < want && !s.keepdim ? want - 1 : want;  // reducing another dimension keeps the slice
    } else {
      pl.partial = true;
    }
  }
  plan[id] = pl;
  return true;
}

// Plans every listed stage, then finds which moved values are still needed whole outside the
// moved set.
bool Reorder::planMoves() {
  for (int id : moved)
    if (!planStage(id)) return false;
  bool any = false;
  for (auto& [id, pl] : plan) any = any || pl.sliceDim >= 0 || pl.partial;
  if (!any) return c.fail(pos[1], "", "none of the listed stages reads " + quote(p.stages[agId].name) + " or a value it can slice");

  auto users = p.users();
  for (int id : moved) {
    if (plan[id].sliceDim < 0) continue;
    bool e = std::find(p.outputs.begin(), p.outputs.end(), id) != p.outputs.end();
    for (auto& st : p.states) e = e || st.exit == id;
    for (int u : users[id]) e = e || !argOf.count(u);
    escapes[id] = e;
  }
  for (int u : users[agId]) agKeeps = agKeeps || !argOf.count(u);
  agKeeps = agKeeps || std::find(p.outputs.begin(), p.outputs.end(), agId) != p.outputs.end();
  return true;
}

// Readers of `from` outside the move read `to` instead.
void Reorder::redirect(int from, int to) {
  std::vector<int> keep{to};
  for (size_t u = 0; u < p.stages.size(); ++u)
    if (inside.count(p.stages[u].name)) keep.push_back(static_cast<int>(u));
  replaceUses(p, from, to, keep);
}

// Reductions, softmax and layernorm: read replicated operands through a slicing copy, inserted
// before stage `id`. Returns the stage's id after the insertions.
int Reorder::sliceReplicatedOperands(int id, const Plan& pl) {
  for (int k : pl.sliceOperands) {
    const Stage& s = p.stages[id];
    int o = s.operands[k];
    Stage copy;
    copy.kind = StageKind::Compute;
    copy.name = p.freshName(s.name + ".slice");
    copy.type = p.stages[o].type;
    copy.type.layout = Layout::sliced(d + (p.stages[o].type.rank() - agRank));
    copy.operands = {o};
    copy.expr.add(ENode::make(EOp::Operand, copy.type.dtype));
    copy.loc = s.loc;
    inside.insert(copy.name);
    insertStage(p, id, std::move(copy));
    ++id;
    p.stages[id].operands[k] = id - 1;
  }
  return id;
}

// The reduction `id` becomes a partial reduction on the slice, then a combine across ranks.
void Reorder::combinePartial(int id) {
  Stage& r = p.stages[id];
  std::string name = r.name;
  TensorType whole = r.type;
  ReduceKind kind = r.reduce;
  bool exactCombine = kind == ReduceKind::Max || kind == ReduceKind::Min || ast::isInteger(whole.dtype);
  int x = r.operands[0];
  // Partial results and their combination stay in the accumulation type (f32 for
  // 16- and 32-bit floats), as in the original reduction; only the result is rounded.
  DType acc = whole.dtype == DType::F16 || whole.dtype == DType::BF16 ? DType::F32 : whole.dtype;
  Stage part = r;
  part.name = p.freshName(name + ".partial");
  part.type.layout = Layout::local();
  part.type.dtype = acc;
  part.knobs.clear();
  part.reassociates.clear();
  if (kind == ReduceKind::Norm) {
    Stage sq;
    sq.kind = StageKind::Compute;
    sq.name = p.freshName(name + ".square");
    // The operand's type after the move: stages are rewritten from the last one back,
    // so a moved operand may not have its sliced type yet.
    sq.type = p.stages[x].type;
    if (int xd = slicedDimOf(x); xd >= 0)
      sq.type.layout = Layout::sliced(xd);
    else if (x == src)
      sq.type = p.stages[src].type;
    sq.type.dtype = acc;
    sq.operands = {x};
    int o = sq.expr.add(ENode::make(EOp::Operand, p.stages[x].type.dtype, {}, 0));
    sq.expr.add(ENode::make(EOp::Mul, acc, {o, o}));
    sq.loc = r.loc;
    inside.insert(sq.name);
    insertStage(p, id, std::move(sq));
    ++id;
    part.operands = {id - 1};
    part.reduce = ReduceKind::Sum;
  }
  Stage comb;
  comb.kind = StageKind::AllReduce;
  comb.name = p.freshName(name + ".combine");
  comb.type = whole;
  comb.type.dtype = acc;
  comb.op = kind == ReduceKind::Max ? ReduceOp::Max : kind == ReduceKind::Min ? ReduceOp::Min : ReduceOp::Sum;
  comb.loc = p.stages[id].loc;
  if (!exactCombine)
    comb.reassociates = "reorder re-associates the reduction " + quote(name) + " (partial sums on slices, combined by allreduce)";
  // The stage keeps its name and becomes the final step: the combine, or sqrt of it.
  inside.insert(part.name);
  p.stages[id] = std::move(part);
  insertStage(p, id + 1, std::move(comb));
  p.stages[id + 1].operands = {id};
  int last = id + 1;
  if (kind == ReduceKind::Norm || acc != whole.dtype) {
    // The final step: sqrt of the combined sum of squares, and/or the rounding to the
    // reduction's type; it takes the reduction's name.
    Stage fin;
    fin.kind = StageKind::Compute;
    fin.name = name;
    fin.type = whole;
    fin.operands = {id + 1};
    int o = fin.expr.add(ENode::make(EOp::Operand, acc));
    if (kind == ReduceKind::Norm) o = fin.expr.add(ENode::make(EOp::Sqrt, acc, {o}));
    if (acc != whole.dtype) fin.expr.add(ENode::make(EOp::Cast, whole.dtype, {o}));
    fin.loc = p.stages[id].loc;
    insertStage(p, id + 2, std::move(fin));
    last = id + 2;
  } else {
    p.stages[id + 1].name = name;
  }
  replaceUses(p, id, last, {id + 1});
}

// Rewrites the moved stages, highest id first so that insertions leave lower ids alone.
void Reorder::rewrite() {
  agName = p.stages[agId].name;
  group = p.stages[agId].type.group;
  for (auto& [id, e] : escapes)
    if (e) lastEscaping = std::max(lastEscaping, id);
  // The last gather made takes the all_gather's name when the original loses all its readers.
  if (!agKeeps && lastEscaping >= 0) p.stages[agId].name = p.freshName(agName + ".whole");
  for (int id : moved) inside.insert(p.stages[id].name);
  for (auto it = moved.rbegin(); it != moved.rend(); ++it) {
    int id = *it;
    Plan pl = plan[id];
    Stage& s = p.stages[id];
    for (auto& o : s.operands)
      if (o == agId) o = src;
    if (s.kind == StageKind::Compute || s.kind == StageKind::Send) {
      if (pl.sliceDim >= 0) s.type.layout = Layout::sliced(pl.sliceDim);
    } else {
      id = sliceReplicatedOperands(id, pl);
      if (pl.sliceDim >= 0) {
        p.stages[id].type.layout = Layout::sliced(pl.sliceDim);
      } else if (pl.partial) {
        combinePartial(id);
        continue;
      }
    }
    // Still needed whole: gather right after; readers outside the moved set read the gather.
    if (escapes.count(*it) && escapes[*it]) {
      Stage g;
      g.kind = StageKind::AllGather;
      g.name = *it == lastEscaping && !agKeeps ? agName : p.freshName(p.stages[id].name + ".ag");
      g.type = p.stages[id].type;
      g.type.layout = Layout::replicated();
      g.type.group = group;
      g.dim = p.stages[id].type.layout.dim;
      g.operands = {id};
      g.loc = p.stages[id].loc;
      g.regather = true;
      insertStage(p, id + 1, std::move(g));
      redirect(id, id + 1);
    }
  }
}

}  // namespace

bool reorder(StepContext& c) {
  Reorder r(c);
  if (!r.checkArguments() || !r.planMoves()) return false;
  r.rewrite();
  return true;
}

}  // namespace coconet::schedule
