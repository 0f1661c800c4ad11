// Forms.h: the forms the backend's planning passes choose for groups of stages (an overlap's
// pipeline, a device group, a device allreduce, a scalar chain, a reduction's computed elements,
// a row group) and how a kernel reads an operand. The passes (Emitter::plan*) fill them, the plan
// (Plan.h) names which stage each belongs to, and the emitters write their code.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace coconet::backend::plan {

// Element-wise stages as one kernel: `run` is one compute stage, or consecutive compute
// stages of a fused group with one shape, layout and group. Inside the kernel a member's
// value is rounded to its dtype exactly as storing it would round it, so the result is the
// same bits as running the members one by one; only values used outside the run are written,
// after every member of the element is computed (so a state may be updated in place).
//
// Where every operand is read at a linear index (the output's own, a block of a whole tensor
// for a slice of dimension 0, the output's index modulo a trailing-dimension operand such as a
// bias, or one scalar element), the kernel takes V consecutive elements per step with 16-byte
// loads and stores, and a scalar loop does the tail; otherwise (transposes, broadcasts inside
// the shape, slices of other dimensions) it maps every element through its coordinates.
// (Row: one value a row, read at the row's index: an operand of the output's shape with its last
// dimension 1 in an element-wise kernel (rowBroadcast: at i / rl), a row group's per-row operands.)
enum class Access { Linear, Modulo, Scalar, Mapped, Row };

// ---- Overlap: a matmul chunked along the rows of its product (dimension 0 and the batch
// dimensions after it), pipelined with the reduce_scatter -> element-wise run -> all_gather
// that consumes it. Chunk c holds sub-block c of every rank's block of rows, so each chunk
// scatters and gathers like the whole.
struct Chunked {
  int producer = -1, rs = -1, ag = -1, ar = -1;  // the reduce_scatter (and all_gather), or the allreduce
  int a2a = -1, dim = 0;                         // or the all_to_all, and the chunked dimension
  int bag = -1;                                  // an embedding's reduction (producer: the embedding)
  int back = -1;                                 // producer an all_to_all: the all_to_all returning `run`'s result (one chunk per rank)
  int devIndex = -1;                             // its transfers by copy engines where every rank is load/store reachable: Dev_ windows
  std::vector<int> run;                          // element-wise members between them
  int chunks = 2;
};

