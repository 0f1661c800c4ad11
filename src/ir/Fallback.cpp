#include "ir/Fallback.h"

#include <algorithm>
#include <map>

namespace coconet::ir {

Fallback unscheduledFallback(const Program& base, const Program& sched) {
  Fallback f;  // (whyNot is set whenever the storage differs)
  for (auto& r : sched.requirements)
    if (std::none_of(base.requirements.begin(), base.requirements.end(), [&](const Requirement& b) { return r.sameCondition(b); }))
      f.own.push_back(&r);
  // The caller's tensors, by name: what the C++ API, the C interface and the driver allocate.
  auto storage = [](const Program& p) {
    std::map<std::string, std::string> m;
    for (auto& s : p.stages)
      if (s.kind == StageKind::Input) m["input '" + s.name + "'"] = s.type.str();
    for (size_t i = 0; i < p.outputs.size(); ++i) m["output '" + p.outputNames[i] + "'"] = p.stages[p.outputs[i]].type.str();
    for (auto& st : p.states) m["state '" + st.name + "'"] = st.type.str();
    return m;
  };
  auto a = storage(base), b = storage(sched);
  for (auto& [name, type] : b) {
    auto it = a.find(name);
    if (it == a.end() || it->second != type) {
      f.whyNot = "the schedule stores " + name + " as " + type + (it == a.end() ? "" : " (the program: " + it->second + ")");
      return f;
    }
  }
  if (a.size() != b.size()) {
    f.whyNot = "the schedule changes the program's tensors";
    return f;
  }
  f.sameStorage = true;
  f.possible = !f.own.empty();
  return f;
}

SizeExpr inputBytes(const Program& p) {
  SizeExpr total = SizeExpr::constant(0);
  for (auto& s : p.stages) {
    if (s.kind != StageKind::Input) continue;
    SizeExpr n = SizeExpr::constant(ast::dtypeBytes(s.type.dtype));
    for (auto& d : s.type.shape) n = n * d;
    total = total + n;
  }
  return total;
}

}  // namespace coconet::ir
