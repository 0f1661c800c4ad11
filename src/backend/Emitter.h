// Emitter.h: the CUDA backend's code generator, private to src/backend (CudaEmitter.h is its
// interface). One class; its member functions are defined by concern, in two folders:
//   CudaEmitter.cpp        the order of it all: plan (makePlan), then write the files (run)
//   plan/                  deciding: each pass chooses forms for groups of stages (Forms.h), and
//                          Assemble.cpp makes them one plan (Plan.h) with one owner per stage
//     Runs.cpp             element-wise runs, results written straight where the caller keeps them
//     RowGroups.cpp        fused element-wise stages and row reductions as one row kernel
//     Overlaps.cpp         overlaps: chunked producers, all_to_all pipelines, their device epilogues
//     DeviceGroups.cpp     fused groups, allreduces, pairs, sends over NCCL's device API
//     ScalarChains.cpp     scalar chains, reductions folded into a device group's kernel
//     Reductions.cpp       embedding bags, chains computed inside their reduction
//     KnobWarnings.cpp     tune knobs the backend does not take or reads nowhere
//   emit/                  writing: each file one kind of launch or one part of the output
//     Body.cpp             run()'s checks and storage, then each stage's code as the plan says
//     Elementwise.cpp      element-wise kernels and runs, expression nodes, index maps
//     Gemm.cpp             cuBLAS GEMMs, embeddings
//     Shape.cpp            shape operations (permute, concat, narrow)
//     Torch.cpp            the PyTorch target's package (operator, Python module, setup.py)
//     Reduce.cpp, Rowwise.cpp   reductions and embedding bags; softmax, layernorm, rmsnorm
//     RowGroup.cpp         row groups' kernels
//     Overlap.cpp          overlaps' chunked pipelines
//     DeviceKernel.cpp, DeviceRounds.cpp, DeviceGroup.cpp, DeviceAllReduce.cpp, ScalarChain.cpp
//                          device-API kernels and their launches
//     Interface.cpp        the header's C++ API, the C interface, the fallback's call
//     Build.cpp            the driver program, CMakeLists.txt and manifest.json
//     Kernels.h            what the phases of one lowering share (a device group's kernel, ...)
//     Spelling.{h,cpp}     types, names, numbers and sizes as generated code spells them
#pragma once

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/CudaEmitter.h"
#include "backend/emit/Kernels.h"
#include "backend/emit/Spelling.h"
#include "backend/plan/Forms.h"
#include "backend/plan/Plan.h"
#include "backend/tuning/Tuning.h"
#include "ir/Rewrite.h"

namespace coconet::backend::detail {

using namespace ir;

// Reductions `ids` (operator structs `ops`) over the block in one tree pass: a shared array per
// value, then one coconet_rt::blockReduceEach call on the accumulators acc<id>, each line
// indented by `ind` (emit/DeviceKernel.cpp).
std::string blockReduceEachCode(const std::vector<int>& ids, const std::vector<std::string>& ops, const std::string& ind);

class Emitter {
public:
  Emitter(const Program& p, const CompileOptions& o)
      : p_(p),
        o_(o),
        cls_(o.className.empty() ? className(p.name) : o.className),
        tuning_(o.tuning ? (tuningMeasured_ = true, *o.tuning) : tuning::forArch(o.arch, tuningMeasured_)),
        devOverlapBlocks_(static_cast<int>(tuning_.value("dev_overlap_blocks"))),
        gatherFlopsPerByte_(static_cast<int>(tuning_.value("gather_flops_per_byte"))),
        devMaxBlocks_(static_cast<int>(tuning_.value("dev_max_blocks"))) {}

  // Plans, then writes the output folder's files (their paths into `files`).
  void run(std::vector<std::string>& files);
  // Plans and prints the plan (`emit --stage plan`), the fallback's after it; writes nothing.
  std::string planText();

private:
  const Program& p_;
  const CompileOptions& o_;
  std::string cls_;
  // The tuning table --arch selects (tuning/Tuning.h), and whether it was measured for that arch.
  bool tuningMeasured_ = false;
  const tuning::Table& tuning_;
  std::ostringstream kernels_, body_;
  // The fallback's class (CompileOptions::unscheduled), empty if none; the texts it wrote (for
  // the manifest's hash) and whether it uses the device header; the schedule's own requirements
  // (it runs where one fails) and the conditions under which the schedule does not pay (it runs
  // where one holds), both found once in run().
  std::string fallbackCls_, fallbackText_;
  std::vector<const ir::Requirement*> fallbackWhenNot_;
  std::vector<std::string> fallbackWhen_, fallbackWhy_;  // (C++ on the sizes; the same in words)
  bool fallbackDevice_ = false;
  // The first launch of the plan whose code takes even slices only (an overlap over a sliced
  // value), in words; empty where every launch takes the uneven blocks of
  // ir::sliceBlock. Only then do the even requirements (ast::Requirement::even) hold run() back.
  // (The device-API forms take even slices too; where a run's are uneven, devReady says no and
  // their NCCL calls run.) Found by makePlan.
  std::string evenNeed_;
  void findEvenNeed();
  // An even requirement that no launch of this plan needs.
  bool evenUnneeded(const ir::Requirement& r) const { return r.even && evenNeed_.empty(); }
  // Whether the fallback's plan takes uneven slices everywhere (planned without warnings).
  bool fallbackTakesUneven() const;
  // A requirement under which run() takes the fallback where it fails (fallbackWhenNot_).
  bool fallbackRuns(const ir::Requirement& r) const {
    return std::find(fallbackWhenNot_.begin(), fallbackWhenNot_.end(), &r) != fallbackWhenNot_.end();
  }
  bool usesDeviceHeader() const { return usesDevice() || fallbackDevice_; }
  // A requirement the schedule added (the fallback lacks it): run() takes the fallback where it
  // does not hold.
  bool scheduleOwn(const ir::Requirement& r) const {
    return o_.unscheduled && std::none_of(o_.unscheduled->requirements.begin(), o_.unscheduled->requirements.end(),
                                          [&](const ir::Requirement& b) { return r.sameCondition(b); });
  }
  // Conditions (C++ on the sizes) under which the schedule does not pay: an all_to_all pipeline
  // whose per-block GEMMs are read-bound reads every weight once per rank block, where the
  // unscheduled program reads it once (gatherBatchedRows).
  std::vector<std::pair<std::string, std::string>> unprofitable() const;  // (C++ condition, in words)
  // run()'s call of the fallback where the schedule's own requirements do not hold or it does not pay.
  void emitFallbackCall();
  // A warning at each even requirement (ast::Requirement::even) that sizes known at compile time
  // break on 2, 4 or 8 ranks, naming the rank counts it admits; the language runs any size, the
  // CUDA code's overlaps over sliced values (evenNeed_) take even slices only.
  void warnEvenSizes() const;
  // Finds fallbackWhenNot_ and fallbackWhen_; the options the fallback's emitter takes.
  void findFallback();
  CompileOptions fallbackOptions() const;
  // The planning passes in order, then the plan (assemblePlan) and the warnings they found.
  void makePlan();

