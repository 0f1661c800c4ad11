// Lowering: typed AST -> IR.
//
// Each statement becomes the stages that compute it. Element-wise parts of an expression
// (arithmetic, math functions, casts, select, dropout) become one compute stage with an
// expression tree; every other operation is a stage of its own. The statement's top stage takes
// the statement's name; stages nested inside it get "<name>.<op>" names. A state's entry value
// is the stage "<state>.in" and `update s = ...` names its stage "s". Calls of defs are inlined:
// their statements are named "<caller's name>.<statement>".
#include "ir/Lower.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace coconet::ir {
namespace {

using namespace ast;

bool isElementwise(const ast::Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit:
    case ExprKind::FloatLit:
    case ExprKind::BoolLit:
    case ExprKind::Unary:
    case ExprKind::Binary: return true;
    case ExprKind::Call: {
      auto& c = static_cast<const Call&>(e);
      if (c.def) return false;
      switch (c.op) {
        case BuiltinOp::Cast:
        case BuiltinOp::Abs:
        case BuiltinOp::Relu:
        case BuiltinOp::Pow:
        case BuiltinOp::Min:
        case BuiltinOp::Max:
        case BuiltinOp::Select:
        case BuiltinOp::Dropout: return true;
        default: return isUnaryMath(c.op);
      }
    }
    default: return false;
  }
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

class Lowerer {
public:
  explicit Lowerer(const sema::CheckedProgram& cp) : cp_(cp) {}

  Program run() {
    const ProgramDecl& d = *cp_.decl;
    p_.name = d.name.name;
    for (auto& prm : d.params) {
      Param q;
      q.name = prm.name.name;
      q.isSize = prm.isSize;
      q.dtype = prm.isSize ? DType::I64 : prm.dtype;
      if (prm.bound) q.value = prm.value, q.ivalue = prm.ivalue;
      p_.params.push_back(q);
    }
    for (auto& g : cp_.groups) {
      auto c = std::make_unique<GroupInfo>(g);
      c->parent = g.parent ? groupMap_.at(g.parent) : nullptr;
      groupMap_[&g] = c.get();
      p_.groups.push_back(std::move(c));
    }
    p_.requirements = cp_.requirements;
    for (auto& s : d.body.stmts) stmt(*s, "");
    for (const Symbol* o : cp_.outputs) {
      p_.outputs.push_back(valueOf(o));
      p_.outputNames.push_back(o->name);
    }
    for (auto& st : p_.states) {
      auto it = cp_.updates.find(stateSym_.at(st.name));
      st.exit = it == cp_.updates.end() ? st.entry : valueOf(it->second);
    }
    verifyStructure(p_);
    return std::move(p_);
  }

private:
  struct Binding {
    int stage = -1;
    const ast::Expr* inlined = nullptr;  // uniform scalars and groups passed to defs
  };
  const sema::CheckedProgram& cp_;
  Program p_;
  std::unordered_map<const GroupInfo*, const GroupInfo*> groupMap_{{nullptr, nullptr}};
  std::unordered_map<const Symbol*, Binding> bind_;
  std::unordered_set<std::string> names_;  // every stage's name
  std::unordered_map<std::string, const Symbol*> stateSym_;

  TensorType typeOf(const Type& t) const {
    TensorType r;
    r.dtype = concrete(t.dtype);
    r.shape = t.shape;
    r.layout = t.group ? t.layout : Layout::replicated();
    r.group = groupMap_.at(t.group);
    return r;
  }

  int valueOf(const Symbol* s) {
    auto it = bind_.find(s);
    if (it == bind_.end() || it->second.stage < 0) internalError("lowering: no stage for '" + s->name + "'");
    return it->second.stage;
  }

  int addStage(Stage s) {
    s.name = fresh(s.name);
    names_.insert(s.name);
    p_.stages.push_back(std::move(s));
    return static_cast<int>(p_.stages.size()) - 1;
  }

