#include "ir/IR.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

namespace coconet::ir {

Block sliceBlock(int64_t n, int64_t parts, int64_t pos) {
  const int64_t b = parts > 0 ? (n + parts - 1) / parts : n;
  const int64_t offset = std::min(pos * b, n);
  return {offset, std::min(b, n - offset)};
}

std::string TensorType::str() const {
  std::string s = ast::dtypeName(dtype);
  if (!shape.empty()) s += ast::shapeStr(shape);
  s += " ";
  s += group ? layout.str() : "uniform";
  if (group && group->depth > 0) s += " @" + group->name;
  return s;
}

const char* eopName(EOp op) {
  switch (op) {
#define X(k) \
  case EOp::k: return #k;
    COCONET_EOPS(X)
#undef X
#define COCONET_UNARY_MATH(k, ...) \
  case EOp::k:                     \
    return #k;
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
  }
  return "?";
}

const char* stageKindName(StageKind k) {
  switch (k) {
#define X(k, s) \
  case StageKind::k: return s;
    COCONET_STAGE_KINDS(X)
#undef X
  }
  return "?";
}

bool isNormalizationKind(StageKind k) { return k == StageKind::Softmax || k == StageKind::Layernorm || k == StageKind::Rmsnorm; }

bool isCollectiveKind(StageKind k) {
  switch (k) {
    case StageKind::AllReduce:
    case StageKind::ReduceScatter:
    case StageKind::AllGather:
    case StageKind::Broadcast:
    case StageKind::Reduce1:
    case StageKind::AllToAll:
    case StageKind::Send: return true;
    default: return false;
  }
}

const char* reduceKindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Mean: return "mean";
    case ReduceKind::Norm: return "norm";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

static std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

std::string ScalarRef::str() const { return param.empty() ? num(value) : param; }

// ---- Expressions -------------------------------------------------------------------------
static const char* infix(EOp op) {
  switch (op) {
    case EOp::Add: return "+";
    case EOp::Sub: return "-";
    case EOp::Mul: return "*";
    case EOp::Div: return "/";
    case EOp::Mod: return "%";
    case EOp::Lt: return "<";
    case EOp::Le: return "<=";
    case EOp::Gt: return ">";
    case EOp::Ge: return ">=";
    case EOp::Eq: return "==";
    case EOp::Ne: return "!=";
    case EOp::And: return "&&";
    case EOp::Or: return "||";
    default: return nullptr;
  }
}

static std::string lower(const char* s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(c));
  return r;
}

std::string Expr::str(const std::vector<std::string>& operandNames) const {
  // Written out from the root with an explicit stack: an expression may be 100,000 nodes deep
  // (a long sum), so neither recursion nor a text per node (quadratic) will do.
  struct Piece {
    int node = -1;      // a node to write, or -1: `text` as it is
    bool wrap = false;  // parenthesize the node if it is an infix operation
    std::string text;
  };
  std::string out;
  if (nodes.empty()) return out;
  std::vector<Piece> todo{{static_cast<int>(nodes.size()) - 1, false, {}}};
  std::vector<Piece> parts;
  while (!todo.empty()) {
    Piece piece = std::move(todo.back());
    todo.pop_back();
    if (piece.node < 0) {
      out += piece.text;
      continue;
    }
    const ENode& n = nodes[piece.node];
    const char* op = infix(n.op);
    parts.clear();
    auto text = [&](std::string t) { parts.push_back({-1, false, std::move(t)}); };
    auto arg = [&](size_t k, bool wrap) { parts.push_back({n.args[k], wrap, {}}); };
    switch (n.op) {
      case EOp::Operand:
        text(n.index < static_cast<int>(operandNames.size()) ? operandNames[n.index] : "%" + std::to_string(n.index));
        break;
      case EOp::Const: text(n.integerConst() ? std::to_string(n.ivalue) : num(n.value)); break;
      case EOp::Param: text(n.name); break;
      case EOp::Rank: text(n.group && n.group->depth ? n.group->name + ".rank" : "rank"); break;
      case EOp::GroupIndex: text(n.group->name + ".index"); break;
      case EOp::GroupSize: text(n.group->name + ".size"); break;
      case EOp::Neg: text("-"), arg(0, true); break;
      case EOp::Not: text("!"), arg(0, true); break;
      case EOp::Cast: text(std::string(ast::dtypeName(n.dtype)) + "("), arg(0, false), text(")"); break;
      default:
        if (op) {
          arg(0, true), text(std::string(" ") + op + " "), arg(1, true);
        } else {
          text(lower(eopName(n.op)) + "(");
          for (size_t k = 0; k < n.args.size(); ++k) {
            if (k) text(", ");
            arg(k, false);
          }
          text(")");
        }
    }
    const bool paren = piece.wrap && op;
    if (paren) todo.push_back({-1, false, ")"});
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(std::move(*it));
    if (paren) todo.push_back({-1, false, "("});
  }
  return out;
}