  void write(const std::string& name, const std::string& text, std::vector<std::string>& files);

  // What the backend does not lower yet is refused at compile time, naming the stage.
  void checkSupported();

  std::string stageComment(const Stage& s) const;

  std::string var(int id) const {
    auto o = varAs_.find(id);
    return o != varAs_.end() ? o->second : "v" + std::to_string(id);
  }
  // Stages whose value the code being emitted reads or writes under another name (an all_to_all
  // pipeline step: the block where it arrived, the result where it goes).
  std::map<int, std::string> varAs_;
  std::string shapeVar(int id) const { return "sh" + std::to_string(id); }
  std::string countVar(int id) const { return "n" + std::to_string(id); }
  // The length of stage id's rows: its last dimension (an expression), "1" below rank 2 (a
  // rank-1 tensor's rows are its elements).
  std::string lastDim(int id) const;

  std::string commOf(const GroupInfo* g) const;
  int groupIndex(const GroupInfo* g) const;
  std::string g(const GroupInfo* gi, const char* field) const { return "g" + std::to_string(gi ? groupIndex(gi) : 0) + "_" + field; }
  // A tensor's block on this rank (ir::sliceBlock's cut, uneven sizes included), as expressions
  // of run()'s scope (S_, the group coordinates): the extent of dimension k (its block's where it
  // is the sliced one), and where the block of the sliced dimension starts in the whole ("" for
  // a tensor that is not sliced).
  std::string localDim(const TensorType& t, int k) const;
  std::string sliceStart(const TensorType& t) const;
  // The group coordinates (gI_inst, gI_pos, gI_size of every group) from rank_, P_ and the
  // sizes `sz`; emitGroupCoordinates adds the groups' communicators.
  std::string groupCoordinateText() const;

  // ---- The header: the C++ API ----
  std::string headerText();

  // ---- The source ----
  std::string sourceText();

  // ---- The C interface (for ctypes and other languages); see tools/bench/gpu/README.md ----
  std::string cfn(const std::string& f) const { return "coconet_" + cls_ + "_" + f; }

  std::string cInterfaceDecls() const;

  std::string interfaceJson() const;

  std::string cInterfaceSource() const;

  // run()'s body (emit/Body.cpp): its checks, the group coordinates, the storage of every value,
  // each stage's code as the plan says (emitPlanned), then the results.
  void emitBody();
  void emitArgumentChecks();
  void emitGroupCoordinates();
  void emitRequirementChecks();
  void emitUnevenFlag();
  void emitStorage();
  void emitResults();

  // ---- The plan: every stage's owner and storage (backend/plan/Plan.h) ----
  // The planning passes' decisions as one plan (plan/Assemble.cpp), after the passes ran.
  plan::Plan plan_;
  void assemblePlan();
  // InternalError where two passes took one stage into launches of their own (overlapAt: the
  // overlaps launched after their producer, at stage -> producer), or an overlap lost its launch.
  void checkOneOwner(const std::map<int, int>& overlapAt) const;
  static bool aliasable(plan::Storage s);
  bool foldableTranspose(int i) const;
  bool foldablePermute(int i) const;
  bool permuteReadInPlace(int i, const std::function<bool(int)>& readerTakes) const;
  // run()'s code at stage i's place, as the plan says.
  void emitPlanned(int i);

  static std::string jsonEscape(const std::string& s);

  // A grid-stride kernel's launch over n elements (one block at least: an empty slice of uneven
  // ones launches nothing to do, not an invalid grid).
  std::string launch(const std::string& n) const { return "coconet_rt::gridFor(" + n + "), 256, 0, stream_"; }

  // Allocation of stage id's buffer: countVar(id) elements, or `count` (an expression) when given.
  std::string bufferEnsure(int id, const std::string& count = "") const;

  // The kernel between a tensor sliced along dimension d and its P parts one after another (part
  // q at q slices): toParts writes the parts from the tensor (before a reduce-scatter of another
  // dimension than 0), else the tensor from the gathered parts (after such an all-gather).
  static std::string partsKernel(const std::string& kname, const std::string& T, int d, bool toParts);

  void emitStage(int id);
  void emitAllToAll(int id);  // emitStage's all_to_all
  void emitSend(int id);      // and send

  // Fills an OutputMap for stage `id` and an OperandMap per operand (host code).
  void emitMaps(int id) { emitMaps(id, p_.stages[id].operands); }
  void emitMaps(int id, const std::vector<int>& operands);