  // Program::freshName over the names lowered so far, in constant time (a program may have
  // 200,000 statements; lowering makes no fused groups).
  std::string fresh(const std::string& base) const {
    if (!names_.count(base)) return base;
    for (int i = 1;; ++i) {
      std::string n = base + "." + std::to_string(i);
      if (!names_.count(n)) return n;
    }
  }

  static std::string join(const std::string& prefix, const std::string& n) { return prefix.empty() ? n : prefix + "." + n; }

  // ---- Statements ----
  void stmt(const ast::Stmt& s, const std::string& prefix) {
    switch (s.kind) {
      case StmtKind::Decl: {
        auto& d = static_cast<const DeclStmt&>(s);
        Stage st;
        st.kind = d.role == Role::State ? StageKind::State : StageKind::Input;
        st.name = d.role == Role::State ? d.name.name + ".in" : d.name.name;
        st.type = typeOf(d.symbol->type);
        st.loc = d.name.loc;
        if (d.role == Role::State) st.state = d.name.name;
        int id = addStage(st);
        bind_[d.symbol].stage = id;
        if (d.role == Role::State) {
          p_.states.push_back({d.name.name, id, id, p_.stages[id].type});
          stateSym_[d.name.name] = d.symbol;
        }
        return;
      }
      case StmtKind::Group:
      case StmtKind::Require:
      case StmtKind::Return: return;
      case StmtKind::Let: {
        auto& l = static_cast<const LetStmt&>(s);
        std::vector<std::string> names;
        for (auto& n : l.names) names.push_back(join(prefix, n.name));
        auto* call = l.value->as<Call>();
        if (call && call->def) {
          std::vector<int> results = inlineCall(*call, names);
          for (size_t i = 0; i < l.symbols.size(); ++i) bindName(l.symbols[i], names[i], results[i]);
          return;
        }
        bindName(l.symbols[0], names[0], value(*l.value, names[0]));
        return;
      }
      case StmtKind::Update: {
        auto& u = static_cast<const UpdateStmt&>(s);
        std::string name = join(prefix, u.name.name);
        int v = value(*u.value, name);
        // A value that broadcasts (a scalar, a row) becomes the state's shape first.
        TensorType st = typeOf(u.state->type);
        if (p_.stages[v].type.shape != st.shape || !p_.stages[v].type.group) {
          Stage b;
          b.kind = StageKind::Compute;
          b.name = p_.stages[v].name == name ? fresh(name + ".bcast") : name;
          b.type = st;
          if (p_.stages[v].type.group && p_.stages[v].type.layout.kind == Layout::Local) b.type.layout = Layout::local();
          b.operands = {v};
          b.expr.add(ENode::make(EOp::Operand, p_.stages[v].type.dtype));
          b.loc = u.value->loc;
          v = addStage(std::move(b));
        }
        bindName(u.symbol, name, v);
        return;
      }
    }
  }

  // A name the program gives a value; when the value's stage has another name, the name is
  // an alias of it.
  void bindName(const Symbol* sym, const std::string& name, int stage) {
    bind_[sym].stage = stage;
    if (p_.stages[stage].name != name && !names_.count(name)) p_.aliases[name] = p_.stages[stage].name;
  }

  std::vector<int> inlineCall(const Call& c, const std::vector<std::string>& names) {
    const DefDecl& def = *c.def;
    std::string prefix = names[0];
    // Parameters: tensors that live on ranks are values; uniform scalars and groups are
    // substituted where they are used.
    for (size_t i = 0; i < def.params.size(); ++i) {
      const ast::Expr& arg = *c.args[i].value;
      const Symbol* psym = c.params[i];
      if (arg.type.isTensor() && arg.type.group)
        bind_[psym].stage = value(arg, join(prefix, def.params[i].name));
      else
        bind_[psym].inlined = &arg;
    }
    for (auto& s : c.body) stmt(*s, prefix);
    std::vector<int> out;
    auto* ret = c.body.empty() ? nullptr : c.body.back()->as<ReturnStmt>();
    for (size_t i = 0; i < c.results.size(); ++i) {
      std::string n = i < names.size() ? names[i] : join(prefix, "result" + std::to_string(i));
      out.push_back(value(*ret->values[i], n));
    }
    return out;
  }

