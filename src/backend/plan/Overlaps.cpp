// Planning overlaps: which producer is chunked with which collectives (or pipelined block by block
// with an all_to_all), and which run unchunked and why; their device-API epilogues.
#include <algorithm>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

int Emitter::firstOverlapped(int prod) const {
  int q = prod + 1;
  while (q < static_cast<int>(p_.stages.size()) && !plan_.overlapped.count(q)) ++q;
  return q;
}

void Emitter::planOverlaps() {
  // An overlap the backend does not chunk runs as the program without it (the generated code
  // says why at the producer), and the schedule's line gets a warning saying so.
  auto unchunked = [&](const ir::Overlap& o, int prod, const std::string& why) {
    plan_.overlapNotes[prod] = why + "\n";
    if (o_.diags)
      o_.diags->warning(o.loc,
                        "overlap of " + quote(o.producer) + " with " + quote(o.consumer) + " runs unchunked in the CUDA backend: " + why,
                        7);  // (the caret under `overlap`)
  };
  for (auto& o : p_.overlaps) {
    int prod = p_.find(o.producer);
    std::vector<int> members;
    if (const FusedGroup* f = p_.findFused(o.consumer)) {
      for (auto& m : f->members) members.push_back(p_.find(m));
    } else {
      members.push_back(p_.find(o.consumer));
    }
    std::sort(members.begin(), members.end());
    std::string why;
    Chunked ch;
    ch.producer = prod;
    ch.chunks = o.chunks;
    const Stage& ps = p_.stages[prod];
    if (ps.kind == StageKind::AllToAll) {
      // an all_to_all pipeline: the chain is every stage between that reads x or a chain value
      ch.back = p_.find(o.consumer);
      ExchangeChain chain = exchangeChain(p_, prod, ch.back);
      ch.run = chain.stages;
      if (chain.bad >= 0) {
        unchunked(o, prod, "'" + p_.stages[chain.bad].name + "' does not work rank block by rank block");
        continue;
      }
      if (auto why = exchangeWhyNot(ch); !why.empty()) {
        unchunked(o, prod, why);
        continue;
      }
      // Copy engines unless tune(back, algorithm = nccl), over the world group (its windows' ranks
      // are the group's).
      const Stage& bs = p_.stages[ch.back];
      if (o_.deviceCollectives && algorithmOf(bs) != "nccl" && (!bs.type.group || bs.type.group == p_.world()))
        ch.devIndex = plan_.devIndices++;
      plan_.chunked[prod] = ch;
      for (int m : ch.run) plan_.overlapped.insert(m);
      plan_.overlapped.insert(ch.back);
      // Values between x and the result that only the pipeline reads: one block of storage (the
      // steps run one after another on one stream).
      if (users_.empty()) users_ = p_.users();
      for (int m : ch.run)
        if (m != bs.operands[0] && pipelineOnly(ch, m)) plan_.blockOnly[m] = g(bs.type.group ? bs.type.group : p_.world(), "size");
      // x read in the windows by copy engines needs storage only where the NCCL pairs run.
      if (ch.devIndex >= 0 && pipelineOnly(ch, prod)) plan_.ncclOnly.insert(prod);
      continue;
    }
    if (auto bag = plan_.bagOf.find(prod); bag != plan_.bagOf.end() && ps.kind == StageKind::Embedding) {
      // embedding -> its reduction -> all_to_all of the reduction along dimension 0 per rank
      const Stage& r = p_.stages[bag->second];
      if (o.dim == 0 && r.dim != 0 && members.size() == 2 && members[0] == bag->second && members[1] == bag->second + 1 &&
          p_.stages[members[1]].kind == StageKind::AllToAll && p_.stages[members[1]].operands[0] == bag->second) {
        ch.bag = bag->second;
        ch.a2a = members[1];
        plan_.chunked[prod] = ch;
        for (int m : members) plan_.overlapped.insert(m);
      } else {
        unchunked(o, prod, "only an embedding bag followed by an all_to_all, chunked along dimension 0, is chunked yet");
      }
      continue;
    }
    const bool matrix = ps.kind == StageKind::Matmul && p_.stages[ps.operands[1]].type.rank() == 2;
    if (ps.kind != StageKind::Matmul && ps.kind != StageKind::Gemv)
      why = "only matmuls and gemvs are chunked yet";
    else
      // Stages between the product and its consumer run before the chunks (the block is
      // emitted at the consumer's place), so none of them may read the product.
      for (int q = prod + 1; why.empty() && q < members.front(); ++q)
        for (int o : p_.stages[q].operands)
          if (o == prod) why = "'" + p_.stages[q].name + "' reads the " + std::string(stageKindName(ps.kind)) + " before the consumer";
    for (size_t k = 1; why.empty() && k < members.size(); ++k)
      if (members[k] != members[k - 1] + 1) why = "the consumer's stages are not contiguous";
    if (why.empty()) {
      const Stage& first = p_.stages[members.front()];
      if (first.operands.empty() || first.operands[0] != prod)
        why = "the consumer's first stage does not read the product";
      else if (first.kind == StageKind::AllToAll && ps.kind == StageKind::Matmul && members.size() == 1) {
        if (auto w = chunkedAllToAllWhyNot(ps, o.dim); !w.empty())
          why = w;
        else
          ch.a2a = members.front(), ch.dim = o.dim;
      } else if (o.dim != 0)
        why = "only dimension 0 is chunked for a reduce_scatter or allreduce consumer";
      else if (first.kind == StageKind::ReduceScatter && first.dim != 0)
        why = "the reduce_scatter scatters dimension " + std::to_string(first.dim) + ", not the rows the product is chunked by";
      else if (first.kind == StageKind::ReduceScatter && matrix)
        ch.rs = members.front();
      else if (first.kind == StageKind::AllReduce && (matrix || ps.kind == StageKind::Gemv))
        ch.ar = members.front();
      else
        why = "only a reduce_scatter (after a matmul by a matrix), an allreduce or an all_to_all consumer is chunked";
    }
    if (why.empty() && ch.a2a >= 0) {
      plan_.chunked[prod] = ch;
      for (int m : members) plan_.overlapped.insert(m);
      continue;
    }
    for (size_t k = 1; why.empty() && k < members.size(); ++k) {
      const Stage& m = p_.stages[members[k]];
      const Stage& r = p_.stages[ch.rs >= 0 ? ch.rs : ch.ar];
      if (m.kind == StageKind::Compute && m.type.shape == r.type.shape && m.type.layout == r.type.layout && m.type.group == r.type.group &&
          ch.ag < 0) {
        for (int opd : m.operands)
          if (opd == prod) why = "a compute reads the matmul directly";
        ch.run.push_back(members[k]);
      } else if (ch.rs >= 0 && m.kind == StageKind::AllGather && k + 1 == members.size() && m.dim == 0 &&
                 m.operands[0] == (ch.run.empty() ? ch.rs : ch.run.back())) {
        ch.ag = members[k];
      } else {
        why = "'" + m.name + "' is not part of a reduce_scatter -> element-wise -> all_gather chain (or allreduce -> element-wise)";
      }
    }
    if (!why.empty()) {
      unchunked(o, prod, why);
      continue;
    }
    plan_.chunked[prod] = ch;
    for (int m : members) plan_.overlapped.insert(m);
  }
}

