// overlap: pipeline a matmul (gemv, embedding) with the collective that consumes it.
#include <algorithm>
#include <charconv>
#include <set>

#include "schedule/Primitives.h"

namespace coconet::schedule {

using namespace ir;

namespace {

// overlap(x, back) with x an all_to_all: the stages from x to the all_to_all `back` run rank
// block by rank block (see Primitives.h).
bool overlapExchange(StepContext& c, int prod) {
  Program& p = c.p;
  auto pos = c.positional();
  const Stage& ps = p.stages[prod];
  if (p.findFused(pos[1]->value))
    return c.fail(pos[1], pos[1]->value, "it is a fused group; an all_to_all is overlapped with the all_to_all that returns its result");
  int back = c.stage(*pos[1]);
  if (back < 0) return false;
  const Stage& bs = p.stages[back];
  if (bs.kind != StageKind::AllToAll)
    return c.fail(pos[1], bs.name, "it is " + describe(bs) + "; an all_to_all is overlapped with the all_to_all that returns its result");
  if (bs.type.group != ps.type.group) return c.fail(pos[1], bs.name, "it exchanges in another group than " + quote(ps.name));
  if (const Arg* k = c.knob("chunks"))
    return c.fail(k, ps.name, "an all_to_all pipeline runs one chunk per rank of the group; 'chunks' is not a knob here");
  if (const Arg* k = c.knob("dim"); k && k->value != "0")
    return c.fail(k, ps.name, "an all_to_all pipeline chunks dimension 0 (one block per rank), got dim = " + quote(k->value));
  // The chain: every stage between them that reads x or a chain value, each working on the
  // block of dimension 0 that one rank sent without reading the other blocks.
  ExchangeChain ch = exchangeChain(p, prod, back);
  if (ch.bad >= 0) {
    const Stage& s = p.stages[ch.bad];
    const std::string name = quote(s.name);
    switch (ch.why) {
      case ExchangeChain::Why::Fused: return c.fail(pos[0], ps.name, name + " is fused into " + quote(s.fusedInto));
      case ExchangeChain::Why::Sliced:
        return c.fail(pos[0], ps.name, name + " is sliced across ranks; its blocks would not be this rank's");
      case ExchangeChain::Why::ExchangedWeight:
        return c.fail(pos[0], ps.name, name + " multiplies by an exchanged value; only its left operand may be one");
      case ExchangeChain::Why::WeightDim0:
        return c.fail(pos[0], ps.name, "the weight of " + name + " has a dimension 0 of its own; it must broadcast over the ranks' blocks");
      case ExchangeChain::Why::Broadcast:
        return c.fail(pos[0], ps.name, name + " broadcasts " + quote(p.stages[ch.operand].name) + ", which mixes the ranks' blocks");
      case ExchangeChain::Why::Kind:
      case ExchangeChain::Why::None:
        return c.fail(pos[0], ps.name, name + " is " + describe(s) + ", which does not work rank block by rank block");
    }
  }
  std::set<int> chain(ch.stages.begin(), ch.stages.end());
  chain.insert(prod);
  if (bs.operands[0] == prod || !chain.count(bs.operands[0]))
    return c.fail(pos[1], bs.name, "it does not return a value computed from " + quote(ps.name));
  if (!ps.fusedInto.empty()) return c.fail(pos[0], ps.name, "it is fused into " + quote(ps.fusedInto));
  if (!bs.fusedInto.empty()) return c.fail(pos[1], bs.name, "it is fused into " + quote(bs.fusedInto));
  for (auto& o : p.overlaps)
    for (int q : chain)
      if (o.producer == p.stages[q].name || o.consumer == p.stages[q].name || o.consumer == bs.name)
        return c.fail(pos[0], ps.name, quote(o.producer) + " is already overlapped with " + quote(o.consumer));
  p.overlaps.push_back({ps.name, bs.name, 0, 0, c.step.loc});
  return true;
}

// The requirement that the chunked dimension of the producer `ps` splits into the chunks (each
// over the ranks when the consumer scatters or exchanges blocks along dimension 0); false, with
// a diagnostic at `at`, where it never can.
bool requireChunksDivide(StepContext& c, const Stage& ps, const Arg* at, int chunks, int dim, bool scatters) {
  Program& p = c.p;
  SizeExpr by = SizeExpr::constant(chunks);
  bool perRank = scatters && dim == 0 && ps.type.group;
  if (perRank) by = by * ps.type.group->size;
  // A dimension that depends on the number of ranks alone may never divide (moe_gemm's
  // per-rank blocks): check some rank counts before accepting.
  if (ps.type.shape[dim].symbols() == std::vector<std::string>{"world.size"} &&
      (by.symbols().empty() || by.symbols() == std::vector<std::string>{"world.size"})) {
    bool ever = false;
    for (int64_t P = 1; P <= 64 && !ever; ++P) {
      try {
        auto n = ps.type.shape[dim].evaluate({{"world.size", P}}), d = by.evaluate({{"world.size", P}});
        ever = n && d && *d > 0 && *n % *d == 0;
      } catch (const ast::SizeOverflow&) {
        break;  // larger rank counts overflow too
      }
    }
    if (!ever)
      return c.fail(at, ps.name,
                    "dimension " + std::to_string(dim) + " (" + ps.type.shape[dim].str() + ") never divides into " + by.str() +
                        " parts; chunk another dimension with 'dim'");
  }
  if (dim == 0 && ps.kind == StageKind::Matmul && ps.type.rank() >= 3) {
    // A matmul's chunks are counted in rows of its product (every dimension but the last),
    // per rank where the consumer scatters them, else the whole product's rows.
    SizeExpr rows = ps.type.shape[0];
    std::string names = ps.type.shape[0].str();
    for (int k = 1; k + 1 < ps.type.rank(); ++k) {
      rows = rows * ps.type.shape[k];
      names += "*" + ps.type.shape[k].str();
    }
    requireDivisible(p, rows, by,
                     "overlap of " + quote(ps.name) + " splits the " + names + " rows of its product into " + std::to_string(chunks) +
                         " chunks" + (perRank ? " per rank" : ""),
                     c.step.loc);
  } else {
    requireDivisible(p, ps.type.shape[dim], by,
                     "overlap of " + quote(ps.name) + " splits dimension " + std::to_string(dim) + " into " + std::to_string(chunks) +
                         " chunks" + (perRank ? " per rank" : ""),
                     c.step.loc);
  }
  return true;
}

}  // namespace

bool overlap(StepContext& c) {
  // Step 1. Check every precondition.
  if (!c.expectShape({"chunks", "dim"}, 2, 2, 0)) return false;
  Program& p = c.p;
  auto pos = c.positional();
  int prod = c.stage(*pos[0]);
  if (prod < 0) return false;
  const Stage& ps = p.stages[prod];
  if (ps.kind == StageKind::AllToAll) return overlapExchange(c, prod);
  if (ps.kind != StageKind::Matmul && ps.kind != StageKind::Gemv && ps.kind != StageKind::Embedding)
    return c.fail(pos[0], ps.name, "it is " + describe(ps) + "; overlap pipelines a matmul, gemv, embedding or all_to_all");
  std::vector<int> members;
  std::string consumer = pos[1]->value;
  if (const FusedGroup* f = p.findFused(consumer)) {
    for (auto& m : f->members) members.push_back(p.find(m));
  } else {
    int id = c.stage(*pos[1]);
    if (id < 0) return false;
    members.push_back(id);
    consumer = p.stages[id].name;
  }
  bool reads = false, scatters = false;
  for (int m : members)
    for (int o : p.stages[m].operands) reads = reads || o == prod;
  if (!reads) return c.fail(pos[1], consumer, "it does not read " + quote(ps.name));
  auto users = p.users();
  // Chunks along dimension 0 of a reduce_scatter's input are sub-blocks of every rank's block
  // of rows, in order: a value sliced along dimension 0 by that reduce_scatter (and element-wise
  // stages on it) composes from its chunks, so it may be used outside the consumer.
  const Arg* dimKnob = c.knob("dim");
  const bool rows = !dimKnob || dimKnob->value == "0";
  const TensorType* scattered = nullptr;  // the reduce_scatter's result, once seen
  bool exchanges = false;
  for (int m : members) {
    const Stage& s = p.stages[m];
    switch (s.kind) {
      case StageKind::Compute:
      case StageKind::AllReduce: break;
      case StageKind::Softmax:
      case StageKind::Layernorm:
      case StageKind::Rmsnorm: break;  // (rows of the last dimension: below)
      case StageKind::Reduce:
        if (s.dim < 0) return c.fail(pos[1], consumer, quote(s.name) + " reduces the whole tensor, which mixes chunks");
        break;
      case StageKind::ReduceScatter:
        scatters = true;
        if (!scattered) scattered = &s.type;
        break;
      case StageKind::AllToAll: scatters = exchanges = true; break;
      case StageKind::AllGather:
        if (!scatters) return c.fail(pos[1], consumer, quote(s.name) + " gathers a value not scattered in the group");
        break;
      default: return c.fail(pos[1], consumer, quote(s.name) + " is " + describe(s) + ", which does not work row by row");
    }
    bool escapes = std::find(p.outputs.begin(), p.outputs.end(), m) != p.outputs.end();
    for (int u : users[m]) escapes = escapes || std::find(members.begin(), members.end(), u) == members.end();
    const bool composes = rows && !exchanges && scattered && s.kind != StageKind::AllGather && s.type.layout == scattered->layout &&
                          s.type.group == scattered->group && s.type.layout.dim == 0;
    if (escapes && s.type.layout.kind == Layout::Sliced && s.type.group && !composes)
      return c.fail(pos[1], consumer, quote(s.name) + " is used outside while sliced; its chunks would not compose");
  }
  if (!ps.fusedInto.empty()) return c.fail(pos[0], ps.name, "it is fused into " + quote(ps.fusedInto));
  if (!p.findFused(consumer) && !p.stages[members[0]].fusedInto.empty())
    return c.fail(pos[1], consumer, "it is fused into " + quote(p.stages[members[0]].fusedInto) + "; overlap with the group");
  for (auto& o : p.overlaps)
    if (o.producer == ps.name || o.consumer == consumer)
      return c.fail(pos[0], ps.name, "it is already overlapped with " + quote(o.consumer));
  int chunks = 2;
  if (const Arg* k = c.knob("chunks")) {
    auto [ptr, ec] = std::from_chars(k->value.data(), k->value.data() + k->value.size(), chunks);
    if (ec != std::errc() || ptr != k->value.data() + k->value.size() || chunks < 2 || chunks > 1024) {
      c.diags.error(k->loc, "cannot overlap " + quote(ps.name) + ": chunks must be an integer in [2, 1024], got " + quote(k->value),
                    k->length);
      return false;
    }
  }
  if (ps.type.rank() == 0) return c.fail(pos[0], ps.name, "it is a scalar");
  int dim = 0;
  if (const Arg* k = c.knob("dim")) {
    auto [ptr, ec] = std::from_chars(k->value.data(), k->value.data() + k->value.size(), dim);
    if (ec != std::errc() || ptr != k->value.data() + k->value.size() || dim < 0 || dim >= ps.type.rank()) {
      c.diags.error(k->loc,
                    "cannot overlap " + quote(ps.name) + ": dim must be a dimension of its value (0 to " +
                        std::to_string(ps.type.rank() - 1) + "), got " + quote(k->value),
                    k->length);
      return false;
    }
  }
  // A reduction over the chunked dimension mixes chunks, and so does a normalization of it (over
  // the last dimension of its operand).
  for (int m : members) {
    const Stage& s = p.stages[m];
    const int xr = s.operands.empty() ? 0 : p.stages[s.operands[0]].type.rank(), at = dim + (xr - ps.type.rank());
    if (s.kind == StageKind::Reduce && s.dim == at)
      return c.fail(pos[1], consumer, quote(s.name) + " reduces the chunked dimension " + std::to_string(dim));
    if (isNormalizationKind(s.kind) && at == xr - 1)
      return c.fail(pos[1], consumer, quote(s.name) + " normalizes along the chunked dimension " + std::to_string(dim));
  }
  if (ps.type.group && ps.type.layout.kind == Layout::Sliced && ps.type.layout.dim == dim)
    return c.fail(pos[0], ps.name, "its dimension " + std::to_string(dim) + " is sliced across ranks; chunk another one");

  // Step 2. Record the overlap. The chunked dimension must split into the chunks, except for a
  // matmul whose rows the consumer's reduce_scatter scatters (the Megatron layer) or a matmul or
  // gemv whose rows the consumer's allreduce sums: there the generated code runs the most chunks
  // up to N that divide the rows (per rank), at run time (coconet_rt::overlapChunks), so any
  // row count runs.
  const StageKind first = p.stages[members.front()].kind;
  const bool runTimeChunks = dim == 0 && ((ps.kind == StageKind::Matmul && first == StageKind::ReduceScatter) ||
                                          ((ps.kind == StageKind::Matmul || ps.kind == StageKind::Gemv) && first == StageKind::AllReduce));
  if (!runTimeChunks && !requireChunksDivide(c, ps, pos[0], chunks, dim, scatters)) return false;
  p.overlaps.push_back({ps.name, consumer, chunks, dim, c.step.loc});
  return true;
}

}  // namespace coconet::schedule