  // ---- Expressions ----
  // The stage computing `e`, named `name` unless `e` is just a name for an existing value.
  int value(const ast::Expr& e, const std::string& name) {
    if (auto* n = e.as<NameRef>(); n && n->member.empty() && n->target) {
      auto it = bind_.find(n->target);
      if (it != bind_.end() && it->second.stage >= 0) return it->second.stage;
      if (it != bind_.end() && it->second.inlined) return value(*it->second.inlined, name);
    }
    if (isElementwise(e) || e.kind == ExprKind::NameRef) return compute(e, name);
    auto& c = static_cast<const Call&>(e);
    if (c.def) return inlineCall(c, {name})[0];
    return operation(c, name);
  }

  int compute(const ast::Expr& e, const std::string& name) {
    Stage st;
    st.kind = StageKind::Compute;
    st.name = name;
    st.type = typeOf(e.type);
    st.loc = e.loc;
    std::unordered_map<int, int> operandIndex;
    elementwise(e, st, operandIndex, name);
    return addStage(std::move(st));
  }

  int operand(Stage& st, std::unordered_map<int, int>& idx, int stage) {
    auto [it, fresh] = idx.emplace(stage, static_cast<int>(st.operands.size()));
    if (fresh) st.operands.push_back(stage);
    return it->second;
  }