// ---- Fused collective groups over NCCL's device API (--device-collectives) ----
// A fused group reduce_scatter -> element-wise members -> all_gather becomes one kernel
// (coconet_device.cuh has its phases): (1) each rank pushes slice p of its input into slot
// `rank` of rank p's staging window; (2) an LSA barrier per block index; (3) each rank sums the
// slots of its slice (rank order, f32, as the interpreter does), computes the members, writes
// what leaves the group, and puts the all-gather's slice into its own output and its slice
// window; (4) a barrier; (5) it pulls every other rank's slice. Block b touches the same
// elements in every phase on every rank, so barriers per block index order exactly the
// conflicting accesses, and a rank can start the next call's pushes only after every rank
// passed this call's second barrier (done reading its slots). Where the ranks are not all
// load/store reachable (several nodes), the NCCL calls run instead.
//
// A group that only starts with the reduce_scatter (its members' results leave the group,
// e.g. for a norm before the all-gather) runs phases (1)-(3) and a last barrier, after which
// every rank is done reading its slots. A group that only ends with the all-gather runs (3)
// without the sum, then (4)-(5); its slice window has two halves used in turn, so a fast
// rank's next call cannot overwrite a slice that a slow rank still pulls (it would first have
// to pass a barrier of that next call, which the slow rank reaches only after this kernel).
struct DevGroup {
  int index = 0, rs = -1, ag = -1;  // the reduce_scatter and the all_gather (-1: none)
  // `ag` is the gathered member itself, not an all_gather of it: an allreduce group's two-shot
  // form (twoShotForm), whose last member each rank computes on its slice and gathers into
  // that member's own storage (agSrc).
  bool agIsMember = false;
  int ref = -1;    // the stage whose shape the members share (their OutputMap)
  int rounds = 1;  // tune(f, rounds = K): pipelined rounds of the kernel
  int blocks = 0;  // blocks of each launch (0: by size, coconet_rt::devBlocks)
  // The reduce-scatter's slots are already in the staging window when the kernel starts
  // (copied there by copy engines, emitChunked): the kernel pushes nothing.
  bool preloaded = false;
  // tune(f, algorithm = copy_engines) on a group outside an overlap: copy engines move its
  // reduce-scatter's slices into the staging windows and pull the all-gather's slices, round by
  // round, around a preloaded kernel per round (emitDeviceGroup).
  bool copyEngines = false;
  // A preloaded group's epilogue and all-gather: -1 chosen at run time (gatherPipelined),
  // 0 once after the last chunk, 1 per chunk (tune(f, gather = after | pipelined)).
  int gather = -1;
  // tune(f, tail = T): an overlap's last chunk in T pieces (its GEMM, copies and epilogue each),
  // so that less is left after the last GEMM; 1 where its rows do not split into whole vectors.
  int tailPieces = 1;
  // tune(f, algorithm = copy_engines) on an overlapped group: after the last chunk, the kernel
  // over the whole block runs without its pulls and copy engines pull the other ranks' blocks
  // (the per-chunk form's all-gather is copy-engine pulls already).
  bool ceGather = false;
  // tune(f, merge = by_size | never): where copy engines move an overlap's chunks, run fewer of
  // them where a chunk's copy to each peer would be under 8 MiB, and one on more than two ranks
  // where this rank's block to a peer is under 32 MiB (coconet_rt::mergedOverlapChunks), or
  // the most that divide the rows per rank at every size.
  bool mergeChunks = true;
  // tune(f, roles = split | shared): in two rounds or more, separate blocks move and compute
  // the chunks (coconet_device.cuh, roleReady), or every block does both (the default: with
  // the push and pull loops as they are, the movers' transfers scale with their blocks, so
  // split wins only at the largest sizes, measured on 4 H200).
  // tune(f, roles = auto): the split kernel, with movers only from coconet_rt::kRolesAutoRounds
  // rounds (fewer: every block does both).
  enum class Roles { Shared, Split, Auto } roles = Roles::Shared;
  bool splitRoles() const { return roles != Roles::Shared; }  // the kernel has the movers' and workers' code
  int movers = 0;  // tune(f, movers = K): the blocks that move the chunks (0: coconet_rt::kDevMovers)
  // tune(f, taper = K): the first K chunks grow and the last K shrink by halves (chunkLo); 0:
  // the chunks alike. tune(f, taper_ends = first | last): only that end tapers (up to
  // rounds - 1 chunks); both by default.
  int taper = 0;
  enum class TaperEnds { Both, First, Last } taperEnds = TaperEnds::Both;
  // tune(f, barriers = split | sync | auto): each round's barrier in two phases, the arrival as
  // soon as what it certifies is done and the wait as late as the next step that needs it, so
  // that a round's barrier latency overlaps other work (a pull of an earlier chunk, a push of the
  // next, a chunk's compute), or one whole barrier. Auto, the default: split in the shared full
  // form where a round's chunk is small (coconet_rt::devSplitBarriers, at run time) unless the
  // rounds are a light epilogue's (epilogueRounds), whole barriers in every other form
  // (docs/language.md, section 19).
  enum class Barriers { Auto, Split, Sync };
  Barriers barriers = Barriers::Auto;
  // tune(f, occupancy = K): the kernel's __launch_bounds__ ask for K resident blocks per SM (1:
  // none asked, ptxas takes the registers it wants). Only a split kernel's grid grows with it
  // (roleBlocks sizes the workers by the occupancy); without roles it is at most kDevMaxBlocks.
  // 0 (tune(f, occupancy = auto)): a split kernel is a template over its occupancy, and the
  // launch takes coconet_rt::devAutoOccupancy's (from the ranks and the movers); without roles, 1.
  int occupancy = 1;
  bool occupancyByRanks() const { return occupancy == 0 && !preloaded && splitRoles(); }
  // Its rounds by size, where the schedule does not set them, are coconet_rt::epilogueAutoRounds
  // (a light epilogue between a reduce-scatter and an all-gather: twoShotForm, onePassForm)
  // rather than devAutoRounds.
  bool epilogueRounds = false;
  // Appended to the kernel's name (emitDevKernel): a twin with another form of the same group's
  // kernel (the one-chunk overlap's, onePassForm) needs a name of its own.
  std::string kernelTag;
  // The kernel is a template over kSolo, its one-rank form (emitDevKernel), unless copy engines
  // fill its slots (preloaded).
  bool soloForm() const { return !preloaded; }
  std::vector<int> run, ext, written;
  std::map<int, int> extIndex;
  std::vector<Access> acc;
  std::vector<int> folds;  // reductions whose per-block partial sums the kernel writes (planFoldedReductions)
  std::vector<int> calc;   // what the kernel computes per element: the members, then the folds' computed elements
  // The scalar chain (its first stage) that the kernel computes first, in every block, instead
  // of a kernel of its own (planChainPrologues); -1: none.
  int chain = -1;
  // The `algorithm` knob on the group: "" (chosen by size), ll, ll128, one_shot, two_shot or copy_engines.
  // A full group may take its one-shot form (oneShotMode).
  std::string algo;
  // The group starts with an allreduce (`rs` is it) and its members compute on the replicated
  // result: it has the one-shot form (oneShotMode) and the two-shot form (twoShotForm; the
  // allreduce and the members' kernel otherwise, emitAllReduceGroup), and no folded reduction or
  // scalar chain joins it.
  bool arHead = false;
  std::string name;
  bool head() const { return rs >= 0; }
  bool tail() const { return ag >= 0; }
  bool full() const { return head() && tail(); }
  bool pushes() const { return head() && !preloaded; }  // the kernel pushes the slices of its input rsIn
  int first() const { return head() ? rs : run.front(); }
  bool halves() const { return tail() && !head(); }  // its slice window's two halves alternate (parity)
  const char* label() const { return full() ? "" : head() ? " (reduce-scatter head)" : " (all-gather tail)"; }
};