  // One expression node of `x` as C++ statements (one; a dropout's kept value takes a second),
  // each line at indentation `ind`. `v` names the node's variable; `operand` gives the expression
  // of an Operand node, `scalar` the kernel parameter of a Rank/GroupIndex/GroupSize. Integer
  // nodes compute in long long as the interpreter does (coconet_rt::iadd and the like).
  std::string nodeCode(const Expr& x, const ENode& n, const std::string& v, const std::vector<std::string>& args,
                       const std::string& operand, const std::string& scalar, const std::string& ind);
  // A node's value converted for storage as type t (Store<T>::from: an integer node's value as a
  // long long, exactly; a bool as 0 or 1).
  static std::string storeValue(DType t, const ENode& last, const std::string& v);

  // ---- Element-wise kernels: how they read operands: plan::Access (backend/plan/Forms.h) ----
  using Access = plan::Access;

  // Where element i reads external operand k on a fast path: at its base (parameter bk) plus
  // i, at `iMod` modulo its length (bk holds the length), or its one element bk.
  static std::string fastIndex(Access a, size_t k, const std::string& i, const std::string& iMod);

  Access accessOf(int operand, const Stage& out) const;
  // Whether an operand of type `ot` holds one value a row of `t` (its shape with the last
  // dimension 1: a keepdim reduction's result), stored so that row j's value is at j past its
  // base: an element-wise kernel then reads it at index i / (t's last dimension) (Access::Row).
  static bool rowBroadcast(const TensorType& ot, const TensorType& t);

  // A program parameter's value in run() as a double: `sc.NAME` for a scalar, the size
  // `sz.s_NAME` converted for a size.
  std::string paramValue(const std::string& name) const;
  // Whether a parameter is an integer (a size, or a scalar of an integer type), and its value in
  // run() as a long long, exactly (`sz.s_NAME`, `sc.NAME`).
  bool integerParam(const std::string& name) const;
  std::string paramInteger(const std::string& name) const;
  // A stage's run-time scalar (a root, an eps): its constant, or paramValue of its parameter.
  std::string scalarValue(const ScalarRef& r) const;
  // Node i of e as a host expression in run(), computed in each node's type as the kernels do,
  // where it is made of constants, program parameters and the arithmetic below; nullopt
  // otherwise (an operand, a rank, an integer division, a cast to f16, ...).
  std::optional<std::string> hostScalar(const Expr& e, int i) const;

  // The kernel parameters (and host arguments) for the program parameters and group
  // coordinates that a run's expressions use.
  void runParams(const std::vector<int>& run, std::vector<std::string>& params, std::vector<std::string>& hostArgs) const;

  // The statements computing every member of a run for one element: operand(k) reads external
  // operand k (an index into extIndex's order), store(id) writes member id; members see each
  // other's values rounded to their dtypes (r<id>), and the stores come after all members.
  std::string runMembers(const std::vector<int>& run, const std::map<int, int>& extIndex, const std::vector<int>& written,
                         const std::string& ind, const std::function<std::string(int)>& operand,
                         const std::function<std::string(int)>& store, bool uniqueNames = false);
  // Values hoisted out of a kernel's loops while hoist_ is set (Hoisted, HoistScope: emit/Kernels.h).
  Hoisted* hoist_ = nullptr;

  void emitComputeRun(const std::vector<int>& run, const std::string& stream = "stream_", const std::string& first = "",
                      const std::string& count = "");
  RunShape runShape(const std::vector<int>& run) const;
  // The kernel's loops: through the coordinates, or linear in vector steps with a scalar tail.
  std::string runLoops(const std::vector<int>& run, const RunShape& r);
  // run()'s launch of the run's kernel on `stream` (from element `first`, `count` elements, where given).
  void emitRunLaunch(const std::vector<int>& run, const RunShape& r, const std::string& kname, const std::vector<std::string>& hostArgs,
                     const std::string& rowLength, const std::string& stream, const std::string& first, const std::string& count);

  bool neededOutside(int id, const std::set<int>& inside) const { return isUsed(p_, id, inside); }

  // Runs of a fused group's element-wise members that compile to one kernel.
  void planRuns();
  // ---- Overlaps: plan::Chunked (backend/plan/Forms.h) ----
  using Chunked = plan::Chunked;

  // The first consumer stage of the overlap of producer `prod` (its block is emitted there).
  int firstOverlapped(int prod) const;

  void planOverlaps();

  // ---- Fused collective groups over NCCL's device API: plan::DevGroup (backend/plan/Forms.h) ----
  using DevGroup = plan::DevGroup;

  // The chain m = [reduce_scatter, element-wise members..., all_gather] as a device group (with
  // `partial`, also [reduce_scatter, members...], [members..., all_gather] or [allreduce,
  // members...], DevGroup::arHead): false when it
  // does not qualify (not over the world, not a float sum, a member that is not element-wise
  // on the slice, an operand read through a map other than linear, periodic or scalar, or the
  // reduced slice needed elsewhere).
  bool analyzeDevGroup(const std::vector<int>& m, DevGroup& dg, bool partial = false) const;

  // Values of a device group (members m) that stay inside its kernel: only the NCCL fallback
  // stores them, so their workspace is made there (fallbackStorage).
  void markFallbackOnly(const std::vector<int>& m, const DevGroup& dg);
  std::string fallbackStorage(const std::vector<int>& ids, const std::string& ind) const;

  // The knobs of the fused group a stage belongs to (none when it belongs to none).
  const Knobs& groupKnobs(const Stage& s) const;

  static bool ncclAsked(const Knobs& knobs);

  void planDeviceGroups();

  // An overlap matmul -> reduce_scatter -> element-wise -> all_gather whose chain qualifies
  // moves each chunk's reduce-scatter with copy engines while the next chunk's GEMM runs
  // (every rank's partial sums of a rank's block land in that rank's staging window), then
  // runs the epilogue and the all-gather once as the device group's kernel, on devOverlapBlocks_
  // blocks (tune(f, blocks = B) sets fewer). Copy engines leave every SM to the GEMM, where a
  // kernel per chunk that pushes its slices itself shares the SMs with the next GEMM and hardly
  // overlaps it. The epilogue and all-gather run per chunk (each chunk's kernel on stream_ after
  // the next chunk's GEMM, copy engines pulling the other ranks' parts while the GEMMs go on) on
  // two ranks where the GEMM's flops per byte that crosses NVLink, 2 M N K / (2 (P - 1) / P M N e)
  // = K P / ((P - 1) e), reach gatherFlopsPerByte_ and the product is 16 MiB or more. Both, and
  // the blocks of a kernel with LSA barriers (devMaxBlocks_), come from the tuning table.
  const int devOverlapBlocks_, gatherFlopsPerByte_, devMaxBlocks_;
  // Some overlap may run its epilogue and all-gather per chunk (it needs comm3_ and ovRed_).
  bool gatherMayPipe() const;