  int elementwise(const ast::Expr& e, Stage& st, std::unordered_map<int, int>& idx, const std::string& name) {
    Expr& x = st.expr;
    DType dt = concrete(e.type.dtype);
    auto leaf = [&](EOp op) { return ENode::make(op, dt); };
    switch (e.kind) {
      case ExprKind::IntLit: {
        ENode n = leaf(EOp::Const);
        n.dtype = e.type.dtype;
        n.ivalue = static_cast<const IntLit&>(e).value;
        n.value = static_cast<double>(n.ivalue);
        return x.add(n);
      }
      case ExprKind::FloatLit: {
        ENode n = leaf(EOp::Const);
        n.dtype = e.type.dtype;
        n.value = static_cast<const FloatLit&>(e).value;
        return x.add(n);
      }
      case ExprKind::BoolLit: {
        ENode n = leaf(EOp::Const);
        n.ivalue = static_cast<const BoolLit&>(e).value ? 1 : 0;
        n.value = static_cast<double>(n.ivalue);
        return x.add(n);
      }
      case ExprKind::NameRef: {
        auto& r = static_cast<const NameRef&>(e);
        const Symbol* s = r.target;
        if (!r.member.empty()) {
          const GroupInfo* g = groupMap_.at(s->type.group);
          ENode n = leaf(r.member == "size" ? EOp::GroupSize : r.member == "rank" ? EOp::Rank : EOp::GroupIndex);
          n.group = g;
          return x.add(n);
        }
        if (auto it = bind_.find(s); it != bind_.end()) {
          if (it->second.stage >= 0) {
            ENode n = leaf(EOp::Operand);
            n.dtype = p_.stages[it->second.stage].type.dtype;
            n.index = operand(st, idx, it->second.stage);
            return x.add(n);
          }
          if (it->second.inlined) return elementwise(*it->second.inlined, st, idx, name);
        }
        if (s->kind == SymbolKind::SizeParam || s->kind == SymbolKind::ScalarParam) {
          ENode n = leaf(EOp::Param);
          n.name = s->name;
          return x.add(n);
        }
        if (s->kind == SymbolKind::Builtin) {
          ENode n = leaf(s->name == "rank" ? EOp::Rank : EOp::GroupSize);
          n.group = p_.world();
          return x.add(n);
        }
        internalError("lowering: name '" + s->name + "' has no value");
      }
      case ExprKind::Unary: {
        auto& u = static_cast<const Unary&>(e);
        int a = elementwise(*u.operand, st, idx, name);
        ENode n = leaf(u.op == UnaryOp::Neg ? EOp::Neg : EOp::Not);
        n.args = {a};
        return x.add(n);
      }
      case ExprKind::Binary: {
        auto& b = static_cast<const Binary&>(e);
        int l = elementwise(*b.lhs, st, idx, name);
        int r = elementwise(*b.rhs, st, idx, name);
        static const EOp ops[] = {EOp::Add, EOp::Sub, EOp::Mul, EOp::Div, EOp::Mod, EOp::Lt, EOp::Le,
                                  EOp::Gt,  EOp::Ge,  EOp::Eq,  EOp::Ne,  EOp::And, EOp::Or};
        ENode n = leaf(ops[static_cast<int>(b.op)]);
        n.args = {l, r};
        return x.add(n);
      }
      case ExprKind::Call: {
        auto& c = static_cast<const Call&>(e);
        // Dropout draws one mask element per element of its own value: when that value is
        // broadcast by the statement, it is computed as a stage of its own shape.
        bool ownShape = c.op == BuiltinOp::Dropout && !c.def && c.type.shape != st.type.shape;
        if (!isElementwise(c) || ownShape) {
          ENode n = leaf(EOp::Operand);
          int v = ownShape ? compute(c, fresh(name + ".dropout")) : value(c, fresh(name + "." + (c.def ? c.callee : builtinOpName(c.op))));
          n.dtype = p_.stages[v].type.dtype;
          n.index = operand(st, idx, v);
          return x.add(n);
        }
        std::vector<int> args;
        for (auto& a : c.args)
          if (a.name.empty()) args.push_back(elementwise(*a.value, st, idx, name));
        EOp op;
        switch (c.op) {
          case BuiltinOp::Cast: op = EOp::Cast; break;
#define COCONET_UNARY_MATH(k, ...) \
  case BuiltinOp::k:               \
    op = EOp::k;                   \
    break;
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
          case BuiltinOp::Abs: op = EOp::Abs; break;
          case BuiltinOp::Relu: op = EOp::Relu; break;
          case BuiltinOp::Pow: op = EOp::Pow; break;
          case BuiltinOp::Min: op = EOp::Min; break;
          case BuiltinOp::Max: op = EOp::Max; break;
          case BuiltinOp::Select: op = EOp::Select; break;
          case BuiltinOp::Dropout: {
            op = EOp::Dropout;
            for (auto& a : c.args)
              if (a.name == "seed") args.push_back(elementwise(*a.value, st, idx, name));
            break;
          }
          default: internalError("lowering: not element-wise");
        }
        ENode n = leaf(op);
        n.args = args;
        if (op == EOp::Dropout) n.salt = fnv1a(name + "#" + std::to_string(x.nodes.size()));
        return x.add(n);
      }
      case ExprKind::OpToken: break;
    }
    internalError("lowering: unexpected expression");
  }

  ScalarRef scalar(const ast::Expr& e) {
    if (auto* il = e.as<IntLit>()) return {static_cast<double>(il->value), ""};
    if (auto* fl = e.as<FloatLit>()) return {fl->value, ""};
    if (auto* n = e.as<NameRef>()) {
      if (auto it = bind_.find(n->target); it != bind_.end() && it->second.inlined) return scalar(*it->second.inlined);
      if (const ast::Param* prm = n->target ? n->target->param : nullptr) {
        // A bound size is a constant of the build; a scalar parameter is read when the program
        // runs, as element-wise code reads it (a bound value is its default).
        if (prm->bound && prm->isSize) return {static_cast<double>(prm->ivalue), ""};
        return {0, n->name};
      }
    }
    if (auto* u = e.as<Unary>(); u && u->op == UnaryOp::Neg) {
      ScalarRef r = scalar(*u->operand);
      // sema admits a negation only where the value is known
      if (!r.param.empty()) internalError("lowering: negated run-time parameter '" + r.param + "'");
      r.value = -r.value;
      return r;
    }
    internalError("lowering: expected a constant or a parameter");
  }

