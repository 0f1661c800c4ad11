// What verify draws for a run and how it lays it out per rank (Draw.h).
#include "verify/Draw.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace coconet::verify::detail {

using namespace ir;
using interp::Config;
using interp::PerRank;
using interp::Tensor;

namespace {
std::vector<int64_t> shapeOf(const TensorType& t, const Config& c) {
  std::vector<int64_t> s;
  for (auto& d : t.shape) s.push_back(interp::evalSize(d, c, "a dimension"));
  return s;
}
}  // namespace

// Draws the logical values of every input and state: one tensor per group instance for
// replicated and sliced values, one per rank for local ones.
std::map<std::string, std::vector<Tensor>> drawInputs(const Program& p, const Config& c, std::mt19937_64& rng, const Program* also) {
  // Inputs used as embedding indices must index the table (in p, or in `also`: a backward's
  // forward, which computes its saved values from the same inputs).
  std::map<std::string, int64_t> indexBound;
  for (const Program* q : {&p, also}) {
    if (!q) continue;
    for (auto& s : q->stages)
      if (s.kind == StageKind::Embedding)
        indexBound[q->stages[s.operands[1]].name] = interp::evalSize(q->stages[s.operands[0]].type.shape[0], c, "rows");
      else if (s.kind == StageKind::EmbeddingGrad)
        indexBound[q->stages[s.operands[1]].name] = interp::evalSize(s.type.shape[0], c, "rows");  // (a backward program's indices)
  }
  std::uniform_real_distribution<double> uf(-1.0, 1.0);
  std::map<std::string, std::vector<Tensor>> out;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& s = p.stages[i];
    if (s.kind != StageKind::Input && s.kind != StageKind::State) continue;
    const std::string key = s.kind == StageKind::State ? s.state : s.name;
    auto shape = shapeOf(s.type, c);
    std::map<int, Tensor> byKey;  // instance (or rank, for local) -> logical tensor
    std::vector<Tensor> perRank(c.ranks);
    for (int r = 0; r < c.ranks; ++r) {
      bool local = s.type.group && s.type.layout.kind == Layout::Local;
      int k = local ? r : interp::groupCoord(s.type.group, c, r).instance;
      if (!byKey.count(k)) {
        Tensor t;
        t.shape = shape;
        t.data.resize(t.numel());
        if (interp::keepsExact(s.type.dtype)) t.exact.resize(t.data.size());
        for (auto& v : t.data) {
          if (s.kind == StageKind::Input && indexBound.count(s.name))
            v = static_cast<double>(rng() % indexBound[s.name]);
          else if (s.type.dtype == DType::Bool)
            v = static_cast<double>(rng() % 2);
          else if (ast::isInteger(s.type.dtype))
            v = static_cast<double>(rng() % 4);
          else
            v = interp::roundTo(s.type.dtype, uf(rng));
        }
        for (size_t e = 0; e < t.exact.size(); ++e) t.exact[e] = static_cast<int64_t>(t.data[e]);
        byKey[k] = std::move(t);
      }
      perRank[r] = byKey[k];
    }
    out[key] = std::move(perRank);
  }
  return out;
}

interp::Values storageFor(const Program& p, const std::map<std::string, std::vector<Tensor>>& logical, const Config& c) {
  interp::Values v;
  for (auto& s : p.stages) {
    if (s.kind != StageKind::Input && s.kind != StageKind::State) continue;
    const std::string key = s.kind == StageKind::State ? s.state : s.name;
    auto it = logical.find(key);
    if (it == logical.end()) internalError("verify: the scheduled program has an input the original lacks: " + key);
    PerRank pr;
    for (int r = 0; r < c.ranks; ++r) pr.push_back(interp::storageOf(it->second[r], s.type, c, r));
    v.inputs[key] = std::move(pr);
  }
  return v;
}

void fillSaved(const Program& saving, const std::vector<std::string>& names, std::map<std::string, std::vector<Tensor>>& logical,
               const Config& c) {
  if (names.empty()) return;
  interp::Result r = interp::run(saving, c, storageFor(saving, logical, c));
  for (size_t k = 0; k < saving.outputs.size(); ++k) {
    if (std::find(names.begin(), names.end(), saving.outputNames[k]) == names.end()) continue;
    auto& v = logical[saving.outputNames[k]];
    v.clear();
    for (int q = 0; q < c.ranks; ++q) v.push_back(interp::wholeOf(r.outputs[k], saving.stages[saving.outputs[k]].type, c, q));
  }
}

std::string sizesStr(const Program& p, const Config& c) {
  std::string s;
  for (auto& prm : p.params) {
    if (prm.isSize)
      s += " " + prm.name + "=" + std::to_string(c.sizes.at(prm.name));
    else if (!prm.value && c.integerScalars.count(prm.name)) {
      s += " " + prm.name + "=" + std::to_string(c.integerScalars.at(prm.name));
    } else if (!prm.value) {
      std::ostringstream os;
      os << c.scalars.at(prm.name);
      s += " " + prm.name + "=" + os.str();
    }
  }
  return s;
}

}  // namespace coconet::verify::detail