std::string describe(const Stage& s) {
  switch (s.kind) {
    case StageKind::Input: return "an input";
    case StageKind::State: return "a state's entry value";
    case StageKind::Compute: return "an element-wise compute";
    case StageKind::Reduce: return std::string("a reduction (") + reduceKindName(s.reduce) + ")";
    case StageKind::AllReduce: return "an allreduce";
    case StageKind::AllGather: return "an all_gather";
    case StageKind::AllToAll: return "an all_to_all";
    case StageKind::Embedding: return "an embedding";
    case StageKind::EmbeddingGrad: return "an embedding's gradient";
    case StageKind::Reduce1: return "a reduce";
    default: return std::string("a ") + stageKindName(s.kind);
  }
}

// ---- Program -------------------------------------------------------------------------------
int Program::find(const std::string& n) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].name == n) return static_cast<int>(i);
  return -1;
}

int Program::resolve(const std::string& n) const {
  std::string cur = n;
  for (int hops = 0; hops < 64; ++hops) {
    if (int i = find(cur); i >= 0) return i;
    auto it = aliases.find(cur);
    if (it == aliases.end()) return -1;
    cur = it->second;
  }
  return -1;
}

const FusedGroup* Program::findFused(const std::string& n) const {
  for (auto& f : fused)
    if (f.name == n) return &f;
  return nullptr;
}

ExchangeChain exchangeChain(const Program& p, int x, int back) {
  using Why = ExchangeChain::Why;
  ExchangeChain ch;
  std::set<int> in{x};
  for (int q = x + 1; q < back; ++q) {
    const Stage& s = p.stages[q];
    bool reads = false;
    for (int o : s.operands) reads = reads || in.count(o);
    if (!reads) continue;
    auto fail = [&](Why why, int operand = -1) {
      ch.bad = q, ch.why = why, ch.operand = operand;
      return ch;
    };
    if (!s.fusedInto.empty()) return fail(Why::Fused);
    if (s.type.layout.kind == Layout::Sliced) return fail(Why::Sliced);
    if (s.kind == StageKind::Matmul) {
      const TensorType& a = p.stages[s.operands[0]].type;
      const TensorType& w = p.stages[s.operands[1]].type;
      if (!in.count(s.operands[0]) || in.count(s.operands[1])) return fail(Why::ExchangedWeight, s.operands[1]);
      // Dimension 0 of the left operand is its rows (rank 2) or its first batch dimension,
      // which the weight must not have.
      if (a.rank() > 2 ? w.rank() >= a.rank() : w.rank() != 2) return fail(Why::WeightDim0, s.operands[1]);
    } else if (s.kind == StageKind::Compute) {
      for (int o : s.operands)
        if (in.count(o) && p.stages[o].type.shape != s.type.shape) return fail(Why::Broadcast, o);
    } else {
      return fail(Why::Kind);
    }
    in.insert(q);
    ch.stages.push_back(q);
  }
  return ch;
}

std::vector<std::vector<int>> Program::users() const {
  std::vector<std::vector<int>> u(stages.size());
  for (size_t i = 0; i < stages.size(); ++i)
    for (int o : stages[i].operands) u[o].push_back(static_cast<int>(i));
  return u;
}