  // Stage x with its dimensions permuted (result dimension k is x's perm[k]; a sliced one moves
  // with its data).
  Stage permuteOf(int x, const std::vector<int>& perm, const std::string& name, SourceLoc loc) const {
    Stage t;
    t.kind = StageKind::Permute;
    t.name = name;
    t.loc = loc;
    const TensorType& xt = p_.stages[x].type;
    t.type = xt;
    for (size_t k = 0; k < perm.size(); ++k) {
      t.type.shape[k] = xt.shape[perm[k]];
      if (xt.layout.kind == Layout::Sliced && xt.layout.dim == perm[k]) t.type.layout = Layout::sliced(static_cast<int>(k));
    }
    t.perm = perm;
    t.operands = {x};
    return t;
  }
  // Stage x with dimensions a and b swapped.
  Stage transposeOf(int x, int a, int b, const std::string& name, SourceLoc loc) const {
    std::vector<int> perm(p_.stages[x].type.rank());
    for (int k = 0; k < static_cast<int>(perm.size()); ++k) perm[k] = k == a ? b : k == b ? a : k;
    return permuteOf(x, perm, name, loc);
  }

  int operation(const Call& c, const std::string& name) {
    Stage st;
    st.name = name;
    st.type = typeOf(c.type);
    st.loc = c.loc;
    std::vector<const ast::Expr*> pos;
    const ast::Expr* root = nullptr;
    const ast::Expr* eps = nullptr;
    for (auto& a : c.args) {
      if (a.name == "root")
        root = a.value.get();
      else if (a.name == "eps")
        eps = a.value.get();
      else if (a.name.empty() && a.value->type.kind != ValueKind::Op)
        pos.push_back(a.value.get());
    }
    auto in = [&](size_t i) { return value(*pos[i], fresh(name + ".arg" + std::to_string(i))); };
    switch (c.op) {
      case BuiltinOp::Sum:
      case BuiltinOp::Mean:
      case BuiltinOp::Norm:
      case BuiltinOp::ReduceMax:
      case BuiltinOp::ReduceMin:
        st.kind = StageKind::Reduce;
        st.reduce = c.op == BuiltinOp::Sum         ? ReduceKind::Sum
                    : c.op == BuiltinOp::Mean      ? ReduceKind::Mean
                    : c.op == BuiltinOp::Norm      ? ReduceKind::Norm
                    : c.op == BuiltinOp::ReduceMax ? ReduceKind::Max
                                                   : ReduceKind::Min;
        st.dim = c.dim;
        st.keepdim = c.keepdim;
        st.operands = {in(0)};
        break;
      case BuiltinOp::Softmax:
      case BuiltinOp::Layernorm:
      case BuiltinOp::Rmsnorm: {
        st.kind = c.op == BuiltinOp::Softmax     ? StageKind::Softmax
                  : c.op == BuiltinOp::Layernorm ? StageKind::Layernorm
                                                 : StageKind::Rmsnorm;
        for (size_t i = 0; i < pos.size(); ++i) st.operands.push_back(in(i));
        if (c.op == BuiltinOp::Layernorm && eps) st.eps = scalar(*eps);
        if (c.op == BuiltinOp::Rmsnorm) st.eps = eps ? scalar(*eps) : ScalarRef{1e-6, ""};
        // `dim = d` other than the last: the stage normalizes the last dimension of x with d
        // moved there, and a transpose moves it back.
        const int last = st.type.rank() - 1;
        if (c.dim < 0 || c.dim == last) break;
        st.operands[0] = addStage(transposeOf(st.operands[0], c.dim, last, name + ".dim_in", c.loc));
        st.type = p_.stages[st.operands[0]].type;
        st.type.dtype = typeOf(c.type).dtype;
        st.name = name + ".rows";
        const int rows = addStage(std::move(st));
        return addStage(transposeOf(rows, c.dim, last, name, c.loc));
      }
      case BuiltinOp::Matmul:
        st.kind = StageKind::Matmul;
        st.operands = {in(0), in(1)};
        break;
      case BuiltinOp::Gemv:
        st.kind = StageKind::Gemv;
        st.operands = {in(0), in(1)};
        break;
      case BuiltinOp::Unsqueeze:
      case BuiltinOp::Squeeze:
      case BuiltinOp::Reshape:
      case BuiltinOp::View:
        st.kind = StageKind::Reshape;
        st.operands = {in(0)};
        break;
      case BuiltinOp::Transpose:
      case BuiltinOp::Permute:
        st.kind = StageKind::Permute;
        st.perm = c.perm;
        st.operands = {in(0)};
        break;
      case BuiltinOp::Concat:
        st.kind = StageKind::Concat;
        st.dim = c.dim;
        for (size_t i = 0; i < pos.size(); ++i) st.operands.push_back(in(i));
        break;
      case BuiltinOp::Narrow:
        st.kind = StageKind::Narrow;
        st.dim = c.dim;
        st.start = c.start;
        st.operands = {in(0)};
        break;
      case BuiltinOp::Embedding:
        st.kind = StageKind::Embedding;
        st.operands = {in(0), in(1)};
        break;
      case BuiltinOp::AllReduce:
        st.kind = StageKind::AllReduce;
        st.op = c.reduceOp;
        st.operands = {in(0)};
        break;
      case BuiltinOp::ReduceScatter:
        st.kind = StageKind::ReduceScatter;
        st.op = c.reduceOp;
        st.dim = c.dim;
        st.operands = {in(0)};
        break;
      case BuiltinOp::AllGather:
        st.kind = StageKind::AllGather;
        st.dim = pos[0]->type.layout.dim;
        st.operands = {in(0)};
        break;
      case BuiltinOp::Broadcast:
        st.kind = StageKind::Broadcast;
        st.root = scalar(pos.size() > 1 ? *pos[1] : *root);
        st.operands = {in(0)};
        break;
      case BuiltinOp::Reduce:
        st.kind = StageKind::Reduce1;
        st.op = c.reduceOp;
        st.root = scalar(pos.size() > 1 ? *pos[1] : *root);
        st.operands = {in(0)};
        break;
      case BuiltinOp::AllToAll: {
        st.kind = StageKind::AllToAll;
        st.operands = {in(0)};
        // `dim = d` other than 0: the all_to_all of x with d moved to the front, moved back.
        if (c.dim <= 0) break;
        st.operands[0] = addStage(transposeOf(st.operands[0], 0, c.dim, name + ".dim_in", c.loc));
        st.type = p_.stages[st.operands[0]].type;
        st.type.layout = Layout::local();
        st.name = name + ".front";
        const int front = addStage(std::move(st));
        return addStage(transposeOf(front, 0, c.dim, name, c.loc));
      }
      case BuiltinOp::Send: {
        st.kind = StageKind::Send;
        static const Peer peers[] = {Peer::NextRank, Peer::PrevRank, Peer::NextGroup, Peer::PrevGroup};
        st.peer = peers[static_cast<int>(pos[1]->type.peer)];
        st.operands = {in(0)};
        break;
      }
      default: internalError(std::string("lowering: unexpected operation ") + builtinOpName(c.op));
    }
    return addStage(std::move(st));
  }
};

}  // namespace

Program lower(const sema::CheckedProgram& p) { return Lowerer(p).run(); }

}  // namespace coconet::ir
