// Breadth-first search over schedule steps; see Enumerate.h.
#include "tune/Enumerate.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "backend/CudaEmitter.h"
#include "schedule/Schedule.h"
#include "support/Diagnostics.h"

namespace coconet::tune {

using namespace ir;

namespace {

// `script` applied to a copy of base: the program and the canonical text, or nothing where a
// step's precondition fails (its diagnostics go nowhere).
bool tryApply(const Program& base, const std::string& script, Program& out, std::string& canonical) {
  SourceManager sm;
  std::ostringstream sink;
  DiagnosticEngine diags(sm, sink);
  uint32_t file = sm.add("candidate.sched", script);
  auto parsed = schedule::parseScript(sm, file, diags);
  if (!parsed) return false;
  out = clone(base);
  std::vector<schedule::Step> trace;
  if (!schedule::apply(out, *parsed, diags, trace, nullptr) || diags.hasErrors()) return false;
  canonical = schedule::printScript(trace);
  return true;
}

bool isCompute(const Stage& s) { return s.kind == StageKind::Compute; }

}  // namespace

std::string programKey(const Program& p) {
  // every name a schedule step made or a statement gave, by position: stages %k, groups #k; and
  // no knobs (tune's settings are the search's other half)
  Program q = clone(p);
  for (auto& s : q.stages) s.knobs = {};
  for (auto& f : q.fused) f.knobs = {};
  std::map<std::string, std::string> rename;
  for (size_t k = 0; k < q.stages.size(); ++k)
    if (q.stages[k].kind != StageKind::Input && q.stages[k].kind != StageKind::State) rename[q.stages[k].name] = "%" + std::to_string(k);
  for (size_t k = 0; k < q.fused.size(); ++k) rename[q.fused[k].name] = "#" + std::to_string(k);
  auto to = [&](std::string& n) {
    if (auto it = rename.find(n); it != rename.end()) n = it->second;
  };
  for (auto& s : q.stages) {
    to(s.name);
    to(s.fusedInto);
  }
  for (auto& f : q.fused) {
    to(f.name);
    for (auto& m : f.members) to(m);
  }
  for (auto& o : q.overlaps) {
    to(o.producer);
    to(o.consumer);
  }
  return print(q);
}

namespace {

// The stages that read stage i.
std::vector<int> readers(const Program& p, int i) {
  std::vector<int> out;
  for (size_t j = 0; j < p.stages.size(); ++j)
    if (std::find(p.stages[j].operands.begin(), p.stages[j].operands.end(), i) != p.stages[j].operands.end())
      out.push_back(static_cast<int>(j));
  return out;
}

// The element-wise stages, reductions and sends right after stage i, in program order, up to the
// first stage of another kind (or in a fused group): what an all_gather can move past, or an
// allreduce fuse with (reorder and fuse check the rest).
std::vector<int> elementwiseAfter(const Program& p, int i) {
  std::vector<int> out;
  for (size_t j = i + 1; j < p.stages.size(); ++j) {
    const Stage& s = p.stages[j];
    if (!(isCompute(s) || s.kind == StageKind::Reduce || s.kind == StageKind::Send) || !s.fusedInto.empty()) break;
    out.push_back(static_cast<int>(j));
  }
  return out;
}

std::string list(const Program& p, const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += (s.empty() ? "" : ", ") + p.stages[id].name;
  return s;
}

// The steps worth trying next on p (a program some steps made).
std::vector<std::string> proposals(const Program& p, const EnumerateOptions& o) {
  std::vector<std::string> out;
  // a fused group's name of its own (an unnamed fuse takes a fixed one, which a second group
  // would clash with)
  std::string fuseName = "f" + std::to_string(p.fused.size());
  while (p.findFused(fuseName) || p.find(fuseName) >= 0) fuseName += "_";
  const int n = static_cast<int>(p.stages.size());
  for (int i = 0; i < n; ++i) {
    const Stage& s = p.stages[i];
    if (!s.fusedInto.empty()) continue;
    if (s.kind == StageKind::AllReduce) {
      out.push_back("split(" + s.name + ");");
      std::vector<int> after = elementwiseAfter(p, i), run{i};
      for (int j : after) {  // the allreduce and its epilogue, one kernel
        run.push_back(j);
        out.push_back(fuseName + " = fuse(" + list(p, run) + ");");
      }
    }
    if (s.kind == StageKind::AllGather) {
      // past a prefix of the stages after it, or of those of them that depend on it (not a gather
      // that reorder made: it already follows the stages moved)
      std::vector<int> after = s.regather ? std::vector<int>{} : elementwiseAfter(p, i), moved, dependent;
      std::set<int> reach{i};
      for (int j : after) {
        moved.push_back(j);
        out.push_back("reorder(" + s.name + ", " + list(p, moved) + ");");
        const auto& ops = p.stages[j].operands;
        if (std::any_of(ops.begin(), ops.end(), [&](int o) { return reach.count(o) != 0; })) {
          reach.insert(j);
          dependent.push_back(j);
          if (dependent.size() < moved.size()) out.push_back("reorder(" + s.name + ", " + list(p, dependent) + ");");
        }
      }
      // the element-wise stages just before it and the all_gather, one group (as after a group
      // took the reduce-scatter and the stages that follow it; a gather reorder made too, which
      // takes the all_gather's name where it ends the moved stages)
      int j = i;
      while (j > 0 && p.stages[j - 1].fusedInto.empty() && isCompute(p.stages[j - 1])) --j;
      if (j < i)
        for (int k = i - 1; k >= j; --k) {
          std::vector<int> run;
          for (int m = k; m <= i; ++m) run.push_back(m);
          out.push_back(fuseName + " = fuse(" + list(p, run) + ");");
        }
    }
    if (s.kind == StageKind::ReduceScatter) {
      // the reduce-scatter, the element-wise stages and reductions after it, and the all_gather
      // that ends them: the whole run as one group, or a prefix from the reduce-scatter (and the
      // rest to the all_gather: LAMB's moments and its update, around the norms)
      std::vector<int> run{i};
      int end = -1;
      for (int j = i + 1; j < n; ++j) {
        const Stage& t = p.stages[j];
        if (!t.fusedInto.empty()) break;
        if (isCompute(t) || t.kind == StageKind::Reduce) {
          run.push_back(j);
          continue;
        }
        if (t.kind == StageKind::AllGather) end = j;
        break;
      }
      std::vector<int> whole = run;
      if (end >= 0) whole.push_back(end);
      for (size_t k = 1; k < whole.size(); ++k)
        out.push_back(fuseName + " = fuse(" + list(p, std::vector<int>(whole.begin(), whole.begin() + static_cast<long>(k) + 1)) + ");");
      // or of the run's stages those that depend on the reduce-scatter (a scalar computed beside
      // them, as pipeline's stage seed, stays out)
      std::set<int> reach{i};
      std::vector<int> dependent{i};
      for (size_t k = 1; k < run.size(); ++k) {
        const auto& ops = p.stages[run[k]].operands;
        if (!std::any_of(ops.begin(), ops.end(), [&](int o) { return reach.count(o) != 0; })) continue;
        reach.insert(run[k]);
        dependent.push_back(run[k]);
        if (dependent.size() < k + 1) out.push_back(fuseName + " = fuse(" + list(p, dependent) + ");");
      }
      for (size_t k = 1; end >= 0 && k + 1 < whole.size(); ++k)
        out.push_back(fuseName + " = fuse(" + list(p, std::vector<int>(whole.begin() + static_cast<long>(k), whole.end())) + ");");
    }
    if (s.kind == StageKind::AllToAll) {
      // an all_to_all pipeline: this exchange, the stages after it and the one that returns
      for (int j = i + 1; j < n; ++j)
        if (p.stages[j].kind == StageKind::AllToAll && p.stages[j].fusedInto.empty())
          out.push_back("overlap(" + s.name + ", " + p.stages[j].name + ");");
      // the stage that makes its operand and the exchange, one kernel (a pooled embedding bag's)
      const Stage& src = p.stages[s.operands[0]];
      if (src.fusedInto.empty() && (isCompute(src) || src.kind == StageKind::Reduce))
        out.push_back(fuseName + " = fuse(" + src.name + ", " + s.name + ");");
    }
    if (s.kind == StageKind::Matmul || s.kind == StageKind::Gemv || s.kind == StageKind::Embedding) {
      auto rs = readers(p, i);
      if (rs.size() == 1) {
        const Stage& c = p.stages[rs[0]];
        const std::string consumer = c.fusedInto.empty() ? c.name : c.fusedInto;
        for (int k : o.chunks) out.push_back("overlap(" + s.name + ", " + consumer + ", chunks = " + std::to_string(k) + ");");
      }
    }
  }
  // states kept sliced: all of them, all but one (an optimizer's parameter, whole for the next
  // forward, beside its sliced masters and moments), each alone
  std::vector<std::string> names;
  for (auto& st : p.states)
    if (st.type.layout.kind != Layout::Sliced) names.push_back(st.name);
  auto slice = [&](const std::vector<std::string>& ns) {
    std::string s;
    for (auto& nm : ns) s += (s.empty() ? "" : ", ") + nm;
    out.push_back("slice(" + s + ");");
  };
  if (!names.empty()) slice(names);
  for (size_t k = 0; names.size() > 2 && k < names.size(); ++k) {
    std::vector<std::string> rest = names;
    rest.erase(rest.begin() + static_cast<long>(k));
    slice(rest);
  }
  for (size_t k = 0; names.size() > 1 && k < names.size(); ++k) slice({names[k]});
  return out;
}

}  // namespace

Space enumerate(const Program& base, const EnumerateOptions& opts) {
  Space space;
  std::set<std::string> seen{programKey(base)};
  space.candidates.push_back({"", 0});
  struct Node {
    std::string script;
    int steps;
  };
  std::deque<Node> frontier{{"", 0}};
  while (!frontier.empty()) {
    Node node = frontier.front();
    frontier.pop_front();
    if (node.steps >= opts.depth) continue;
    Program at;
    std::string canonical;
    if (!tryApply(base, node.script, at, canonical)) continue;
    for (const std::string& step : proposals(at, opts)) {
      ++space.tried;
      Program next;
      std::string text;
      if (!tryApply(base, node.script + step + "\n", next, text)) continue;
      if (!seen.insert(programKey(next)).second) continue;  // the same program another way
      if (space.candidates.size() >= opts.limit) {
        space.truncated = true;
        return space;
      }
      space.candidates.push_back({text, node.steps + 1});
      frontier.push_back({text, node.steps + 1});
    }
  }
  return space;
}

std::vector<std::string> knobValues(const KnobSpec& spec) {
  std::vector<std::string> out(spec.words.begin(), spec.words.end());
  if (spec.hi < spec.lo) return out;
  if (spec.lo <= 0) out.push_back(std::to_string(spec.lo));
  for (long v = 1; v <= std::min(spec.hi, kLadderTop); v *= 2)
    if (v >= spec.lo) out.push_back(std::to_string(v));
  return out;
}

KnobSpace knobSpace(const Program& p) {
  KnobSpace ks;
  for (auto& [target, keys] : backend::knobsRead(p)) {
    std::vector<std::pair<std::string, std::vector<std::string>>> knobs;
    for (auto& key : keys) {
      std::vector<std::string> values = knobValues(knobSpec(*knobNamed(key)));
      ks.settings = std::min(ks.settings * static_cast<double>(values.size()), 1e18);
      knobs.emplace_back(key, std::move(values));
    }
    ks.targets.emplace_back(target, std::move(knobs));
  }
  return ks;
}

Program applyScript(const Program& base, const std::string& script) {
  Program p;
  std::string canonical;
  if (!tryApply(base, script, p, canonical)) throw InternalError("tune: a candidate's schedule no longer applies:\n" + script);
  return p;
}

}  // namespace coconet::tune
