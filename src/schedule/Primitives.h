// The schedule primitives. Each states its preconditions here, checks all of them before it
// changes anything, and on failure reports an error at the schedule line that names the
// primitive, the stage and the reason ("cannot split 'y': it is a matmul, not an allreduce"),
// leaving the program unchanged. On success it fills `made` with the names it created, in the
// order the step's targets name them.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Schedule.h"

namespace coconet::schedule {

struct StepContext {
  ir::Program& p;
  const Step& step;
  DiagnosticEngine& diags;
  std::vector<std::string> made;

  // Reports "cannot <primitive> 'name': why" at the argument (or the step).
  bool fail(const Arg* at, const std::string& what, const std::string& why);
  // The stage a positional argument names (following aliases), or -1 after an error.
  int stage(const Arg& a);
  // The positional (stage-name) arguments and the knob arguments.
  std::vector<const Arg*> positional() const;
  const Arg* knob(const std::string& key) const;
  // Rejects knobs other than `allowed` and target counts other than `targets` (-1: any).
  bool expectShape(const std::vector<std::string>& allowed, int minPos, int maxPos, int targets);
};

// Adds `value % divisor == 0` as a requirement unless it holds for every size.
// (even: an even split of a sliced dimension, ast::Requirement::even)
void requireDivisible(ir::Program& p, const ir::SizeExpr& value, const ir::SizeExpr& divisor, const std::string& reason, SourceLoc loc,
                      bool even = false);

// rs, ag = split(ar): an allreduce becomes a reduce_scatter (sliced(0)) followed by an
// all_gather; readers of the allreduce read the all_gather.
// Preconditions: `ar` is an allreduce of a tensor of rank >= 1; at most two target names.
// Adds the requirement that dimension 0 divides by the group's size.
bool split(StepContext& c);

// reorder(ag, s1, s2, ...): the listed stages, which read the all_gather `ag` (directly or
// through each other), run before it on slices; each moved value that is still needed whole
// is gathered again. A whole-tensor or other-dimension reduction on slices becomes a partial
// reduction plus an allreduce (this re-associates the reduction, which verify accounts for).
// Preconditions: `ag` is an all_gather; every listed stage is an element-wise compute, a
// reduction, a softmax or layernorm whose slices hold whole rows (the gathered dimension is not
// its last), or a send between groups (position i sends to position i, so slices stay put)
// that comes after `ag` and reads `ag`, a listed stage, or a replicated value of ag's shape; no
// operand of a listed stage is local, or sliced on another dimension; a moved value that is
// sliced covers the gathered dimension with its full extent.
bool reorder(StepContext& c);

// slice(s1, s2, ...): states kept sliced(0) between runs (ZeRO-style): each rank stores only
// its slice, and the all_gather that rebuilt the whole state goes away.
// Preconditions: each name is a replicated state of rank >= 1 in the world group; every stage
// reading the state's entry value reads it on slices of dimension 0 (reorder it first); the
// state's new value is computed on those slices (possibly then gathered).
bool sliceState(StepContext& c);

// f = fuse(s1, s2, ...): the stages run as one kernel. Semantics are unchanged; the stages are
// moved next to each other in execution order.
// Preconditions: at least two stages, none already fused, all in one process group; no
// stage outside the set both reads a member and is read by a member (the set is convex);
// members are element-wise computes, reductions over one dimension and softmax, layernorm
// and rmsnorm, optionally after one reduce_scatter or allreduce at the start and before one
// all_gather or all_to_all at the end; matmuls and other collectives are not fused.
bool fuse(StepContext& c);

// overlap(producer, consumer, chunks = N, dim = D): the producer (matmul, gemv or embedding) is
// computed in N chunks along dimension D of its value (default 0; never the contracted one,
// which is not part of the value) and the consumer (a collective, a compute, or a fused group reading it)
// processes chunk i while chunk i+1 is produced.
// Preconditions: the producer is a matmul, gemv or embedding; the consumer reads it; every
// consumer stage maps row i of its inputs to row i of its output (element-wise, allreduce, a
// reduction over a dimension other than D, a normalization whose last dimension is not D, a
// reduce_scatter ... all_gather pair) or is a final
// all_to_all (chunk c then carries sub-block c of every destination's block); the consumer's
// results are not sliced; no consumer reduction runs over dimension D; dimension D is not
// sliced across ranks; N >= 2. Adds the requirement that dimension D divides into N chunks
// (times the group size when D is 0 and the consumer scatters or exchanges blocks along it).
//
// overlap(x, back) with x an all_to_all: the stages between x and the all_to_all `back` run rank
// block by rank block (step i on the block of dimension 0 that rank me - i sent, while the next
// block arrives and the previous result returns). Preconditions: `back` is an unfused
// all_to_all of x's group that reads the last value computed from x; every stage between them
// that reads x or such a value is a matmul of it by a weight without its dimension 0 (a matrix
// for a rank-2 left operand; lower rank than the left operand otherwise) or an element-wise
// compute whose operands computed from x have its shape; none is fused or sliced; no `chunks`;
// `dim` is 0 if given. Records chunks = 0 (one chunk per rank).
bool overlap(StepContext& c);

// tune(s, key = value, ...): knobs the backend reads (blocks, chunks, algorithm = ll | one_shot |
// two_shot | ring | nccl | copy_engines, gather, tail, merge, roles, movers, taper, taper_ends, occupancy;
// docs/language.md 17.3.6), stored as plain data on a stage or a fused group.
bool tune(StepContext& c);

}  // namespace coconet::schedule