  void planDeviceChunked();

  int devVecWidth(const DevGroup& dg) const;

  // The kernel's parameters and, for launch L, the host's arguments; `others` gets the external
  // operands other than the reduced slice (indices into dg.ext).
  void devSignature(const DevGroup& dg, const DevLaunch& L, std::vector<std::string>& params, std::vector<std::string>& hostArgs,
                    std::vector<int>& others) const;

  // Emits the kernel of a device group (once); returns its name. With `oneShot`, its one-shot
  // form (oneShotMode) instead.
  std::string emitDevKernel(const DevGroup& dg, bool oneShot = false);
  // The kernel's comment (its members and phases); its template, signature and opening
  // statements (solo, roles, barrier); the scalar chain, this block's part, the slots and
  // accumulators (fromChain, joinChunk0).
  void devKernelComment(const DevKernel& dk);
  void devKernelSignature(DevKernel& dk);
  void devKernelSetup(DevKernel& dk);
  // compute(lo, hi): the element code (what it hoists before it) of elements [lo, hi).
  void devKernelCompute(const DevKernel& dk);
  // Folds element i's value (`operand`: how an operand reads it) into each folded reduction.
  std::string devFold(const DevKernel& dk, const std::string& ind, const std::function<std::string(int)>& operand) const;
  // The chunks' edges, and the push, pull and fold statements the rounds take.
  void devKernelChunks(DevKernel& dk);
  // A push of elements `range` of every slice (byMovers: the movers' own), a pull of the other ranks' slices.
  std::string devPushOf(const DevKernel& dk, const std::string& range, bool byMovers) const;
  std::string devPullOf(const DevKernel& dk, const std::string& range) const;
  // With roles split: the workers' loop over the chunks, then the movers'.
  void devKernelWorkers(const DevKernel& dk);
  void devKernelMovers(const DevKernel& dk);
  // The rounds without roles split (or with movers = 0): push, compute and pull, with barriers.
  void devKernelRounds(const DevKernel& dk);

  // A full group [reduce_scatter, members..., all_gather] has a one-shot form where every rank
  // can compute every slice: its members read, besides the reduced values, only replicated (or
  // uniform) operands and no rank position, and it writes nothing but the gathered tensor (no
  // member stored, no folded reduction, no scalar chain). Then every rank pushes its whole input
  // into slot `me` of every rank's one-shot window, one barrier, and every rank sums every
  // element's slots (in rank order, as the two-shot form sums a slice's) and computes the members
  // over the whole tensor straight into the gathered output: one barrier instead of two and no
  // all-gather, for P times the pushed bytes and P times the computation, which pays where the
  // transfer is latency-bound. -1: no such form (not admitted, or tune(f, algorithm = two_shot |
  // copy_engines)); 0: up to coconet_rt::oneShotMaxBytes(P) of input per rank, the one-shot
  // allreduce's limit (512 KiB, 8 MiB on two ranks); 1: at every size (tune(f, algorithm =
  // one_shot | ll | ll128)). In either, the kernel's LL forms (kProto: lines with flags, no
  // barrier) run up to coconet_rt::llGroupMaxBytes(P) (LL) and ll128GroupMaxBytes(P) (LL128), or
  // at every size as `ll` / `ll128` asks (emitDevOneShot).
  int oneShotMode(const DevGroup& dg) const;
  // Whether tune(f, algorithm = one_shot | ll | ll128) asks for the one-shot form at every size.
  static bool oneShotAsked(const DevGroup& dg);
  // Why a group has no one-shot form ("" where it has one, whatever the knob says), and the
  // generated comment that says so where tune(f, algorithm = one_shot | ll | ll128) asked for it.
  std::string oneShotObstacle(const DevGroup& dg) const;
  // That obstacle where tune(f, algorithm = one_shot | ll | ll128) asked for the form ("" else).
  std::string oneShotRefused(const DevGroup& dg) const;
  std::string oneShotNote(const DevGroup& dg, const std::string& ind) const;
  // A warning (CompileOptions::diags) at the place where tune set `key` on `target` (a fused
  // group or a stage; else the group's fuse line), once per target and key: a knob the backend
  // does not take, and why.
  void warnKnob(const std::string& target, const std::string& key, const std::string& msg);
  // warnKnob where tune(f, algorithm = one_shot | ll | ll128) asked for a form group dg lacks.
  void warnOneShotNotTaken(const DevGroup& dg);
  // A warning at every knob the backend reads nowhere on its target as the schedule left it
  // (unreadKnob, KnobUse.h: blocks on an allreduce, any knob on a computation, gather on a group
  // no overlap pipelines, ...), in source order; where a knob is read only in some of a target's
  // forms (an overlap that may not chunk), it is taken as read.
  void warnUnreadKnobs();
  // With deviceCollectives off, every knob but algorithm = nccl | ring is read nowhere (each
  // collective is an NCCL call, the rest plain kernels): warnKnob at each, in source order, but
  // those warnUnreadKnobs warned at.
  void warnKnobsWithoutDevice();
  // Every knob tuned on a fused group or stage, in source order: (where, target, knob).
  struct KnobUse {
    SourceLoc at;
    std::string target;
    Knob knob;
    std::string value;
  };
  std::vector<KnobUse> tunedKnobs() const;
  std::set<std::pair<std::string, std::string>> knobWarned_;
  // The host code of the one-shot form's launch on stream_: its window, its OutputMap (keys by
  // the global index), its alignment test and the launch; `rsIn`: the whole input.
  void emitDevOneShot(const DevGroup& dg, const std::string& kname, const std::string& rsIn, const std::string& n, const std::string& ind);
  // A group [allreduce, members...] (DevGroup::arHead): its one-shot kernel where it is taken,
  // else its two-shot kernel where it has one (twoShotForm), else the allreduce (as plan_.devAR plans
  // it) and the members' kernel.
  void emitAllReduceGroup(const DevGroup& dg);
  // An allreduce group's two-shot form: the group read as [reduce_scatter, members...,
  // all_gather] over the flattened tensor, each rank summing its slice (n / P elements) of every
  // rank's input, computing the members there and gathering the last member's slices (the full
  // group's kernel, emitDevKernel). Its obstacle ("" where it has one): those of the one-shot form
  // (oneShotObstacle: the members read only replicated operands and no rank position), a member
  // besides the last stored for later stages (each rank would hold only its slice of it), the
  // knob (one_shot, ll, ll128, copy_engines). At run time it also needs n % P == 0 and, for an
  // operand read periodically (a bias along the last dimensions), its period dividing n / P.
  std::string twoShotObstacle(const DevGroup& dg) const;
  DevGroup twoShotForm(const DevGroup& dg) const;
  // An overlap's group (preloaded: copy engines fill its slots chunk by chunk) as the kernel that
  // pushes the slices itself, in rounds (epilogueAutoRounds) on blocks by size: what the overlap runs
  // at one chunk, after the one GEMM, where there is nothing to overlap (emitChunked).
  // Its rounds and their roles, movers, taper and occupancy are the group's tune knobs, as for a
  // group outside an overlap (readRoundKnobs); the preloaded kernel between chunks has none.
  DevGroup onePassForm(const DevGroup& dg) const;
  // tune(f, rounds | roles | movers | taper | occupancy) into a device group's kernel form.
  static void readRoundKnobs(const Knobs& knobs, DevGroup& dg);
  // The stage whose value a tail gathers: the all_gather's operand, or the member itself (agIsMember).
  int agSrc(const DevGroup& dg) const { return dg.agIsMember ? dg.ag : p_.stages[dg.ag].operands[0]; }
  // The host code of a device group's launch on stream_ after its alignment test `vec` (its rounds,
  // blocks and the launch), `ind` deep, with the launch's arguments hostArgs (devSignature).
  void emitDevLaunch(const DevGroup& dg, const std::string& kname, const DevLaunch& L, const std::vector<std::string>& hostArgs,
                     const std::string& ind);

