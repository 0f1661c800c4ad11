// Kernels.h: what the phases of one lowering share while they write one launch's code: an
// element-wise run's shape, a device group's kernel and launch, a copy stream's rounds, an
// all_to_all pipeline, a row group's kernel, a row-wise normalization's kernel. Private to
// src/backend; the Emitter's member functions (emit/*.cpp) fill and read them.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/plan/Forms.h"
#include "ir/IR.h"

namespace coconet::backend::detail {

using namespace ir;
using plan::Access;
using plan::Chunked;
using plan::DevGroup;
using plan::RowGroup;

// Values that are the same for every element (constants, program parameters, group
// coordinates and what only they make, e.g. `1 - pow(beta1, t)`): where a kernel sets
// hoist_, runMembers computes each of them once, at the kernel's start (hoist_->code, which
// the kernel writes before its loops), and its element code reads the result. nvcc does not
// take such values out of the loops itself where they branch (powf: LAMB's `moments` computed
// two powf per element). The same statements, evaluated once: the results are unchanged.
struct Hoisted {
  std::ostringstream code;
  std::set<std::string> names;
  // What the kernel writes before its loops ("" when nothing was hoisted).
  std::string prologue() const { return names.empty() ? "" : "  // the same for every element\n" + code.str(); }
};

// Sets hoist_ to `h` for the element code made until end() (or its end of life).
struct HoistScope {
  Hoisted*& slot;
  HoistScope(Hoisted*& s, Hoisted& h) : slot(s) { slot = &h; }
  ~HoistScope() { end(); }
  void end() { slot = nullptr; }
  HoistScope(const HoistScope&) = delete;
  HoistScope& operator=(const HoistScope&) = delete;
};

// An element-wise run's kernel as emitComputeRun plans it: its outside operands and how each is
// read, the members it writes, whether every access is linear (vector steps) and its width.
struct RunShape {
  std::vector<int> ext, written;
  std::map<int, int> extIndex;
  std::vector<Access> acc;
  bool fast = true, rows = false;
  int V = 1;
};

// How one launch of a device group's kernel is fed: host expressions for the reduce-scatter's
// input (P slices of nSlice elements), the slice length, the offset of this launch's elements
// in the rank's slice (a chunk of an overlap), the distance between ranks' parts of the
// gathered output, and the byte offset of the half of the slice window in use.
struct DevLaunch {
  std::string rsIn, nSlice, off = "0", gstride, sliceOff = "0";
  std::string lo = "0", hi = "", pull = "1";  // a preloaded group's launch: its elements [lo, hi), and whether it pulls
  std::string partOff = "";                   // the launch's first partial result of each fold (default: the first)
  // The one-shot form's launch (oneShotMode): rsIn is the whole input (nSlice elements, the
  // whole tensor), stageOff the byte offset of the half of the one-shot window in use.
  bool oneShot = false;
  std::string stageOff = "0";
  // and the window it uses (the one-shot window, or the LL or LL128 window) and the lines' flag
  // (0 in the barrier form)
  std::string stageWin = "", llFlag = "0";
};

// What the phases of a device group's kernel share (emit/DeviceKernel.cpp).
struct DevKernel {
  DevKernel(const DevGroup& g, bool os) : dg(g), oneShot(os) {}
  const DevGroup& dg;
  const bool oneShot;
  bool head = false, tail = false;
  int src = -1, rsk = -1, V = 1;  // the gathered slice's source, the reduced slice's operand index, the vector width
  std::string XT, RT, ST;         // the storage types of the pushed input, the reduced slice, the gathered slice
  std::string kname;
  std::vector<std::string> params;   // the kernel's parameters (devSignature)
  std::vector<int> others;           // the operands other than the reduced slice (indices into dg.ext)
  std::vector<std::string> foldOps;  // the folded reductions' operator structs
  std::set<int> calcSet, fromChain;  // the members computed; the values the scalar chain makes
  // The kernel's forms (devKernelSignature, devKernelSetup): the one-rank instantiation, roles
  // split into movers and workers, every block computing chunk 0.
  bool solo = false, roles = false, joinChunk0 = false;
  std::string barrier;  // the statement making a block's barrier session
  // The statements the rounds take (devKernelChunks): a chunk's push (by the movers: moversPush),
  // its pull, a flags-pulling tail's claimed pulls; the blocks' partial results of the folds.
  std::string push, moversPush, pull, pullTilesCall, folds;
  const std::string sync = "bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  // tune(f, barriers = split): a round's barrier as its two phases (the same orders as sync)
  const std::string arrive = "bar.arrive(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  const std::string wait = "bar.wait(ncclCoopCta(), cuda::memory_order_acq_rel);\n";
  bool split = false;
};

// A copy stream's rounds: the generated text of a round's extent, copies, stream_'s work, and
// of the pulls of the round before (emitCopyRounds).
struct CopyRounds {
  std::string bounds, push, compute, pullNote, pullBounds, pull;
};

// What the parts of an overlap's path over NCCL's device API share (emit/Overlap.cpp): its
// device group and the kernels it launches (the group's, its one-shot form's, its one-pass
// form's), the launches' host arguments, and the generated names of a chunk's rows.
struct ChunkedDevice {
  ChunkedDevice(const Chunked& c, const DevGroup& g) : ch(c), dg(g) {}
  const Chunked& ch;
  const DevGroup& dg;
  DevGroup pg;                   // the one-pass form (onePass)
  std::string kname, k1, kPass;  // the group's kernel, its one-shot form ("" if none), its one-pass form ("" if none)
  int oneShot = -1;              // oneShotMode
  bool split = false, onePass = false, mayPipe = false;  // the last chunk in pieces; a one-pass form; epilogues per chunk
  std::string T, ST, name, gname, prog, gi, pos, Cs, V;  // storage types of the product and the gathered slice, quoted names, ...
  // A chunk c's (cc's, in the epilogue) first row and row count in a rank's block, its rows as a
  // comment writes them, and the condition under which one chunk runs alone.
  std::string cLo, cRows, ccLo, ccRows, cRange, one;
  DevLaunch whole, wholePush;
  std::vector<std::string> wholeArgs, partArgs, wholeNoPullArgs, wholePushArgs;
  std::vector<int> others;
};

// The names an all_to_all pipeline's code uses, and whether x's blocks and the result's are read
// where they arrive (only the pipeline reads them: xDirect, yDirect).
struct Pipeline {
  Pipeline(const Chunked& c, const Stage& xs, const Stage& bs) : ch(c), x(xs), back(bs) {}
  const Chunked& ch;
  const Stage &x, &back;
  int in = -1, last = -1;
  const GroupInfo* gr = nullptr;
  std::string T, BT, xn, bn, prog, gi;
  bool ce = false, xDirect = false, yDirect = false;
};

// What the phases of a row group's kernel share (emit/RowGroup.cpp).
struct RowKernel {
  explicit RowKernel(const RowGroup& g) : rg(g) {}
  const RowGroup& rg;
  // Operand indices for runMembers: outside operands by their index, members by kRowValue + id
  // (their values r<id>: a row value's at the row's scope, an element member's computed before
  // its readers in the element's).
  static constexpr int kRowValue = 1 << 20;
  std::map<int, int> index;
  std::string kname;
  // The exit and entry of each state whose new value is written into the storage of its entry,
  // which the group reads (neither array is __restrict__; the entry is read with load_vec_rw).
  std::set<int> shared;
  std::vector<std::string> params, hostArgs;  // the kernel's parameters, run()'s arguments
  std::vector<int> outElems, outRows;         // the members written, element members and row values
  struct Pass {
    std::vector<int> run;  // the element members it computes
    std::set<int> ks;      // the outside operands it reads
  };
  std::vector<Pass> passes;
  size_t next = 0;                       // the next pass rowCode writes
  std::vector<int> cached;               // the outside operands kept in registers (the cached instance)
  int K = 8;                             // the cached instance's packs a thread
  const std::string ind = "          ";  // element code's indentation
  bool isCached(int k) const { return std::find(cached.begin(), cached.end(), k) != cached.end(); }
};

// softmax, layernorm and rmsnorm over the last dimension: the kernel that keeps rows in
// registers (`_reg`), the ones for longer rows (`_long`: a block a row; `_split_*`: a row over
// blocks), and the host's choice between them.
struct RowwiseKernel {
  int id = -1;
  bool softmax = false, rms = false, scaled = false, shifted = false;  // scaled: gamma; shifted: beta
  std::string T, XT, GT, BT;                                           // storage types of y, x, gamma, beta
  std::string A;                                                       // accumulation type
  std::string name, params;                                            // kernel name prefix; its parameters up to eps
  int V = 1;                                                           // elements of x in a pack of 16 bytes (at most 8)
  int minBlocks = 1;                                                   // __launch_bounds__(512, minBlocks): 2 caps the registers at 64
  std::string stats;  // the one-pass statistics: coconet_rt::MaxSumT<A>, SumSqT<A> or WelfordT<A>
};

}  // namespace coconet::backend::detail
