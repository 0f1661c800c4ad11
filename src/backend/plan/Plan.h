// Plan.h: what the CUDA backend decided for one program before it writes any code. For every
// stage: what run() does at its place (the launch that computes it there, or which launch
// computes it elsewhere) and how its value is stored. The planning passes (Emitter::plan*) make
// the decisions; Emitter::assemblePlan turns them into a Plan, where every stage has exactly one
// owner (Plan::claim: a stage two launches take is an internal error); Emitter::emitBody writes
// run() by walking the plan; `coconetc emit --stage plan` prints it (print) with the reasons.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/plan/Forms.h"
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
  Given,  // an input, or a state's value on entry: the caller's tensor
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
  Alias,         // a reshape's value: the storage of its operand (`from`), in a new shape; no copy
  Permuted,      // a permute that only element-wise kernels read: its operand's storage (`from`),
                 // which they read through the permutation (their coordinate path); no copy
  Transposed,    // a 2-D transpose that only 2-D matmuls read: its operand's storage (`from`), which
                 // they read transposed (cuBLAS's op T); no copy
};

const char* stepName(Step s);
const char* storageName(Storage s);
inline bool isLaunch(Step s) { return s <= Step::AllReducePair; }

struct Decision {
  Step step = Step::Stage;
  int owner = -1;    // the stage that names the launch (see Step); the stage itself for a launch
  std::string what;  // the launch's label where it is one (a group's or chain's name)
  std::string why;   // why this form: printed by `emit --stage plan`
  // Where a schedule's overlap of this producer runs unchunked, why (also in the generated code).
  std::string unchunked;
  // A launch whose code runs inside another launch's kernel (a scalar chain computed first in a
  // device group's blocks): that launch's stage; -1: a kernel of its own.
  int foldedInto = -1;
  Storage storage = Storage::Buffer;
  std::string into;      // Direct: the caller's tensor; BlockOnly: the rank group's size
  std::string intoWhat;  // Direct: what the tensor is ("output 'y'", "state 'm'"); BlockOnly: "world.size"
  int from = -1;         // InBag, InReduction: the reduction; Alias: the operand
};

class Plan {
public:
  explicit Plan(size_t stages = 0) { reset(stages); }
  // The forms the passes chose (Forms.h), by stage id; each pass fills its own, later passes and
  // the emitters read them. assemble (Emitter::assemblePlan) derives the decisions below from them.
  std::map<int, Chunked> chunked;           // by producer
  std::set<int> overlapped;                 // consumer members emitted with their producer
  std::map<int, std::string> overlapNotes;  // producer -> why its overlap runs unchunked
  std::map<int, DevGroup> devGroups;        // by the first member
  std::set<int> devMembers;                 // members other than the first
  std::set<int> devFallbackOnly;            // values only the NCCL fallback stores (workspace made there)
  std::map<int, DevGroup> devChunked;       // by producer
  std::map<int, DevAllReduce> devAR;        // by the stage that writes the result
  // Why a fused [allreduce, ...] group that tune(f, algorithm = two_shot) asked for runs as the
  // allreduce and then the members (twoShotObstacle), by the allreduce: the generated code and the
  // printed plan say so.
  std::map<int, std::string> arGroupNotes;
  std::map<int, int> arPair;                                  // all_gather -> its reduce_scatter
  std::map<int, int> bagOf;                                   // embedding -> the reduction that gathers it
  std::map<int, int> bagReduce;                               // reduction -> its embedding
  std::map<int, std::string> blockOnly;                       // pipeline stages stored one block: stage -> its group's size
  std::set<int> ncclOnly;                                     // pipelines' x stored only where NCCL pairs move it (not copy engines)
  std::map<int, std::pair<std::string, std::string>> direct;  // stage -> (tensor, what it is)
  std::set<int> aliased;                                      // entries read by their exit's kernel
  std::map<int, std::vector<int>> runOf;                      // stage -> the fused run it belongs to
  std::set<int> unstored;                                     // run members whose values never leave the kernel
  std::map<int, ScalarChain> scalarChains;                    // by the first stage
  std::map<int, int> scalarChainOf;                           // stage -> the first stage of its chain
  std::map<int, int> devSend;                                 // send stage -> its window's index
  std::map<int, int> devA2A;                          // all_to_all stage -> its window's index (one kernel: push, barrier, copy out)
  std::map<int, InlineSrc> inlineSrc;                 // reduction -> its computed elements
  std::map<int, int> inlinedInto;                     // stage -> the reduction that computes it
  std::map<int, RowGroup> rowGroups;                  // by the first member
  std::map<int, int> rowGroupOf;                      // member -> the first member of its row group
  std::map<std::string, std::string> rowGroupWhyNot;  // fused groups with a reduction that are no row group: why
  std::map<int, int> foldedInto;                      // reduction -> the first member of its device group
  int devIndices = 0;  // collectives on the device path (their windows in Dev_: stage, slice, oneShot, parity)

  // The decisions: a fresh set for `stages` stages (the forms above stay).
  void reset(size_t stages) {
    d_.assign(stages, Decision{});
    claimed_.assign(stages, nullptr);
  }
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