  // What `emit` writes into the host code, each line prefixed with `ind` (code nested deeper
  // than the emitter that wrote it expects).
  void emitIndented(const std::string& ind, const std::function<void()>& emit);

  // The host's maps of a device group's other operands (over the slice's type).
  void emitDevMaps(const DevGroup& dg, const std::string& ind) {
    emitIndented(ind.substr(4), [&] { emitMaps(dg.ref, dg.ext); });
  }

  // The alignment test `vec` of launch L of a device group's kernel.
  void emitDevVec(const DevGroup& dg, const DevLaunch& L, const std::vector<int>& others, const std::string& ind);

  void emitDeviceGroup(const DevGroup& dg);

  // ---- Allreduces over NCCL's device API: plan::DevAllReduce (backend/plan/Forms.h) ----
  using DevAllReduce = plan::DevAllReduce;
  void emitCopyEngineAllReduce(const DevAllReduce& d, bool asked);
  std::string ceRounds(const DevGroup& dg) const;
  std::string devRounds(const DevGroup& dg) const;
  bool soloDevice() const;
  // A reduce-scatter head that pushes ends with a barrier after its last round only so that no
  // rank's next call pushes into slots that another rank still reads. A later device group of the
  // same call orders that already where it runs (every device kernel meets the other ranks at a
  // barrier or an exchange, which a rank reaches only after its earlier kernels ended), so the
  // head's kernel takes `lastBarrier` (0 where that group runs): its successor here, or null.
  const DevGroup* devSuccessor(const DevGroup& dg) const;
  bool takesLastBarrier(const DevGroup& dg) const { return dg.pushes() && !dg.tail(); }
  // A reduce-scatter head whose movers (roles split, whole barriers) may push in claimed tiles,
  // block 0 taking one barrier per round for the rank (coconet_rt::pushTilesPrefetchOwn): its
  // kernel takes `claimed` (coconet_rt::claimedPushes: the tiles' units per thread from 3 ranks where a
  // round holds enough tiles per mover, 0 for the fixed parts; the tuning table's push_tile_units).
  bool claimsPushes(const DevGroup& dg) const {
    return dg.splitRoles() && dg.pushes() && !dg.tail() && dg.barriers != DevGroup::Barriers::Split;
  }
  // An all-gather tail whose movers (roles split, whole barriers) pull once every rank counted the
  // chunk in its flags rather than after a barrier per round (coconet_rt::workerDone,
  // needChunk): its kernel takes the flags window, its half and the call's `flagEpoch` (0 with the
  // tuning table's tail_flags 0: the barriers). Its workers compute chunk 0, which every pull waits
  // for, together: none starts chunk 1 before every worker counted chunk 0 (measured on 4 H200:
  // LAMB's step 1-2% faster so than without, or than waiting so after every chunk), and without
  // folds its movers compute their share of chunk 0 too (nothing to pull before it; at 2^24 one
  // unit per thread where the workers alone left 24 of 232 blocks a second; up to 2% faster on 4
  // H200). It also takes `pulled` (coconet_rt::claimedPulls: the tiles' units per thread from 3
  // ranks in at most 4 rounds, 0 for the fixed parts; the tuning table's pull_tile_units), with
  // which its movers pull in tiles they claim (pullTiles).
  bool flagsPulls(const DevGroup& dg) const {
    return dg.splitRoles() && !dg.preloaded && dg.tail() && !dg.head() && dg.barriers != DevGroup::Barriers::Split;
  }
  void emitCopyRounds(const CopyRounds& c, const std::string& stage);
  void emitCopyEngineGroup(const DevGroup& dg, const std::string& kname, const std::string& grid, const DevLaunch& L);
  // Some allreduce may run by copy engines (by size or asked for), or a device group does: they
  // need ceCopy_ and ceEv_.
  bool usesCopyEngineStream() const {
    for (auto& [id, d] : plan_.devAR)
      if (d.algo.empty() || d.algo == "copy_engines") return true;
    for (auto& [id, g] : plan_.devGroups)
      if (g.copyEngines) return true;
    return false;
  }

