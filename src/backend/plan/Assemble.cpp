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
  if (dg.arHead) why += ": allreduce then " + count(dg.run.size(), "member") + " on the replicated result";
  else if (dg.full()) why += ": reduce_scatter, " + count(dg.run.size(), "member") + ", all_gather";
  else if (dg.head()) why += ": reduce_scatter then " + count(dg.run.size(), "member") + " (a reduce-scatter head)";
  else why += ": " + count(dg.run.size(), "member") + " then all_gather (an all-gather tail)";
  why += " as one kernel over NCCL's device API";
  if (!dg.algo.empty()) why += "; algorithm " + dg.algo;
  if (dg.copyEngines) why += "; copy engines move the slices";
  if (dg.rounds > 1) why += "; " + std::to_string(dg.rounds) + " rounds";
  if (!dg.folds.empty()) why += "; folds " + count(dg.folds.size(), "reduction");
  if (dg.chain >= 0) why += "; computes " + scalarChains_.at(dg.chain).name + " first";
  return why;
}

void Emitter::assemblePlan() {
  plan_ = plan::Plan(p_.stages.size());
  const int n = static_cast<int>(p_.stages.size());
  // Overlaps whose launch lies after their producer: at the returning all_to_all of a pipeline,
  // else at the first consumer stage where stages lie between.
  std::map<int, int> overlapAt;  // stage -> producer
  for (auto& [prod, ch] : chunked_) {
    if (ch.back >= 0) overlapAt[ch.back] = prod;
    else if (!(prod + 1 < n && overlapped_.count(prod + 1))) overlapAt[firstOverlapped(prod)] = prod;
  }
  auto devGroupOf = [&](int id) {  // the device group (its first member) whose member `id` is
    auto it = devGroups_.upper_bound(id);
    if (it == devGroups_.begin()) throw InternalError("plan: device-group member %" + std::to_string(id) + " before every group");
    return std::prev(it)->first;
  };
  auto producerOf = [&](int id) {  // the overlap whose consumer member `id` is
    for (auto& [prod, ch] : chunked_)
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
    if (auto dg = devGroups_.find(i); dg != devGroups_.end()) {
      auto& d = plan_.claim(i, Step::DeviceGroup, i, "planDeviceGroups");
      d.what = dg->second.name;
      d.why = devGroupWhy(dg->second);
    } else if (auto rg = rowGroups_.find(i); rg != rowGroups_.end()) {
      auto& d = plan_.claim(i, Step::RowGroup, i, "planRowGroups");
      d.what = rg->second.name;
      d.why = "fused group '" + rg->second.name + "': " + count(rg->second.members.size(), "member") +
              " over rows of one shape (element-wise stages and reductions along the last dimension) as one row kernel";
    } else if (auto rm = rowGroupOf_.find(i); rm != rowGroupOf_.end()) {
      plan_.claim(i, Step::InRowGroup, rm->second, "planRowGroups");
    } else if (auto sc = scalarChains_.find(i); sc != scalarChains_.end()) {
      auto& d = plan_.claim(i, Step::ScalarChain, i, "planScalarChains");
      d.what = sc->second.name;
      d.foldedInto = sc->second.into;
      d.why = count(sc->second.stages.size(), "one-element stage") + " as one single-thread kernel" +
              (sc->second.exchanges.empty() ? "" : ", its allreduces " + count(sc->second.exchanges.size(), "exchange") +
                                                       " through a symmetric window") +
              (sc->second.into >= 0 ? "; computed first in every block of fused group '" + devGroups_.at(sc->second.into).name + "'"
                                    : "");
    } else if (auto sm = scalarChainOf_.find(i); sm != scalarChainOf_.end()) {
      plan_.claim(i, Step::InScalarChain, sm->second, "planScalarChains");
    } else if (devMembers_.count(i)) {
      plan_.claim(i, Step::InDeviceGroup, devGroupOf(i), "planDeviceGroups");
    } else if (auto in = inlinedInto_.find(i); in != inlinedInto_.end()) {
      plan_.claim(i, Step::InReduction, in->second, "planInlinedReductions");
    } else if (auto ch = chunked_.find(i); ch != chunked_.end()) {
      if (ch->second.back < 0 && i + 1 < n && overlapped_.count(i + 1)) {
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
      d.why = overlapWhy(chunked_.at(at->second));
    } else if (auto da = devAR_.find(i); da != devAR_.end()) {
      auto& d = plan_.claim(i, Step::DeviceAllReduce, i, "planDeviceAllReduces");
      d.what = da->second.name;
      d.why = "an allreduce over the world as a device-API kernel, its form " +
              (da->second.algo.empty() ? std::string("chosen at run time by size") : "algorithm " + da->second.algo);
    } else if (auto pr = std::find_if(arPair_.begin(), arPair_.end(), [&](const auto& e) { return e.second == i; });
               pr != arPair_.end()) {
      plan_.claim(i, Step::InAllReducePair, pr->first, "planAllReducePairs");
    } else if (auto pa = arPair_.find(i); pa != arPair_.end()) {
      auto& d = plan_.claim(i, Step::AllReducePair, i, "planAllReducePairs");
      d.what = s.fusedInto;
      d.why = "fused group '" + s.fusedInto + "' is a reduce_scatter and an all_gather with nothing between: one NCCL allreduce";
    } else if (auto bag = bagOf_.find(i); bag != bagOf_.end()) {
      plan_.claim(i, Step::InBag, bag->second, "planBags");
    } else if (overlapped_.count(i)) {
      plan_.claim(i, Step::InOverlap, producerOf(i), "planOverlaps");
    } else if (auto r = runOf_.find(i); r != runOf_.end() && r->second.front() != i) {
      plan_.claim(i, Step::InRun, r->second.front(), "planRuns");
    } else {
      auto& d = plan_.claim(i, Step::Stage, i, "the stage's own lowering");
      d.why = stageWhy(i);
    }
    if (auto note = overlapNotes_.find(i); note != overlapNotes_.end()) plan_.storageOf(i).unchunked = note->second;
  }
  // Storage, in the order its decisions bind.
  for (int i = 0; i < n; ++i) {
    const Stage& s = p_.stages[i];
    plan::Decision& d = plan_.storageOf(i);
    if (s.kind == StageKind::Input) d.storage = Storage::Input;
    else if (s.kind == StageKind::State) d.storage = Storage::State;
    else if (auto bag = bagOf_.find(i); bag != bagOf_.end()) {
      d.storage = Storage::InBag;
      d.from = bag->second;
    } else if (unstored_.count(i)) d.storage = Storage::InKernel;
    else if (auto di = direct_.find(i); di != direct_.end()) {
      d.storage = Storage::Direct;
      d.into = di->second.first;
      d.intoWhat = di->second.second;
    } else if (auto chp = chunked_.find(i); chp != chunked_.end() && chp->second.rs >= 0 && !isUsed(p_, i, {chp->second.rs}))
      d.storage = Storage::InChunks;
    else if (auto in = inlinedInto_.find(i); in != inlinedInto_.end()) {
      d.storage = Storage::InReduction;
      d.from = in->second;
    } else if (ncclOnly_.count(i)) d.storage = Storage::NcclOnly;
    else if (auto bo = blockOnly_.find(i); bo != blockOnly_.end()) {
      d.storage = Storage::BlockOnly;
      d.into = bo->second;
      for (auto& [prod, ch] : chunked_)  // the blocks are those of the pipeline's returning all_to_all
        if (ch.back >= 0 && std::find(ch.run.begin(), ch.run.end(), i) != ch.run.end()) {
          const GroupInfo* gr = p_.stages[ch.back].type.group ? p_.stages[ch.back].type.group : p_.world();
          d.intoWhat = gr->name + ".size";
        }
    } else if (devFallbackOnly_.count(i)) d.storage = Storage::FallbackOnly;
    else d.storage = Storage::Buffer;
  }
  plan_.checkComplete(p_);
  checkOneOwner(overlapAt);
}

void Emitter::checkOneOwner(const std::map<int, int>& overlapAt) const {
  // The passes that take a stage into a launch of their own kind. Nested decisions are one
  // owner: a device group takes the element-wise run its members were planned in (a run is no
  // owner here) and the allreduce that heads it (its NCCL fallback), an overlap the embedding bag
  // it pipelines, a device allreduce the fused [reduce_scatter, all_gather] pair it runs (its NCCL
  // fallback is the pair's one allreduce), and an overlap's launch sits at its first consumer.
  for (int i = 0; i < static_cast<int>(p_.stages.size()); ++i) {
    std::vector<const char*> by;
    const bool dev = devGroups_.count(i) || devMembers_.count(i);
    const bool overlap = chunked_.count(i) || overlapped_.count(i) || overlapAt.count(i);
    if (dev) by.push_back("planDeviceGroups");
    if (rowGroupOf_.count(i)) by.push_back("planRowGroups");
    if (scalarChainOf_.count(i)) by.push_back("planScalarChains");
    if (inlinedInto_.count(i)) by.push_back("planInlinedReductions");
    if (overlap) by.push_back("planOverlaps");
    if (devAR_.count(i) && !dev) by.push_back("planDeviceAllReduces");
    if ((arPair_.count(i) && !devAR_.count(i)) ||
        std::any_of(arPair_.begin(), arPair_.end(), [&](const auto& e) { return e.second == i; }))
      by.push_back("planAllReducePairs");
    if (bagOf_.count(i) && !overlap) by.push_back("planBags");
    if (by.size() > 1)
      throw InternalError("plan: stage %" + std::to_string(i) + " '" + p_.stages[i].name + "' claimed twice, by " + by[0] + " and " +
                          by[1]);
  }
  for (auto& [at, prod] : overlapAt)
    if (plan_.at(at).step != Step::Overlap)
      throw InternalError("plan: the overlap of '" + p_.stages[prod].name + "' has no launch: its place '" + p_.stages[at].name +
                          "' is " + plan::stepName(plan_.at(at).step));
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
  if (auto dc = devChunked_.find(ch.producer); dc != devChunked_.end()) why += "; the epilogue and all-gather as the kernel of fused group '" + dc->second.name + "'";
  return why;
}

std::string Emitter::stageWhy(int id) const {
  const Stage& s = p_.stages[id];
  std::string why;
  switch (s.kind) {
    case StageKind::Compute:
      if (auto r = runOf_.find(id); r != runOf_.end() && r->second.size() > 1)
        why = "element-wise run of " + count(r->second.size(), "stage") + " of fused group '" + s.fusedInto + "': one kernel";
      else why = "element-wise kernel";
      break;
    case StageKind::Reduce:
      why = bagReduce_.count(id) ? "embedding-bag reduction: gathers the looked-up rows as it reduces"
            : foldedInto_.count(id) ? "combines the partial results that fused group '" + devGroups_.at(foldedInto_.at(id)).name +
                                          "''s blocks wrote (where the group runs as NCCL calls: the whole reduction)"
            : inlineSrc_.count(id) ? "reduction that computes the elements it reduces"
                                   : "reduction: a thread, a block or blocks per output, chosen at run time";
      break;
    case StageKind::Softmax: case StageKind::Layernorm: case StageKind::Rmsnorm:
      why = "row kernel: rows in registers, a block a row, or a row over blocks, by the row length at run time";
      break;
    case StageKind::Matmul: case StageKind::Gemv: why = "cuBLAS GEMM"; break;
    case StageKind::Embedding: why = "embedding lookup kernel"; break;
    case StageKind::Send:
      why = devSend_.count(id) ? "send over NCCL's device API (NCCL send/recv where the ranks are not all load/store reachable)"
                               : "NCCL send/recv";
      break;
    case StageKind::AllToAll:
      why = devA2A_.count(id) ? "all_to_all over NCCL's device API: push, barrier, copy out (NCCL send/recv pairs otherwise)"
                              : "NCCL send/recv pairs";
      break;
    case StageKind::AllReduce: case StageKind::ReduceScatter: case StageKind::AllGather: case StageKind::Broadcast:
    case StageKind::Reduce1:
      why = "NCCL call";
      break;
    case StageKind::Input: case StageKind::State: break;  // (given: no launch)
  }
  if (!s.fusedInto.empty())
    if (auto w = rowGroupWhyNot_.find(s.fusedInto); w != rowGroupWhyNot_.end()) why += "; no row group: " + w->second;
  if (auto a = arGroupNotes_.find(id); a != arGroupNotes_.end()) why += "; " + a->second;
  return why;
}

}  // namespace coconet::backend::detail
