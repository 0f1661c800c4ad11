// The measured search's space (Measure.h): configs and their scripts, the table entries a
// program's generated code reads, and the cost model that ranks schedules.
#include <algorithm>
#include <set>
#include <sstream>

#include "ast/Types.h"
#include "interp/Interpreter.h"
#include "tune/Measure.h"

namespace coconet::tune {

using namespace ir;

std::string Config::settings() const {
  std::string s;
  for (auto& [target, knobs] : knobs)
    for (auto& [k, v] : knobs) s += (s.empty() ? "" : " ") + target + "." + k + "=" + v;
  for (auto& [e, v] : entries) s += (s.empty() ? "" : " ") + e + "=" + std::to_string(v);
  return s;
}

std::string Config::key() const {
  const std::string s = settings();
  return "s" + std::to_string(schedule) + (s.empty() ? "" : " " + s);
}

std::string configScript(const std::string& schedule, const Config& c) {
  std::string s = schedule;
  for (auto& [target, knobs] : c.knobs) {
    std::string args;
    for (auto& [k, v] : knobs)
      if (!v.empty()) args += ", " + k + " = " + v;
    if (!args.empty()) s += "tune(" + target + args + ");\n";
  }
  return s;
}

std::vector<const backend::tuning::Entry*> entriesRead(const backend::tuning::Table& t, const std::string& generated) {
  std::vector<const backend::tuning::Entry*> out;
  for (auto& e : t.entries) {
    if (e.search.empty()) continue;
    std::vector<std::string> symbols = e.readBy.empty() ? std::vector<std::string>{e.cxx} : e.readBy;
    if (std::any_of(symbols.begin(), symbols.end(), [&](const std::string& s) { return generated.find(s) != std::string::npos; }))
      out.push_back(&e);
  }
  return out;
}

double predictMicroseconds(const Program& p, const std::map<std::string, int64_t>& sizes) {
  // The H100 SXM datasheet's rates (HBM3 bandwidth, dense f16 tensor-core flops) and a kernel
  // launch's few microseconds: a ranking, not a timing.
  constexpr double kBytesPerUs = 3.35e6, kFlopsPerUs = 9.9e8, kLaunchUs = 3;
  interp::Config c;
  c.ranks = 1;
  for (auto& [k, v] : sizes) c.sizes[k] = v;
  auto bytes = [&](const TensorType& t) {
    double n = ast::dtypeBytes(t.dtype);
    for (auto& d : t.shape) n *= static_cast<double>(interp::evalSize(d, c, "a dimension"));
    return n;
  };
  auto readsOutside = [&](int id, const std::string& group) {
    for (auto& s : p.stages)
      if (std::find(s.operands.begin(), s.operands.end(), id) != s.operands.end() && (group.empty() || s.fusedInto != group)) return true;
    return std::find(p.outputs.begin(), p.outputs.end(), id) != p.outputs.end();
  };
  double us = 0;
  std::set<std::string> groups;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& s = p.stages[i];
    if (s.kind == StageKind::Input || s.kind == StageKind::State) continue;
    const std::string& g = s.fusedInto;
    if (!g.empty() && !groups.insert(g).second) {
      // a member after the group's first: its own traffic only
    } else {
      us += kLaunchUs;
    }
    for (int o : s.operands)
      if (g.empty() || p.stages[o].fusedInto != g) us += bytes(p.stages[o].type) / kBytesPerUs;
    if (readsOutside(static_cast<int>(i), g)) us += bytes(s.type) / kBytesPerUs;
    if ((s.kind == StageKind::Matmul || s.kind == StageKind::Gemv) && s.operands.size() >= 2) {
      const TensorType& a = p.stages[s.operands[0]].type;
      const double k = a.rank() ? static_cast<double>(interp::evalSize(a.shape.back(), c, "a dimension")) : 1;
      us += 2 * k * (bytes(s.type) / ast::dtypeBytes(s.type.dtype)) / kFlopsPerUs;
    }
  }
  return us;
}

}  // namespace coconet::tune