  bool usesDevice() const { return plan_.devIndices > 0; }

  // The `algorithm` knob of a stage or of the fused group it belongs to ("" when none).
  std::string algorithmOf(const Stage& s) const;

  void planDeviceAllReduces();

  // One-shot where the knob asks for it, or (no knob, or two-shot not possible) up to
  // oneShotMaxBytes(P); two-shot where the rank count divides the length, up to kTwoShotMaxBytes
  // unless the knob asks for it; NCCL otherwise.
  void emitDeviceAllReduce(const DevAllReduce& d);

  // Stream order of an overlap: comm2_ starts after what stream_ did before; chunk k's producer
  // work on stream_ hands over to comm2_; stream_ goes on after all of comm2_'s work.
  static std::string forkComm(const std::string& name) {
    return "    CHECK(cudaEventRecord(ovStart_, stream_), " + name + ");\n    CHECK(cudaStreamWaitEvent(comm2_, ovStart_, 0), " + name +
           ");\n";
  }
  static std::string handOff(const std::string& name);
  // `coconetc compile --timeline`: the line that marks the call's timeline on `stream` after the
  // work enqueued there so far (label, and `index` an expression for a round or chunk); "" when off.
  std::string tlMark(const std::string& ind, const std::string& stream, const std::string& label, const std::string& index = "") const;
  static std::string joinComm(const std::string& name) {
    return "    CHECK(cudaEventRecord(ovDone_, comm2_), " + name + ");\n    CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " + name +
           ");\n";
  }

  // ---- A fused reduce_scatter + all_gather with nothing between them is an allreduce: one
  // NCCL call (its algorithm NCCL's) instead of two.

  void planAllReducePairs();

  // ---- Embedding bags: a reduction over the lookups of an embedding (DLRM's pooling) gathers
  // the rows inside the reduction, so the [..., L, D] tensor of looked-up rows never exists.

  void planBags();

  // The gather-reduce kernel of reduction `id` (its Op struct already written) and its launch
  // over all outputs. Output o = (outer index, index position, column) reduces the lookups of
  // dimension `dim` of the indices.
  void emitBagKernel(int id, const std::string& op);

  // Host code shared by the whole and the chunked launch: the sizes of the bag.
  void emitBagSizes(int id);

  std::string bagArgs(int id, const std::string& rest) const;

  void emitBag(int id, const std::string& op);

  // An embedding bag pipelined with the all_to_all of its result: chunk c is sub-block c of the
  // block of dimension 0 that goes to each rank; its pieces are sent while chunk c+1 is gathered.
  void emitChunkedBag(const Chunked& ch);

  // Can a matmul be chunked along dimension d for an all_to_all of its product? The rows of the
  // product (every dimension but the last) split at d into outer indices (dimensions before d)
  // and rows per outer index; chunk c takes rows [c R/C, (c+1) R/C) of every outer index. A
  // batched weight must be indexed by the outer index alone (its batch dimensions are the ones
  // just before d, which must then be the last row dimension).
  std::string chunkedAllToAllWhyNot(const Stage& ps, int d) const;

  // A matmul pipelined with the all_to_all of its product along dimension d: GEMMs of chunk c+1
  // (stream_) while chunk c is packed, exchanged and placed (comm2_).
  void emitChunkedAllToAll(const Chunked& ch);

  // A matmul pipelined with the allreduce of its product (and element-wise members after it):
  // chunk c is rows [c M / C, (c+1) M / C) of the product, reduced in place of the whole.
  void emitChunkedAllReduce(const Chunked& ch);
  // An all_to_all pipeline (overlap(x, back) with x an all_to_all): step i computes the stages
  // between x and back on the block of dimension 0 that rank me - i sent (stream_) while the
  // block of step i+1 arrives and the result of step i-1 returns to its rank (comm2_).
  std::string exchangeWhyNot(const Chunked& ch) const;
  // Is `id` read only by the pipeline's stages and its `back` (no output, no state)?
  bool pipelineOnly(const Chunked& ch, int id) const;
  std::vector<std::vector<int>> users_;  // p_.users(), for the pipelines' plans
  void emitExchangePipeline(const Chunked& ch);
  Pipeline pipelineOf(const Chunked& ch) const;
  // Its parts: the windows and every step's incoming block; a step's stages on its block; a
  // step's result back to its rank (the step loop opens in the second and closes in the third).
  void emitPipelineSends(const Pipeline& pl);
  void emitPipelineStep(const Pipeline& pl, bool rows);
  void emitPipelineReturn(const Pipeline& pl, bool rows);
  // The pipeline's split of this rank's own block: `parts` (1, or 2 where the block's rows split),
  // U rows per block, the first part's U1 rows (variables of the emitted scope); false where the
  // chain's stages do not share x's rows (whole blocks, parts = 1).
  bool emitOwnSplit(const Chunked& ch);
  // Matmul `id` of a pipeline on block blk (a variable of the emitted scope): with `rows`, its rows
  // [r0, r1) (whole batches of the block, or rows of its one batch).
  void emitBlockGemm(int id, bool rows);
  // The rows of one batch of a pipeline matmul's left operand `a` in a rank's block: its
  // next-to-last dimension, or at rank 2 its rows over G (an expression).
  std::string blockRows(int a) const;
  bool hasExchangePipeline() const;