// ---- Allreduces over NCCL's device API (--device-collectives) ----
// An allreduce (sum over the world, a float type) that no overlap has chunked, or a fused
// [reduce_scatter, all_gather] pair with nothing between, runs as coconet_device.cuh's LL
// kernel up to kLLMaxBytes per rank (256 KiB; flags in the data, no barrier), its LL128 kernel
// past that up to ll128MaxBytes(P) (2 MiB on two ranks, none on more), its one-shot
// kernel up to oneShotMaxBytes(P) per rank (512 KiB, 8 MiB on two ranks), two-shot up to
// kTwoShotMaxBytes (push reduce-scatter, pull all-gather; when the rank count divides the
// length), by copy engines from copyEngineMinBytes(P) (when 2 P divides the length), and as
// NCCL's allreduce otherwise; tune(algorithm = ...) overrides.
struct DevAllReduce {
  int index = 0, in = -1, out = -1;
  int rounds = 2;    // the copy-engine form's rounds (tune(X, rounds = R))
  std::string name;  // the stage (or fused group) that failures name
  std::string algo;  // the `algorithm` knob: "" (by size), ll, ll128, one_shot, two_shot or copy_engines
};

// ---- Scalar chains on the device path ----
// Consecutive stages that each make one element (a folded reduction's combination of its
// blocks' partials, an allreduce over the world, element-wise arithmetic on scalars: LAMB's
// norms and trust ratio, a clipping factor) run as one single-thread kernel instead of a
// launch each. Its allreduces are exchanges through a symmetric window: the rank stores its
// values into its slot on every rank, one LSA barrier, then it combines the slots in rank
// order (as the one-shot allreduce does). Arithmetic runs as soon as its operands are known
// and allreduces wait until nothing else can run, so independent allreduces (the two norms)
// share one exchange. The window has two halves used in turn (parity) and one region per
// exchange: a rank's next call cannot overwrite slots a slower rank still reads, since it
// would first pass a barrier that the slower rank reaches only after reading them. Where the
// device path is not usable, the stages run one by one as they would otherwise.
struct ScalarChain {
  int index = 0;
  std::vector<int> stages;                  // program order (the stages that make code)
  std::vector<int> order;                   // execution order in the kernel; -1 - e: exchange e
  std::vector<std::vector<int>> exchanges;  // the allreduces of each exchange
  std::vector<int> ext, written;            // values read from memory / stored for later stages
  size_t width = 0;                         // the most allreduces in one exchange
  std::string name;
  int into = -1;  // the device group (its first stage) whose kernel computes the chain first; -1: its own kernel
};

// ---- Reductions that compute their elements ----
// An element-wise stage that only a reduction reads (and, recursively, element-wise stages of
// its shape that only the chain reads) is computed inside the reduction at each element it
// reduces and never stored: a norm's squares, and the slicing copy that a reorder makes for a
// reduction of a replicated value, cost no pass over memory and no launch of their own. Each
// operand from outside the chain is read at the element's own index, modulo its length (a
// trailing-dimension operand such as a bias) or as one scalar; the values are rounded to the
// members' types exactly as storing them would round them.
struct InlineSrc {
  std::vector<int> chain;  // program order; the last is the reduction's operand
  std::vector<int> ext;
  std::map<int, int> extIndex;
  std::vector<Access> acc;
};

// ---- Row groups: fused element-wise stages and reductions over the last dimension ----
// A fused group (its collectives at the ends aside: they run as they would) whose members are
// element-wise computes and reductions over the last dimension of one row shape [..., L] (a
// layer norm, RMSNorm or softmax written out with keepdim reductions, and what surrounds it)
// runs as one kernel: a group of R threads a row (coconet_rt::rowThreads), one pass over the
// row per reduction that computes the elements it reduces (the row's inputs read again each
// time, from L2 where the rows in flight fit), then one pass that computes and writes the
// members used outside the group. Members are "element" members, of the row shape, or "row
// values", of the row shape with its last dimension 1 (keepdim) or dropped: the reductions and
// the arithmetic on their results, which each thread of the row computes. Element members read
// outside operands at the element's index, modulo their length (a bias), as one scalar or one
// value a row (a [..., 1] tensor, Access::Row), and row values with a last dimension of 1; row
// values read row values, scalars and outside values of one element a row. Values are
// rounded to their types exactly as storing them would round them, so the results are those of
// the stages run one by one (the reductions' sums combined in the kernel's own tree order, as
// any reduction kernel's). Dropout in a row value, other shapes, a layout sliced along any
// dimension but 0 (or along the rows' own), and operands read other ways leave the group to the
// kernels of its stages.
struct RowGroup {
  std::string name;
  std::vector<int> members;  // execution order
  std::set<int> elems;       // the members of the row shape
  int ref = -1;              // a stage of the row shape (the first element member, else the first reduction's operand)
  std::vector<int> ext;      // operands from outside the group, in order of first use
  std::map<int, int> extIndex;
  std::vector<Access> acc;   // how element code reads each: Linear, Modulo, Scalar or Row
  std::vector<int> written;  // members used outside the group
};

}  // namespace coconet::backend::plan
