// The dataflow IR: a program is a list of stages in execution order.
//
// Each stage computes one value from the values of earlier stages: an element-wise compute
// (an expression tree over its operands, one kernel's worth of arithmetic), a reduction, a
// row-wise normalization, a matmul / gemv / embedding, a collective or a send. A state's
// value on entry is a stage; its value on exit is whichever stage the program's `update`
// named (Program::states). Every value has a dtype, a symbolic shape, a layout and a process group; every
// stage keeps the source location it came from. Schedules (src/schedule) rewrite this IR;
// the interpreter (src/interp) executes it for P simulated ranks.
//
// Numerics, shared by the interpreter and the CUDA backend: a stage's result is rounded to
// its dtype when it is stored; inside a compute stage's expression, f16/bf16/f32 arithmetic
// is done in f32 (f64 in f64); reductions, matmuls and collectives combine terms in a fixed
// order (ranks in group order, elements in index order), a rank's sums of f16/bf16/f32 terms
// accumulated in f64 and rounded to f32 once (the GPU's tree of short sums is about that
// exact), the ranks' values combined in f32 (f64 for f64). So moving element-wise work across
// collectives or fusing it changes no bit.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ast/AST.h"
#include "ast/Types.h"
#include "ir/Knobs.h"
#include "support/Diagnostics.h"

namespace coconet::ir {

using ast::DType;
using ast::GroupInfo;
using ast::Layout;
using ast::ReduceOp;
using ast::Shape;
using ast::SizeExpr;

// The type of a value (a tensor: group nullptr means uniform, the same on every rank).
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  Layout layout;
  const GroupInfo* group = nullptr;
  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType&) const = default;
  std::string str() const;
};

// Rank `pos`'s block of a dimension of `n` elements sliced over `parts` ranks, as torch.chunk
// (and so DTensor's Shard) cuts it: blocks of ceil(n / parts) elements from the first rank on,
// the last ones shorter or empty (10 over 4: 3, 3, 3, 1; 5 over 4: 2, 2, 1, 0). Even where
// parts divides n.
struct Block {
  int64_t offset = 0, extent = 0;
};
Block sliceBlock(int64_t n, int64_t parts, int64_t pos);

// ---- Element-wise expressions (inside compute stages) -------------------------------------
// clang-format off
#define COCONET_EOPS(X)                                                                  \
  X(Operand) /* operand `index` of the stage, broadcast to the stage's shape          */ \
  X(Const) /* a number                                                                */ \
  X(Param) /* a scalar program parameter, by name                                     */ \
  X(Rank) /* this rank's position in `group`                                          */ \
  X(GroupIndex) /* which instance of `group` this rank is in                          */ \
  X(GroupSize) /* the number of ranks in `group` (world.size for the world)           */ \
  X(Neg) X(Not) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Lt) X(Le) X(Gt) X(Ge) X(Eq) X(Ne)  \
  X(And) X(Or) X(Abs) X(Relu)                                                            \
  X(Pow) X(Min) X(Max) X(Select)                                                         \
  X(Cast) /* convert to `dtype` (rounding)                                            */ \
  X(Dropout) /* args: x, p[, seed]; keeps x/(1-p) with probability 1-p               */
// clang-format on

// (and the math functions of one float tensor, ast/UnaryMath.def)
enum class EOp : uint8_t {
#define X(k) k,
  COCONET_EOPS(X)
#undef X
#define COCONET_UNARY_MATH(k, ...) k,
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
};
const char* eopName(EOp op);

struct ENode {
  EOp op = EOp::Const;
  DType dtype = DType::F32;          // the node's result type
  std::vector<int> args;             // indices of earlier nodes of the same expression
  int index = 0;                     // Operand: operand number
  double value = 0;                  // Const (an integer or bool literal: ivalue as the nearest double)
  int64_t ivalue = 0;                // Const of an integer or bool literal, exactly (integerConst())
  std::string name;                  // Param: parameter name
  const GroupInfo* group = nullptr;  // Rank, GroupIndex, GroupSize
  uint64_t salt = 0;                 // Dropout: stable id mixed into the random stream