  void emitChunked(const Chunked& ch);
  // An overlap's chunk count C, rows per rank and chunk, and a chunk's staging bytes (`merge`:
  // coconet_rt::mergedOverlapChunks, else overlapChunks), as declarations `ind` deep; chunk c's
  // GEMM on stream_ into stage_[k] (rows [lo, lo + rows) of every rank's block, P GEMMs in one
  // call); and the overlap over NCCL's device API (emitChunked's device path).
  std::string chunkDecls(const Chunked& ch, const std::string& ind, bool merge) const;
  std::string chunkGemm(const Chunked& ch, const std::string& lo, const std::string& rows, const std::string& range) const;
  void emitChunkedDevice(const Chunked& ch);
  // Its parts: the kernels, launches and names (ChunkedDevice); a launch of the group's kernel
  // and the copy engines' pulls of the other ranks' parts; the windows and the chunk count; the
  // epilogues (per chunk, or by copies); one chunk alone (onePass); the chunk loop and its end.
  ChunkedDevice chunkedDevice(const Chunked& ch);
  std::string chunkedLaunch(const ChunkedDevice& cd, const std::vector<std::string>& args, const char* stream) const;
  std::string chunkedPulls(const ChunkedDevice& cd, const std::string& off, const std::string& count, const char* stream) const;
  void emitChunkedDeviceSetup(const ChunkedDevice& cd);
  void emitChunkedDeviceEpilogues(const ChunkedDevice& cd);
  void emitChunkedDeviceOneChunk(const ChunkedDevice& cd);
  void emitChunkedDeviceLoop(const ChunkedDevice& cd);

  // ---- Results written where the caller wants them ----
  // A state's new value is computed straight into the state's storage when nothing reads the
  // old value afterwards: every reader of the entry comes earlier on the stream, or is an
  // element-wise member of the same kernel reading the same element (each kernel stores after
  // computing all members of an element). An output is computed straight into the caller's
  // buffer. Either saves a device-to-device copy of the tensor at the end of run().

  void planDirect();

  std::string exprTextFor(const Stage& s) const;

  // One block per output element: the reduced elements, strided, then a tree in shared memory.
  // The reduction's accumulator and combining rule, as the struct the runtime's templates take.
  std::set<int> reduceOps_;  // reductions whose Op struct the kernels have
  // The name of reduction `id`'s Op struct (emitReduceOp writes it).
  std::string reduceOpStruct(int id) const { return "Op_" + std::to_string(id) + "_" + ident(p_.stages[id].name); }
  std::string emitReduceOp(int id);

  // The mean divides by the global count of reduced elements (host expression).
  std::string reduceCount(int id) const;

  void emitReduce(int id);

  // ---- Scalar chains on the device path: plan::ScalarChain (backend/plan/Forms.h) ----
  using ScalarChain = plan::ScalarChain;

  static bool oneElement(const TensorType& t);

  bool scalarChainStage(int id) const;

  // Sends (to the next or previous rank or group: every rank sends and receives) over the
  // device API: the runtime's dev_send_recv pushes into the receiver's window.
  void planDeviceExchanges(StageKind kind, std::map<int, int>& windows);

  void planScalarChains();

  void emitScalarChain(const ScalarChain& sc);

  // A chain whose values only the device group right after it reads (LAMB's trust ratio before
  // `apply`) is computed at the start of that group's kernel, by every block, rather than by a
  // kernel of its own: no launch and no barrier between them. Its exchanges then go through
  // 64-bit slots holding the value and the call's epoch: block 0 stores the rank's values into
  // its slot on every rank, and every block waits until each rank's slot holds this call's
  // epoch (the window's two halves still alternate, and it is zeroed when made).
  void planChainPrologues();
  // The chain's kernel parameters and the host's arguments; `folded`: as the prologue of a
  // device group's kernel (names that cannot clash with the group's).
  void scalarChainSignature(const ScalarChain& sc, bool folded, std::vector<std::string>& params, std::vector<std::string>& args) const;
  // The chain's code inside a kernel (after `P` and `me`); `folded`: the epoch-slot exchanges.
  std::string scalarChainCode(const ScalarChain& sc, bool folded);

  // ---- Reductions that compute their elements: plan::InlineSrc (backend/plan/Forms.h) ----
  using InlineSrc = plan::InlineSrc;

  bool inlinable(int id, int consumer) const;

  void planInlinedReductions();

  // ---- Row groups: plan::RowGroup (backend/plan/Forms.h) ----
  using RowGroup = plan::RowGroup;
  // The row group of fused group `f` (its members `m`, sorted), or why it has none.
  std::optional<RowGroup> rowGroupOf(const FusedGroup& f, const std::vector<int>& m, std::string& why) const;
  void planRowGroups();
  // Warns at each fused group with a reduction that runs as a kernel a stage (no row group, and
  // no other form took it).
  void warnUnfusedRowGroups();
  // A row group's kernel and its launch: the kernel's signature, its passes over the row, the
  // row's code (hoisting what is the same for every element), then the kernel and run()'s launch.
  void emitRowGroup(const RowGroup& rg);
  // The kernel's parameters and run()'s arguments (params, hostArgs, shared).
  void rowSignature(RowKernel& rk) const;
  // The element members, in order, that element code computes for `wanted` (through element
  // members only); the outside operands a run of them reads (and `extra`'s).
  std::vector<int> rowClosure(const RowGroup& rg, const std::vector<int>& wanted) const;
  std::set<int> rowExtOf(const RowGroup& rg, const std::vector<int>& run, int extra) const;
  // The passes over the row (outElems, outRows, passes) and the operands kept in registers (cached, K).
  void rowPasses(RowKernel& rk) const;
  // One pass's loop over each thread's packs of its row, `body` once per element, `stores` written.
  std::string rowElementLoop(const RowKernel& rk, const std::set<int>& ks, const std::string& body, const std::vector<int>& stores) const;
  // Operand k (RowKernel::index) in element code; a normalization's accumulation type and its
  // operand k in that type.
  std::string rowElementOperand(const RowKernel& rk, int k) const;
  std::string rowNormType(int id) const;
  std::string rowNormOperand(const RowKernel& rk, int id, size_t k) const;
  // The element code of a run of element members, in order.
  std::string rowElementCode(const RowKernel& rk, const std::vector<int>& run);
  // The code of one row (the kernel's row loop's body): the operands' row pointers and registers
  // (rowPointers), each row value, normalization's statistics (rowNormStats) and reduction
  // (rowReduce), then the members written.
  std::string rowCode(RowKernel& rk);
  std::string rowPointers(const RowKernel& rk) const;
  std::string rowNormStats(RowKernel& rk, int id);
  std::string rowReduce(RowKernel& rk, int id);
  // The kernel (its members' comments, signature and row loop around `rows`), into kernels_.
  void emitRowKernel(const RowKernel& rk, const std::string& prologue, const std::string& rows);
  // run()'s launch: the vector width, the cached instance's threads a row, the instance launched.
  void emitRowLaunch(const RowKernel& rk);