bool Emitter::gatherMayPipe() const {
  for (auto& [prod, dg] : plan_.devChunked)
    if (dg.gather != 0) return true;
  return false;
}

void Emitter::planDeviceChunked() {
  if (!o_.deviceCollectives) return;
  for (auto& [prod, ch] : plan_.chunked) {
    if (ch.rs < 0 || ch.ag < 0 || ch.ar >= 0 || ch.a2a >= 0 || ch.bag >= 0) continue;
    const Stage& rs = p_.stages[ch.rs];
    const auto& knobs = groupKnobs(rs);
    if (ncclAsked(knobs)) continue;
    std::vector<int> m{ch.rs};
    m.insert(m.end(), ch.run.begin(), ch.run.end());
    m.push_back(ch.ag);
    DevGroup dg;
    if (!analyzeDevGroup(m, dg)) continue;
    dg.name = rs.fusedInto.empty() ? rs.name : rs.fusedInto;
    dg.blocks = std::min(knobs.number(Knob::Blocks).value_or(devOverlapBlocks_), devMaxBlocks_);
    dg.preloaded = true;
    if (auto g = knobs.word(Knob::Gather)) dg.gather = *g == "pipelined" ? 1 : 0;
    dg.tailPieces = knobs.number(Knob::Tail).value_or(1);
    if (auto a = knobs.word(Knob::Algorithm)) dg.algo = *a;
    if (dg.algo == "copy_engines") dg.ceGather = true;
    if (knobs.word(Knob::Merge) == "never") dg.mergeChunks = false;
    warnOneShotNotTaken(dg);
    dg.index = plan_.devIndices++;
    markFallbackOnly(m, dg);
    plan_.devChunked[prod] = dg;
  }
}

std::string Emitter::chunkedAllToAllWhyNot(const Stage& ps, int d) const {
  const TensorType& at = p_.stages[ps.operands[0]].type;
  const TensorType& wt = p_.stages[ps.operands[1]].type;
  int ra = at.rank(), wb = wt.rank() - 2;
  if (ra < 2 || d < 1 || d > ra - 2) return "an all_to_all exchanges dimension 0; chunk a row dimension after it";
  if (ps.type.rank() != ra) return "the product's rank differs from the left operand's";
  if (wb > 0) {
    if (d != ra - 2) return "a batched weight needs the chunked dimension to be the rows of each GEMM";
    for (int k = 0; k < wb; ++k)
      if (ra - 2 - wb + k < 0 || wt.shape[k] != at.shape[ra - 2 - wb + k]) return "the weight's batch dimensions broadcast";
  }
  return "";
}

// The schedule checked the chain (overlapExchange); a later step may have fused its ends.
std::string Emitter::exchangeWhyNot(const Chunked& ch) const {
  const Stage& x = p_.stages[ch.producer];
  const Stage& back = p_.stages[ch.back];
  if (back.kind != StageKind::AllToAll || back.type.group != x.type.group || !back.fusedInto.empty() || !x.fusedInto.empty())
    return "'" + back.name + "' is not an unfused all_to_all of the same group";
  if (ch.run.empty() || back.operands[0] != ch.run.back())
    return "'" + back.name + "' does not return the last stage computed from '" + x.name + "'";
  return "";
}

bool Emitter::pipelineOnly(const Chunked& ch, int id) const {
  if (std::find(p_.outputs.begin(), p_.outputs.end(), id) != p_.outputs.end()) return false;
  for (auto& st : p_.states)
    if (st.entry == id || st.exit == id) return false;
  for (int u : users_[id])
    if (u != ch.back && std::find(ch.run.begin(), ch.run.end(), u) == ch.run.end()) return false;
  return true;
}

bool Emitter::hasExchangePipeline() const {
  for (auto& [prod, ch] : plan_.chunked)
    if (ch.back >= 0) return true;
  return false;
}

}  // namespace coconet::backend::detail
