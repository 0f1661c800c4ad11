// The plan's assembly: the planning passes' decisions (Emitter::plan*) as one Plan, each stage
// claimed once, with the reasons `emit --stage plan` prints. emitBody writes run() from it.
#include <iterator>

#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

using plan::Step;
using plan::Storage;

namespace {

std::string count(size_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

}  // namespace

std::string Emitter::devGroupWhy(const DevGroup& dg) const {
  std::string why = "fused group '" + dg.name + "'";
  if (dg.arHead)
    why += ": allreduce then " + count(dg.run.size(), "member") + " on the replicated result";
  else if (dg.full())
    why += ": reduce_scatter, " + count(dg.run.size(), "member") + ", all_gather";
  else if (dg.head())
    why += ": reduce_scatter then " + count(dg.run.size(), "member") + " (a reduce-scatter head)";
  else
    why += ": " + count(dg.run.size(), "member") + " then all_gather (an all-gather tail)";
  why += " as one kernel over NCCL's device API";
  if (!dg.algo.empty()) why += "; algorithm " + dg.algo;
  if (dg.copyEngines) why += "; copy engines move the slices";
  if (dg.rounds > 1) why += "; " + std::to_string(dg.rounds) + " rounds";
  if (!dg.folds.empty()) why += "; folds " + count(dg.folds.size(), "reduction");
  if (dg.chain >= 0) why += "; computes " + plan_.scalarChains.at(dg.chain).name + " first";
  return why;
}

void Emitter::assemblePlan() {
  plan_.reset(p_.stages.size());
  const int n = static_cast<int>(p_.stages.size());
  // Overlaps whose launch lies after their producer: at the returning all_to_all of a pipeline,
  // else at the first consumer stage where stages lie between.
  std::map<int, int> overlapAt;  // stage -> producer
  for (auto& [prod, ch] : plan_.chunked) {
    if (ch.back >= 0)
      overlapAt[ch.back] = prod;
    else if (!(prod + 1 < n && plan_.overlapped.count(prod + 1)))
      overlapAt[firstOverlapped(prod)] = prod;
  }
  auto devGroupOf = [&](int id) {  // the device group (its first member) whose member `id` is
    auto it = plan_.devGroups.upper_bound(id);
    if (it == plan_.devGroups.begin()) throw InternalError("plan: device-group member %" + std::to_string(id) + " before every group");
    return std::prev(it)->first;
  };
  auto producerOf = [&](int id) {  // the overlap whose consumer member `id` is
    for (auto& [prod, ch] : plan_.chunked)
      if (std::find(ch.run.begin(), ch.run.end(), id) != ch.run.end() || ch.rs == id || ch.ag == id || ch.ar == id || ch.a2a == id ||
          ch.bag == id || ch.back == id)
        return prod;
    throw InternalError("plan: overlapped stage %" + std::to_string(id) + " belongs to no overlap");
  };
  for (int i = 0; i < n; ++i) {
    const Stage& s = p_.stages[i];
    if (s.kind == StageKind::Input || s.kind == StageKind::State) {
      plan_.claim(i, Step::Given, i, "the program's interface");
      continue;
    }
    // The passes' decisions in the order they bind: an earlier one takes the stage whole (a
    // device group's member belongs to it, not to the element-wise run it was planned in).
    if (auto dg = plan_.devGroups.find(i); dg != plan_.devGroups.end()) {
      auto& d = plan_.claim(i, Step::DeviceGroup, i, "planDeviceGroups");
      d.what = dg->second.name;
      d.why = devGroupWhy(dg->second);
    } else if (auto rg = plan_.rowGroups.find(i); rg != plan_.rowGroups.end()) {
      auto& d = plan_.claim(i, Step::RowGroup, i, "planRowGroups");
      d.what = rg->second.name;
      d.why = "fused group '" + rg->second.name + "': " + count(rg->second.members.size(), "member") +
              " over rows of one shape (element-wise stages and reductions along the last dimension) as one row kernel";
    } else if (auto rm = plan_.rowGroupOf.find(i); rm != plan_.rowGroupOf.end()) {
      plan_.claim(i, Step::InRowGroup, rm->second, "planRowGroups");
    } else if (auto sc = plan_.scalarChains.find(i); sc != plan_.scalarChains.end()) {
      auto& d = plan_.claim(i, Step::ScalarChain, i, "planScalarChains");
      d.what = sc->second.name;
      d.foldedInto = sc->second.into;
      d.why =
          count(sc->second.stages.size(), "one-element stage") + " as one single-thread kernel" +
          (sc->second.exchanges.empty()
               ? ""
               : ", its allreduces " + count(sc->second.exchanges.size(), "exchange") + " through a symmetric window") +
          (sc->second.into >= 0 ? "; computed first in every block of fused group '" + plan_.devGroups.at(sc->second.into).name + "'" : "");
    } else if (auto sm = plan_.scalarChainOf.find(i); sm != plan_.scalarChainOf.end()) {
      plan_.claim(i, Step::InScalarChain, sm->second, "planScalarChains");
    } else if (plan_.devMembers.count(i)) {
      plan_.claim(i, Step::InDeviceGroup, devGroupOf(i), "planDeviceGroups");
    } else if (auto in = plan_.inlinedInto.find(i); in != plan_.inlinedInto.end()) {
      plan_.claim(i, Step::InReduction, in->second, "planInlinedReductions");
    } else if (auto ch = plan_.chunked.find(i); ch != plan_.chunked.end()) {
      if (ch->second.back < 0 && i + 1 < n && plan_.overlapped.count(i + 1)) {
        auto& d = plan_.claim(i, Step::Overlap, i, "planOverlaps");
        d.what = "overlap of " + s.name;
        d.why = overlapWhy(ch->second);
      } else {
        int at = ch->second.back >= 0 ? ch->second.back : firstOverlapped(i);
        plan_.claim(i, Step::OverlapProducer, at, "planOverlaps");
      }
    } else if (auto at = overlapAt.find(i); at != overlapAt.end()) {
      auto& d = plan_.claim(i, Step::Overlap, at->second, "planOverlaps");
      d.what = "overlap of " + p_.stages[at->second].name;
      d.why = overlapWhy(plan_.chunked.at(at->second));
    } else if (auto da = plan_.devAR.find(i); da != plan_.devAR.end()) {
      auto& d = plan_.claim(i, Step::DeviceAllReduce, i, "planDeviceAllReduces");
      d.what = da->second.name;
      d.why = "an allreduce over the world as a device-API kernel, its form " +
              (da->second.algo.empty() ? std::string("chosen at run time by size") : "algorithm " + da->second.algo);
    } else if (auto pr = std::find_if(plan_.arPair.begin(), plan_.arPair.end(), [&](const auto& e) { return e.second == i; });
               pr != plan_.arPair.end()) {
      plan_.claim(i, Step::InAllReducePair, pr->first, "planAllReducePairs");
    } else if (auto pa = plan_.arPair.find(i); pa != plan_.arPair.end()) {
      auto& d = plan_.claim(i, Step::AllReducePair, i, "planAllReducePairs");
      d.what = s.fusedInto;
      d.why = "fused group '" + s.fusedInto + "' is a reduce_scatter and an all_gather with nothing between: one NCCL allreduce";
    } else if (auto bag = plan_.bagOf.find(i); bag != plan_.bagOf.end()) {
      plan_.claim(i, Step::InBag, bag->second, "planBags");
    } else if (plan_.overlapped.count(i)) {
      plan_.claim(i, Step::InOverlap, producerOf(i), "planOverlaps");
    } else if (auto r = plan_.runOf.find(i); r != plan_.runOf.end() && r->second.front() != i) {
      plan_.claim(i, Step::InRun, r->second.front(), "planRuns");
    } else {
      auto& d = plan_.claim(i, Step::Stage, i, "the stage's own lowering");
      d.why = stageWhy(i);
    }
    if (auto note = plan_.overlapNotes.find(i); note != plan_.overlapNotes.end()) plan_.storageOf(i).unchunked = note->second;
  }
  // Storage, in the order its decisions bind.
  for (int i = 0; i < n; ++i) {
    const Stage& s = p_.stages[i];
    plan::Decision& d = plan_.storageOf(i);
    if (s.kind == StageKind::Input)
      d.storage = Storage::Input;
    else if (s.kind == StageKind::State)
      d.storage = Storage::State;
    else if (auto bag = plan_.bagOf.find(i); bag != plan_.bagOf.end()) {
      d.storage = Storage::InBag;
      d.from = bag->second;
    } else if (plan_.unstored.count(i))
      d.storage = Storage::InKernel;
    else if (auto di = plan_.direct.find(i); di != plan_.direct.end()) {
      d.storage = Storage::Direct;
      d.into = di->second.first;
      d.intoWhat = di->second.second;
    } else if (auto chp = plan_.chunked.find(i); chp != plan_.chunked.end() && chp->second.rs >= 0 && !isUsed(p_, i, {chp->second.rs}))
      d.storage = Storage::InChunks;
    else if (auto in = plan_.inlinedInto.find(i); in != plan_.inlinedInto.end()) {
      d.storage = Storage::InReduction;
      d.from = in->second;
    } else if (plan_.ncclOnly.count(i))
      d.storage = Storage::NcclOnly;
    else if (auto bo = plan_.blockOnly.find(i); bo != plan_.blockOnly.end()) {
      d.storage = Storage::BlockOnly;
      d.into = bo->second;
      for (auto& [prod, ch] : plan_.chunked)  // the blocks are those of the pipeline's returning all_to_all
        if (ch.back >= 0 && std::find(ch.run.begin(), ch.run.end(), i) != ch.run.end()) {
          const GroupInfo* gr = p_.stages[ch.back].type.group ? p_.stages[ch.back].type.group : p_.world();
          d.intoWhat = gr->name + ".size";
        }
    } else if (plan_.devFallbackOnly.count(i))
      d.storage = Storage::FallbackOnly;
    else if (foldableTranspose(i)) {
      d.storage = Storage::Transposed;
      d.from = s.operands[0];
      d.why = "read transposed by its products (cuBLAS op T): no copy";
    } else if (foldablePermute(i)) {
      d.storage = Storage::Permuted;
      d.from = s.operands[0];
      d.why = "read through its permutation by the element-wise kernels that read it: no copy";
    } else if (s.kind == StageKind::Reshape && d.step == Step::Stage && aliasable(plan_.at(s.operands[0]).storage)) {
      // The same elements in the same order: the operand's storage serves. (Not a state's value on
      // entry: the state's update may write it in place before the reshape's readers run.)
      d.storage = Storage::Alias;
      d.from = s.operands[0];
      d.why = "the operand's storage in a new shape (no copy)";
    } else
      d.storage = Storage::Buffer;
  }
  plan_.checkComplete(p_);
  checkOneOwner(overlapAt);
}

// A transpose of the last two dimensions (a backward program's weight or activation transposed
// for a product) that only products read, that is no output and whose operand is stored as it is:
// they read the operand's matrices transposed instead (cuBLAS's op T, gemmCall). The readers: a
// matmul of its own launch (either operand, batched or not), a GEMV's matrix (cuBLAS then, not the
// warp-per-row kernel), and an overlap's chunked product or a product in an all_to_all pipeline
// as its weight (B: read whole, while A's rows are chunked).
bool Emitter::foldableTranspose(int i) const {
  const Stage& s = p_.stages[i];
  const int r = s.type.rank();
  if (s.kind != StageKind::Permute || r < 2) return false;
  for (int k = 0; k < r; ++k)
    if (s.perm[k] != (k < r - 2 ? k : k == r - 2 ? r - 1 : r - 2)) return false;
  return permuteReadInPlace(i, [&](int j) {
    const Stage& u = p_.stages[j];
    const Step step = plan_.at(j).step;
    const bool asA = u.operands[0] == i, asB = u.operands.size() > 1 && u.operands[1] == i;
    if (u.kind == StageKind::Matmul && step == Step::Stage) return true;
    if (u.kind == StageKind::Gemv && step == Step::Stage && asA && !asB) return true;
    // an overlap's product (Overlap or OverlapProducer), or a product in an all_to_all pipeline's
    // run (emitBlockGemm)
    const auto pipe = plan_.chunked.find(plan_.at(j).owner);
    const bool inPipeline = step == Step::InOverlap && pipe != plan_.chunked.end() && pipe->second.back >= 0;
    return u.kind == StageKind::Matmul && (plan_.chunked.count(j) || inPipeline) && asB && !asA;
  });
}

// A permute that only element-wise kernels of their own launch read (a stage's or a run's, not a
// fused group's, a row kernel's or a reduction's, whose fast paths read contiguous operands), that
// is no output and whose operand is stored as it is: they read the operand through the
// permutation (Access::Mapped, emitMaps' strides) instead of a copy.
bool Emitter::foldablePermute(int i) const {
  const Stage& s = p_.stages[i];
  if (s.kind != StageKind::Permute || s.type.rank() < 2) return false;
  return permuteReadInPlace(i, [&](int j) {
    const Step step = plan_.at(j).step;
    return p_.stages[j].kind == StageKind::Compute && (step == Step::Stage || step == Step::InRun);
  });
}

// A permute of its own launch, no output or state's new value, whose operand is stored as it is
// (aliasable) and that is read, every reader j as readerTakes(j) says.
bool Emitter::permuteReadInPlace(int i, const std::function<bool(int)>& readerTakes) const {
  const Stage& s = p_.stages[i];
  if (plan_.at(i).step != Step::Stage || !aliasable(plan_.at(s.operands[0]).storage)) return false;
  if (std::find(p_.outputs.begin(), p_.outputs.end(), i) != p_.outputs.end()) return false;
  for (auto& st : p_.states)
    if (st.exit == i) return false;
  bool read = false;
  for (size_t j = 0; j < p_.stages.size(); ++j) {
    const Stage& u = p_.stages[j];
    if (std::find(u.operands.begin(), u.operands.end(), i) == u.operands.end()) continue;
    read = true;
    if (!readerTakes(static_cast<int>(j))) return false;
  }
  return read;
}

// Storage a reshape can alias: written once, by its own stage (or given), and never again.
bool Emitter::aliasable(Storage s) { return s == Storage::Input || s == Storage::Buffer || s == Storage::Direct || s == Storage::Alias; }

void Emitter::checkOneOwner(const std::map<int, int>& overlapAt) const {
  // The passes that take a stage into a launch of their own kind. Nested decisions are one
  // owner: a device group takes the element-wise run its members were planned in (a run is no
  // owner here) and the allreduce that heads it (its NCCL fallback), an overlap the embedding bag
  // it pipelines, a device allreduce the fused [reduce_scatter, all_gather] pair it runs (its NCCL
  // fallback is the pair's one allreduce), and an overlap's launch sits at its first consumer.
  for (int i = 0; i < static_cast<int>(p_.stages.size()); ++i) {
    std::vector<const char*> by;
    const bool dev = plan_.devGroups.count(i) || plan_.devMembers.count(i);
    const bool overlap = plan_.chunked.count(i) || plan_.overlapped.count(i) || overlapAt.count(i);
    if (dev) by.push_back("planDeviceGroups");
    if (plan_.rowGroupOf.count(i)) by.push_back("planRowGroups");
    if (plan_.scalarChainOf.count(i)) by.push_back("planScalarChains");
    if (plan_.inlinedInto.count(i)) by.push_back("planInlinedReductions");
    if (overlap) by.push_back("planOverlaps");
    if (plan_.devAR.count(i) && !dev) by.push_back("planDeviceAllReduces");
    if ((plan_.arPair.count(i) && !plan_.devAR.count(i)) ||
        std::any_of(plan_.arPair.begin(), plan_.arPair.end(), [&](const auto& e) { return e.second == i; }))
      by.push_back("planAllReducePairs");
    if (plan_.bagOf.count(i) && !overlap) by.push_back("planBags");
    if (by.size() > 1)
      throw InternalError("plan: stage %" + std::to_string(i) + " '" + p_.stages[i].name + "' claimed twice, by " + by[0] + " and " +
                          by[1]);
  }
  for (auto& [at, prod] : overlapAt)
    if (plan_.at(at).step != Step::Overlap)
      throw InternalError("plan: the overlap of '" + p_.stages[prod].name + "' has no launch: its place '" + p_.stages[at].name + "' is " +
                          plan::stepName(plan_.at(at).step));
}

std::string Emitter::overlapWhy(const Chunked& ch) const {
  const std::string chunks = std::to_string(ch.chunks) + " chunks";
  if (ch.back >= 0)
    return "all_to_all pipeline: the stages up to '" + p_.stages[ch.back].name + "' computed block by block while the next block arrives";
  if (ch.bag >= 0) return "embedding bag pipelined with its all_to_all in " + chunks;
  if (ch.a2a >= 0) return "matmul pipelined with the all_to_all of its product in " + chunks + " along dimension " + std::to_string(ch.dim);
  std::string what = ch.ar >= 0 ? "allreduce" : ch.ag >= 0 ? "reduce_scatter and all_gather" : "reduce_scatter";
  std::string why = "producer chunked along its rows, pipelined with its " + what + " in " + chunks;
  if (ch.devIndex >= 0) why += "; copy engines move the chunks where every rank is load/store reachable";
  if (auto dc = plan_.devChunked.find(ch.producer); dc != plan_.devChunked.end())
    why += "; the epilogue and all-gather as the kernel of fused group '" + dc->second.name + "'";
  return why;
}

std::string Emitter::stageWhy(int id) const {
  const Stage& s = p_.stages[id];
  std::string why;
  switch (s.kind) {
    case StageKind::Compute:
      if (auto r = plan_.runOf.find(id); r != plan_.runOf.end() && r->second.size() > 1)
        why = "element-wise run of " + count(r->second.size(), "stage") + " of fused group '" + s.fusedInto + "': one kernel";
      else
        why = "element-wise kernel";
      break;
    case StageKind::Reduce:
      why = plan_.bagReduce.count(id) ? "embedding-bag reduction: gathers the looked-up rows as it reduces"
            : plan_.foldedInto.count(id)
                ? "combines the partial results that fused group '" + plan_.devGroups.at(plan_.foldedInto.at(id)).name +
                      "''s blocks wrote (where the group runs as NCCL calls: the whole reduction)"
            : plan_.inlineSrc.count(id) ? "reduction that computes the elements it reduces"
                                        : "reduction: a thread, a block or blocks per output, chosen at run time";
      break;
    case StageKind::Softmax:
    case StageKind::Layernorm:
    case StageKind::Rmsnorm:
      why = "row kernel: rows in registers, a block a row, or a row over blocks, by the row length at run time";
      break;
    case StageKind::Matmul:
    case StageKind::Gemv: why = "cuBLAS GEMM"; break;
    case StageKind::Embedding: why = "embedding lookup kernel"; break;
    case StageKind::EmbeddingGrad: why = "stable sort of the indices, then each row's sum in position order (deterministic)"; break;
    case StageKind::Permute: why = "permute kernel (this rank's block)"; break;
    case StageKind::Concat: why = "row copies, one kernel per operand"; break;
    case StageKind::Narrow: why = "row copy of the range"; break;
    case StageKind::Reshape: why = "copy (the same elements in a new shape)"; break;
    case StageKind::Send:
      why = plan_.devSend.count(id) ? "send over NCCL's device API (NCCL send/recv where the ranks are not all load/store reachable)"
                                    : "NCCL send/recv";
      break;
    case StageKind::AllToAll:
      why = plan_.devA2A.count(id) ? "all_to_all over NCCL's device API: push, barrier, copy out (NCCL send/recv pairs otherwise)"
                                   : "NCCL send/recv pairs";
      break;
    case StageKind::AllReduce:
    case StageKind::ReduceScatter:
    case StageKind::AllGather:
    case StageKind::Broadcast:
    case StageKind::Reduce1: why = "NCCL call"; break;
    case StageKind::Input:
    case StageKind::State: break;  // (given: no launch)
  }
  if (!s.fusedInto.empty())
    if (auto w = plan_.rowGroupWhyNot.find(s.fusedInto); w != plan_.rowGroupWhyNot.end()) why += "; no row group: " + w->second;
  if (auto a = plan_.arGroupNotes.find(id); a != plan_.arGroupNotes.end()) why += "; " + a->second;
  return why;
}

}  // namespace coconet::backend::detail