  // A Const written as an integer or bool literal: its exact value is ivalue.
  bool integerConst() const { return op == EOp::Const && (ast::isInteger(dtype) || dtype == DType::Bool); }
  // Whether the node's value is an integer computed exactly (the interpreter and the generated
  // code alike): of type i8, u8, i32, i64 or bool, or an integer literal. Comparisons, min and max
  // of two such values compare them as integers; arithmetic of literals alone is in double.
  bool integerValued() const {
    return dtype == DType::I8 || dtype == DType::U8 || dtype == DType::I32 || dtype == DType::I64 || dtype == DType::Bool || integerConst();
  }

  static ENode make(EOp op, DType t, std::vector<int> args = {}, int index = 0) {
    ENode n;
    n.op = op;
    n.dtype = t;
    n.args = std::move(args);
    n.index = index;
    return n;
  }
};

// An expression DAG; the last node is the result.
struct Expr {
  std::vector<ENode> nodes;
  int add(ENode n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  std::string str(const std::vector<std::string>& operandNames) const;
};

// ---- Stages --------------------------------------------------------------------------------
// clang-format off
#define COCONET_STAGE_KINDS(X)                                                           \
  X(Input, "in")            /* a tensor the program takes                             */ \
  X(State, "state")         /* a state tensor's value on entry                        */ \
  X(Compute, "compute")     /* element-wise expression over the operands              */ \
  X(Reduce, "reduce")       /* sum/mean/norm/max/min over one dimension or all         */ \
  X(Softmax, "softmax")     /* over the last dimension                                */ \
  X(Layernorm, "layernorm") /* over the last dimension; operands x[, gamma, beta]      */ \
  X(Rmsnorm, "rmsnorm")     /* over the last dimension; operands x[, gamma]            */ \
  X(Matmul, "matmul")       /* 2-D or batched                                          */ \
  X(Gemv, "gemv")                                                                        \
  X(Embedding, "embedding") /* operands table, indices                                */ \
  X(EmbeddingGrad, "embedding_grad") /* operands dy, indices: the table's gradient   */ \
  X(AllReduce, "allreduce")                                                              \
  X(ReduceScatter, "reduce_scatter")                                                     \
  X(AllGather, "all_gather")                                                             \
  X(Broadcast, "broadcast")                                                              \
  X(Reduce1, "reduce_to_root") /* reduce(op, x, root)                                 */ \
  X(AllToAll, "all_to_all")                                                              \
  X(Send, "send")                                                                        \
  X(Permute, "permute")     /* output dimension k is input dimension perm[k] (blocks)  */ \
  X(Reshape, "reshape")     /* the same elements in row-major order, its type's shape  */ \
  X(Concat, "concat")       /* the operands one after another along dimension dim      */ \
  X(Narrow, "narrow")       /* dimension dim's range [start, start + its length)       */
// clang-format on

enum class StageKind : uint8_t {
#define X(k, s) k,
  COCONET_STAGE_KINDS(X)
#undef X
};
const char* stageKindName(StageKind k);
bool isCollectiveKind(StageKind k);
// softmax, layernorm, rmsnorm: each row of the last dimension on its own.
bool isNormalizationKind(StageKind k);

enum class ReduceKind : uint8_t { Sum, Mean, Norm, Max, Min };
const char* reduceKindName(ReduceKind k);

// A scalar that a stage reads at run time: a constant or a scalar parameter.
struct ScalarRef {
  double value = 0;
  std::string param;  // empty: the constant
  std::string str() const;
};

enum class Peer : uint8_t { NextRank, PrevRank, NextGroup, PrevGroup };

struct Stage {
  StageKind kind;
  std::string name;           // unique in the program; schedules refer to stages by it
  TensorType type;            // the value it produces
  std::vector<int> operands;  // ids of the stages whose values it reads
  SourceLoc loc;

  // Attributes (which ones apply depends on the kind).
  Expr expr;                            // Compute
  ReduceOp op = ReduceOp::Sum;          // AllReduce, ReduceScatter, Reduce1
  ReduceKind reduce = ReduceKind::Sum;  // Reduce
  int dim = -1;                         // Reduce: -1 for all; ReduceScatter/AllGather/Concat/Narrow: the dim
  std::vector<int> perm;                // Permute: output dimension k is operand dimension perm[k]
  SizeExpr start;                       // Narrow: the first index taken along `dim`
  bool keepdim = false;                 // Reduce: the reduced dimensions stay in the type, with length 1
  ScalarRef root;                       // Broadcast, Reduce1
  ScalarRef eps{1e-5, ""};              // Layernorm, Rmsnorm
  Peer peer = Peer::NextRank;           // Send
  std::string state;                    // State: the state's name
  bool regather = false;                // AllGather: made by reorder to rebuild a moved value for
                                        // readers outside the moved set (schedule patterns skip it)

