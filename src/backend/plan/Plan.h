// Plan.h: what the CUDA backend decided for one program before it writes any code. For every
// stage: what run() does at its place (the launch that computes it there, or which launch
// computes it elsewhere) and how its value is stored. The planning passes (Emitter::plan*) make
// the decisions; Emitter::assemblePlan turns them into a Plan, where every stage has exactly one
// owner (Plan::claim: a stage two launches take is an internal error); Emitter::emitBody writes
// run() by walking the plan; `coconetc emit --stage plan` prints it (print) with the reasons.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::backend::plan {

// What run() does at a stage's place. The first group launches work there; the second says
// which launch (Decision::owner) computes the stage instead.
enum class Step {
  // ---- launches ----
  Stage,            // the stage's own lowering: a kernel, a GEMM, an NCCL call, a copy; for an
                    // element-wise run, its first member's kernel computes the run
  DeviceGroup,      // a fused group as one kernel over NCCL's device API (owner: itself)
  RowGroup,         // a fused group of element-wise stages and row reductions as one row kernel
  ScalarChain,      // consecutive one-element stages as one single-thread kernel
  Overlap,          // an overlap's pipeline (owner: the producer), placed at its first consumer
  DeviceAllReduce,  // an allreduce, or a fused [reduce_scatter, all_gather] pair, over the device API
  AllReducePair,    // a fused [reduce_scatter, all_gather] pair (this stage) as one NCCL allreduce
  // ---- stages that another launch computes ----
  InDeviceGroup,    // a member of the device group that starts at `owner`
  InRowGroup,       // a member of the row group that starts at `owner`
  InScalarChain,    // a member of the scalar chain that starts at `owner`
  InReduction,      // computed element by element inside reduction `owner`, never stored
  InBag,            // looked up inside the embedding-bag reduction `owner`
  InRun,            // an element-wise member of the run that stage `owner` launches
  OverlapProducer,  // an overlap's producer, computed in the pipeline launched at stage `owner`
  InOverlap,        // a consumer member of the overlap whose producer is `owner`
  InAllReducePair,  // the reduce_scatter of the pair whose all_gather (`owner`) is one allreduce
  // ---- no code ----
  Given,            // an input, or a state's value on entry: the caller's tensor
};

// How run() stores a value.
enum class Storage {
  Input,         // the caller's tensor
  State,         // the caller's state, its value on entry
  Buffer,        // a workspace of its own
  Direct,        // written straight into the caller's output or state (`into`)
  BlockOnly,     // one rank block at a time: `into` is the group's size (an all_to_all pipeline)
  NcclOnly,      // only where its all_to_all pipeline runs as NCCL pairs
  FallbackOnly,  // only where its fused group runs as NCCL calls (a device group keeps it inside)
  InBag,         // never stored: looked up inside an embedding-bag reduction (`from`)
  InKernel,      // never stored: computed and used inside a fused group's kernel
  InChunks,      // never stored whole: computed chunk by chunk into an overlap's staging buffers
  InReduction,   // never stored: computed inside reduction `from` at each element
};

const char* stepName(Step s);
const char* storageName(Storage s);
inline bool isLaunch(Step s) { return s <= Step::AllReducePair; }

struct Decision {
  Step step = Step::Stage;
  int owner = -1;  // the stage that names the launch (see Step); the stage itself for a launch
  std::string what;  // the launch's label where it is one (a group's or chain's name)
  std::string why;   // why this form: printed by `emit --stage plan`
  // Where a schedule's overlap of this producer runs unchunked, why (also in the generated code).
  std::string unchunked;
  // A launch whose code runs inside another launch's kernel (a scalar chain computed first in a
  // device group's blocks): that launch's stage; -1: a kernel of its own.
  int foldedInto = -1;
  Storage storage = Storage::Buffer;
  std::string into;     // Direct: the caller's tensor; BlockOnly: the rank group's size
  std::string intoWhat;  // Direct: what the tensor is ("output 'y'", "state 'm'"); BlockOnly: "world.size"
  int from = -1;         // InBag, InReduction: the reduction
};

class Plan {
public:
  explicit Plan(size_t stages = 0) : d_(stages), claimed_(stages, nullptr) {}
  // Stage `id` is computed by the launch `owner` names, in the form `step`; `pass` names who
  // decided. A second claim of one stage throws InternalError naming both.
  Decision& claim(int id, Step step, int owner, const char* pass);
  bool claimed(int id) const { return claimed_.at(static_cast<size_t>(id)) != nullptr; }
  const Decision& at(int id) const { return d_.at(static_cast<size_t>(id)); }
  Decision& storageOf(int id) { return d_.at(static_cast<size_t>(id)); }
  size_t size() const { return d_.size(); }
  // Every stage claimed (inputs and states by the storage pass): else InternalError.
  void checkComplete(const ir::Program& p) const;

private:
  std::vector<Decision> d_;
  std::vector<const char*> claimed_;
};

// The plan as text: one line per stage in program order (its step, owner, storage and reasons),
// then the launches in order. `header` is its first line.
std::string print(const ir::Program& p, const Plan& plan, const std::string& header);

}  // namespace coconet::backend::plan