  // ---- Reductions folded into a device group's kernel ----
  // A reduction of every element of a tensor shaped like a device group's slice (a norm's sum of
  // squares between LAMB's reduce-scatter and all-gather, a gradient norm for clipping) whose
  // elements the group's kernel can compute (from its members, its operands, and values stored
  // before it, through the maps its members use) is accumulated inside that kernel: each thread
  // folds the elements it computes anyway, each block writes one partial result, and at the
  // reduction's place a one-block kernel combines the blocks' partials in block order (the
  // partition depends only on the sizes: deterministic). The reduction then reads no memory of
  // its own and a member that only it read is never stored. Where the group runs as NCCL calls,
  // the reduction runs as it would unfolded.
  static constexpr int kMaxFolds = 4;  // per kernel (each takes kDevThreads accumulators of shared memory)

  // Is value `id` in memory, whole, before stage `before` runs? (Inputs and states always are.)
  // The host variable with the block count of the device group that starts at `first`, where
  // its blocks wrote partial results (0 where they did not).
  std::string foldBlocksVar(int first) const { return "devFold" + std::to_string(plan_.devGroups.at(first).index) + "Blocks"; }

  bool storedBefore(int id, int before) const;

  void planFoldedReductions();

  // The source of reduction `id` that computes its elements: a struct in the kernels (its
  // operator() is element i of the reduced tensor) and the host's instance of it; returns its name.
  std::string emitReduceSource(int id, const InlineSrc& is);

  // softmax, layernorm and rmsnorm over the last dimension (RowwiseKernel: emit/Kernels.h).
  RowwiseKernel rowwiseKernel(int id) const;
  // run()'s check that a normalization's eps given by a scalar parameter is positive ("" for a constant).
  std::string epsCheck(const Stage& s) const;
  void emitRowwise(int id);
  void emitRowwiseInRegisters(const RowwiseKernel& k);
  // The pass that writes packs (V elements) [first, end) of row yr (step blockDim.x) from the row's statistics `st`.
  std::string rowwiseWritePass(const RowwiseKernel& k, const std::string& first, const std::string& end) const;
  // The pass that reads packs [first, end) of row xr into the block's statistics `st` (shared `sh`).
  std::string rowwiseStatsPass(const RowwiseKernel& k, const std::string& first, const std::string& end) const;
  void emitRowwiseLong(const RowwiseKernel& k);
  void emitRowwiseSplit(const RowwiseKernel& k);
  void emitRowwiseLaunch(const RowwiseKernel& k);

  // Row-major C[M, N] = A[M, K] B[K, N] is column-major C^T = B^T A^T: one cuBLAS GEMM with f32
  // accumulation (f64 for f64), batched when both operands carry batch dimensions.
  void emitGemm(int id);
  void emitGemmProduct(int id);  // (emitGemm's operands not empty)
  // The checked cuBLAS call of such a GEMM, one statement: M, the operands (pointer and batch
  // stride), the product's, the batch count and the stage (a quoted string) as expressions; K, N,
  // alpha and beta are variables of the emitted scope. `ta` / `tb`: the operand's storage is its
  // source's, transposed (foldableTranspose: each [K, M] / [N, K] matrix read as cuBLAS's op T).
  std::string gemmCall(DType dt, const std::string& M, const std::string& B, const std::string& strideB, const std::string& A,
                       const std::string& strideA, const std::string& C, const std::string& strideC, const std::string& batch,
                       const std::string& stage, bool ta = false, bool tb = false) const;
  // Whether matmuls read stage i as its operand's storage, transposed (plan::Storage::Transposed).
  bool readTransposed(int i) const { return plan_.at(i).storage == plan::Storage::Transposed; }

  void emitEmbedding(int id);
  void emitEmbeddingGrad(int id);
  bool hasKind(StageKind k) const {
    for (auto& s : p_.stages)
      if (s.kind == k) return true;
    return false;
  }
  // permute (transpose): a kernel that writes this rank's block with its dimensions permuted;
  // concat, narrow: row copies along their dimension (emit/Shape.cpp).
  void emitPermute(int id);
  void emitRowCopy(int id, const std::string& what);

  // Why a launch takes the form it does, as `emit --stage plan` prints it (plan/Assemble.cpp).
  std::string devGroupWhy(const DevGroup& dg) const;
  std::string overlapWhy(const Chunked& ch) const;
  std::string stageWhy(int id) const;

  // ---- Driver, build manifest, manifest.json ----
  std::string driverText();

  std::string cmakeText();
  // --target torch: the Python package beside the CUDA output (emit/Torch.cpp).
  void writeTorchPackage(std::vector<std::string>& files);
  std::vector<std::string> torchFiles() const;

  std::string manifestText(const std::string& allSources);
};

}  // namespace coconet::backend::detail