  // Schedule data (plain, printable): the fused group this stage belongs to, overlap
  // partners and tuning knobs. The algorithm never depends on them.
  std::string fusedInto;  // name of the fused group, or ""
  Knobs knobs;            // what tune set (ir/Knobs.h)
  // A combining collective whose terms a schedule re-associated: why (verify then compares
  // within the rounding that allows); "" otherwise.
  std::string reassociates;
};

// "a matmul", "an allreduce", "an element-wise compute": how messages name a stage's kind.
std::string describe(const Stage& s);

// A group of stages the backend runs as one kernel (fuse), or a pipelined producer/consumer
// pair (overlap). Plain data: the members' semantics are unchanged.
struct FusedGroup {
  std::string name;
  std::vector<std::string> members;  // in execution order
  Knobs knobs;
  SourceLoc loc;  // the schedule line that made it
};

struct Overlap {
  std::string producer, consumer;  // stage or fused-group names
  int chunks = 2;                  // 0: one chunk per rank of the group (an all_to_all pipeline)
  int dim = 0;                     // the dimension of the producer's value that is chunked
  SourceLoc loc;
};

struct Param {
  std::string name;
  bool isSize = false;
  DType dtype = DType::I64;
  std::optional<double> value;  // bound by a default or -D
  int64_t ivalue = 0;           // the exact value of a bound size or integer parameter
};

using ast::Requirement;  // (one type from sema to the backend)

// A state tensor: the stage holding its value on entry and the stage whose value it takes
// on exit (the entry stage itself when nothing updates it). `sliced` is set by the slice
// primitive: the state is then kept sliced(0) across ranks between runs.
struct StateInfo {
  std::string name;
  int entry = -1, exit = -1;
  TensorType type;  // as declared (slice may change the layout to sliced(0))
};

struct Program {
  std::string name;
  std::vector<Param> params;
  std::vector<std::unique_ptr<GroupInfo>> groups;  // groups[0] is the world
  std::vector<Stage> stages;                       // in execution order; id = index
  std::vector<int> outputs;                        // stage ids returned, in order
  std::vector<std::string> outputNames;
  // The forward of a backward program (compile --saving): its last savedOutputs outputs are the
  // values the backward reads, not the caller's.
  int savedOutputs = 0;
  // A backward program: its inputs that are forward values (saved by the forward), by name.
  std::vector<std::string> savedInputs;
  std::vector<StateInfo> states;
  // Names of the program that denote another stage's value (`y = x`, a def's result): schedule
  // names resolve through them.
  std::map<std::string, std::string> aliases;
  std::vector<FusedGroup> fused;
  std::vector<Overlap> overlaps;
  std::vector<Requirement> requirements;

  int find(const std::string& stageName) const;  // -1 if absent
  int resolve(const std::string& name) const;    // find, following aliases
  const FusedGroup* findFused(const std::string& n) const;
  std::vector<std::vector<int>> users() const;  // users()[id]: stages reading stage id
  const GroupInfo* world() const { return groups.front().get(); }
  std::string freshName(const std::string& base) const;
};

// Deep copy (groups are copied and every pointer re-targeted).
Program clone(const Program& p);

// The chain of the all_to_all pipeline from all_to_all `x` to all_to_all `back` (overlap(x,
// back)): every stage between them that reads x or a stage of the chain, in order. Each must
// work on the block of dimension 0 that one rank sent: a matmul of a chain value by a weight
// without that dimension (a matrix for a rank-2 left operand; lower rank than the left operand
// otherwise), or an element-wise compute whose chain operands have its shape; none fused or
// sliced. `bad` is the first stage that is not (-1: none), `why` how, `operand` the operand
// at fault where one is.
struct ExchangeChain {
  enum class Why { None, Fused, Sliced, ExchangedWeight, WeightDim0, Broadcast, Kind };
  std::vector<int> stages;
  int bad = -1, operand = -1;
  Why why = Why::None;
};
ExchangeChain exchangeChain(const Program& p, int x, int back);

// Readable text form; `emit --stage ir` prints it.
std::string print(const Program& p);

// Structural checks (operands precede users, names unique, types consistent); a failure is
// an internal error naming the stage.
void verifyStructure(const Program& p);

}  // namespace coconet::ir