std::string Program::freshName(const std::string& base) const {
  if (find(base) < 0 && !findFused(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "." + std::to_string(i);
    if (find(n) < 0 && !findFused(n)) return n;
  }
}

Program clone(const Program& p) {
  Program r;
  r.name = p.name;
  r.params = p.params;
  std::unordered_map<const GroupInfo*, const GroupInfo*> map{{nullptr, nullptr}};
  for (auto& g : p.groups) {
    auto c = std::make_unique<GroupInfo>(*g);
    c->parent = map.at(g->parent);
    map[g.get()] = c.get();
    r.groups.push_back(std::move(c));
  }
  r.stages = p.stages;
  for (auto& s : r.stages) {
    s.type.group = map.at(s.type.group);
    for (auto& n : s.expr.nodes) n.group = map.at(n.group);
  }
  r.outputs = p.outputs;
  r.outputNames = p.outputNames;
  r.savedOutputs = p.savedOutputs;
  r.savedInputs = p.savedInputs;
  r.states = p.states;
  for (auto& st : r.states) st.type.group = map.at(st.type.group);
  r.aliases = p.aliases;
  r.fused = p.fused;
  r.overlaps = p.overlaps;
  r.requirements = p.requirements;
  return r;
}

static std::string locStr(SourceLoc l) {
  if (!l.valid()) return "";
  return "  <" + std::to_string(l.line) + ":" + std::to_string(l.col) + ">";
}

// " {algorithm = ring, blocks = 8}": the knobs, and a stage's re-association note, by name.
static std::string knobsStr(const Knobs& k, const std::string& reassociates = "") {
  std::map<std::string, std::string> items;
  for (auto& [knob, setting] : k.all()) items[knobName(knob)] = setting.value.str();
  if (!reassociates.empty()) items["reassociates"] = reassociates;
  if (items.empty()) return "";
  std::string s;
  for (auto& [a, b] : items) s += (s.empty() ? " {" : ", ") + a + " = " + b;
  return s + "}";
}

std::string print(const Program& p) {
  std::ostringstream os;
  os << "program " << p.name << "(";
  for (size_t i = 0; i < p.params.size(); ++i) {
    auto& prm = p.params[i];
    os << (i ? ", " : "") << prm.name << ": " << (prm.isSize ? "size" : ast::dtypeName(prm.dtype));
    if (prm.value) os << " = " << (prm.isSize || ast::isInteger(prm.dtype) ? std::to_string(prm.ivalue) : num(*prm.value));
  }
  os << ")\n";
  for (auto& g : p.groups)
    if (g->depth > 0) os << "  group " << g->name << " = split(" << g->parent->name << ", " << g->count.str() << ")\n";
  for (auto& s : p.stages) {
    std::vector<std::string> names;
    for (int o : s.operands) names.push_back(p.stages[o].name);
    os << "  " << s.name << " = ";
    switch (s.kind) {
      case StageKind::Input: os << "in"; break;
      case StageKind::State: os << "state"; break;
      case StageKind::Compute: os << "compute { " << s.expr.str(names) << " }"; break;
      default: {
        os << stageKindName(s.kind);
        if (s.kind == StageKind::Reduce) os << "." << reduceKindName(s.reduce);
        std::vector<std::string> args;
        if (s.kind == StageKind::AllReduce || s.kind == StageKind::ReduceScatter || s.kind == StageKind::Reduce1)
          args.push_back(ast::reduceOpName(s.op));
        for (auto& n : names) args.push_back(n);
        if ((s.kind == StageKind::Reduce && s.dim >= 0) || (s.kind == StageKind::ReduceScatter && s.dim > 0))
          args.push_back("dim = " + std::to_string(s.dim));
        if (s.kind == StageKind::Reduce && s.keepdim) args.push_back("keepdim = true");
        if (s.kind == StageKind::Permute) {
          std::string d;
          for (size_t k = 0; k < s.perm.size(); ++k) d += (k ? ", " : "") + std::to_string(s.perm[k]);
          args.push_back("dims = [" + d + "]");
        }
        if (s.kind == StageKind::Concat) args.push_back("dim = " + std::to_string(s.dim));
        if (s.kind == StageKind::Narrow) args.push_back("dim = " + std::to_string(s.dim) + ", start = " + s.start.str());
        if (s.kind == StageKind::Broadcast || s.kind == StageKind::Reduce1) args.push_back("root = " + s.root.str());
        if (s.kind == StageKind::Layernorm || s.kind == StageKind::Rmsnorm) args.push_back("eps = " + s.eps.str());
        if (s.kind == StageKind::Send) {
          const char* peers[] = {"next", "prev", "next group", "prev group"};
          args.push_back(peers[static_cast<int>(s.peer)]);
        }
        os << "(";
        for (size_t i = 0; i < args.size(); ++i) os << (i ? ", " : "") << args[i];
        os << ")";
      }
    }
    os << " : " << s.type.str();
    if (!s.fusedInto.empty()) os << " in " << s.fusedInto;
    os << knobsStr(s.knobs, s.reassociates) << locStr(s.loc) << "\n";
  }
  for (auto& f : p.fused) {
    os << "  fused " << f.name << " = [";
    for (size_t i = 0; i < f.members.size(); ++i) os << (i ? ", " : "") << f.members[i];
    os << "]" << knobsStr(f.knobs) << "\n";
  }
  for (auto& o : p.overlaps)
    os << "  overlap " << o.producer << " with " << o.consumer
       << " {chunks = " << (o.chunks ? std::to_string(o.chunks) : std::string("per rank")) << ", dim = " << o.dim << "}\n";
  os << "  return";
  for (size_t i = 0; i < p.outputs.size(); ++i)
    os << (i ? ", " : " ") << p.outputNames[i]
       << (p.outputNames[i] != p.stages[p.outputs[i]].name ? " = " + p.stages[p.outputs[i]].name : "")
       << (i + p.savedOutputs >= p.outputs.size() ? " (saved)" : "");
  os << "\n";
  if (!p.savedInputs.empty()) {
    os << "  saved";
    for (size_t i = 0; i < p.savedInputs.size(); ++i) os << (i ? ", " : " ") << p.savedInputs[i];
    os << "\n";
  }
  for (auto& st : p.states)
    if (st.exit != st.entry) os << "  update " << st.name << " = " << p.stages[st.exit].name << " : " << st.type.str() << "\n";
  for (auto& r : p.requirements) os << "  require " << r.described() << "\n";
  return os.str();
}

void verifyStructure(const Program& p) {
  std::set<std::string> names;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& s = p.stages[i];
    if (!names.insert(s.name).second) internalError("IR: duplicate stage name '" + s.name + "'");
    for (int o : s.operands)
      if (o < 0 || o >= static_cast<int>(i)) internalError("IR: stage '" + s.name + "' reads a stage that does not precede it");
    if (s.kind == StageKind::Compute) {
      if (s.expr.nodes.empty()) internalError("IR: compute stage '" + s.name + "' has no expression");
      for (size_t k = 0; k < s.expr.nodes.size(); ++k) {
        auto& n = s.expr.nodes[k];
        for (int a : n.args)
          if (a < 0 || a >= static_cast<int>(k)) internalError("IR: malformed expression in '" + s.name + "'");
        if (n.op == EOp::Operand && (n.index < 0 || n.index >= static_cast<int>(s.operands.size())))
          internalError("IR: compute stage '" + s.name + "' reads a missing operand");
      }
      // A compute over a sliced operand is sliced the same way (after broadcasting).
      for (int o : s.operands) {
        const TensorType& t = p.stages[o].type;
        if (!t.group || t.layout.kind != Layout::Sliced) continue;
        int want = t.layout.dim + (s.type.rank() - t.rank());
        if (s.type.layout.kind != Layout::Sliced || s.type.layout.dim != want)
          internalError("IR: compute stage '" + s.name + "' reads '" + p.stages[o].name + "' (" + t.layout.str() + ") but is " +
                        s.type.layout.str());
      }
    }
  }
  for (int o : p.outputs)
    if (o < 0 || o >= static_cast<int>(p.stages.size())) internalError("IR: bad output");
  for (auto& f : p.fused)
    for (auto& m : f.members)
      if (p.find(m) < 0) internalError("IR: fused group '" + f.name + "' names a missing stage '" + m + "'");
}

}  // namespace coconet::ir
