// Element-wise kernels: index maps, expression nodes as C++, operand access, hoisted values, and
// runs of a fused group's members as one kernel.
#include "backend/CudaEmitter.h"
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include "backend/Emitter.h"
#include "support/Files.h"

namespace coconet::backend::detail {

namespace {

// A math function's CUDA expression (ast/UnaryMath.def) with its operand for each `%`.
std::string mathCall(const char* pattern, const std::string& x) {
  std::string r;
  for (const char* c = pattern; *c; ++c) r += *c == '%' ? x : std::string(1, *c);
  return r;
}

}  // namespace

void Emitter::emitMaps(int id, const std::vector<int>& operands) {
  const Stage& s = p_.stages[id];
  auto& b = body_;
  int R = s.type.rank();
  int sd = s.type.group && s.type.layout.kind == Layout::Sliced ? s.type.layout.dim : -1;
  b << "    OutputMap om{};\n    om.rank = " << R << ";\n    om.n = " << countVar(id) << ";\n";
  b << "    long long gshape[" << std::max(R, 1) << "] = {";
  for (int k = 0; k < R; ++k) b << (k ? ", " : "") << cxx(s.type.shape[k]);
  if (R == 0) b << "1";
  b << "};\n    const long long off = " << (sd >= 0 ? sliceStart(s.type) : "0") << ";\n    (void)off;\n";
  b << "    { long long st = 1;\n      for (int k = om.rank - 1; k >= 0; --k) { om.shape[k] = " << shapeVar(id)
    << "[k]; om.gstride[k] = st; st *= gshape[k]; } }\n";
  b << "    om.gbase = " << (sd >= 0 ? "off * om.gstride[" + std::to_string(sd) + "]" : "0") << ";\n";
  bool local = s.type.group && s.type.layout.kind == Layout::Local;
  b << "    om.keyXor = (static_cast<unsigned long long>(" << g(s.type.group, "inst") << ") << 48)"
    << (local ? " ^ (static_cast<unsigned long long>(rank_ + 1) << 40)" : "") << ";\n";
  for (size_t k = 0; k < operands.size(); ++k) {
    const Stage& os = p_.stages[operands[k]];
    int orank = os.type.rank();
    int osd = os.type.group && os.type.layout.kind == Layout::Sliced ? os.type.layout.dim : -1;
    b << "    [[maybe_unused]] OperandMap m" << k << "{};  // the coordinate path's map (fast paths use bases)\n";
    if (orank == 0) continue;
    // A permute read in place (plan::Storage::Permuted): dimension j is its operand's perm[j],
    // whose stride the operand's contiguous shape gives.
    const bool permuted = plan_.at(operands[k]).storage == plan::Storage::Permuted;
    const int src = permuted ? plan_.at(operands[k]).from : -1;
    b << "    { [[maybe_unused]] long long st = 1;\n";
    if (permuted) {
      b << "      long long ps[" << orank << "];  // '" << p_.stages[src].name << "''s strides\n"
        << "      for (int q = " << orank - 1 << "; q >= 0; --q) { ps[q] = st; st *= " << shapeVar(src) << "[q]; }\n";
    }
    for (int j = orank - 1; j >= 0; --j) {
      int outDim = j + R - orank;
      // Broadcast along this dimension exactly when the types say so (a constant 1 against
      // something else): a slice of extent 1 is not a broadcast.
      bool bcast = os.type.shape[j].constantValue() == 1 && s.type.shape[outDim].constantValue() != 1;
      const std::string stride = permuted ? "ps[" + std::to_string(os.perm[static_cast<size_t>(j)]) + "]" : "st";
      b << "      m" << k << ".stride[" << outDim << "] = " << (bcast ? "0" : stride) << ";\n";
      if (j > 0 && !permuted) b << "      st *= " << shapeVar(operands[k]) << "[" << j << "];\n";
      // The output is sliced along this dimension, the operand holds it whole: start at the slice.
      if (outDim == sd && osd != j)
        b << "      m" << k << ".base += (m" << k << ".stride[" << outDim << "] ? off * m" << k << ".stride[" << outDim << "] : 0);\n";
    }
    b << "    }\n";
  }
}

std::string Emitter::storeValue(DType t, const ENode& last, const std::string& v) {
  if (t == DType::Bool) return "static_cast<uint8_t>((" + v + ") ? 1 : 0)";
  return "coconet_rt::Store<" + std::string(storageType(t)) + ">::from(static_cast<" +
         (last.integerValued() && last.dtype != DType::Bool ? "long long" : "double") + ">(" + v + "))";
}

std::string Emitter::nodeCode(const Expr& x, const ENode& n, const std::string& v, const std::vector<std::string>& args,
                              const std::string& operand, const std::string& scalar, const std::string& ind) {
  std::string CT = n.integerConst() ? "long long" : computeType(n.dtype);
  auto a = [&](int k) { return "static_cast<" + CT + ">(" + args[k] + ")"; };
  bool fl = std::string(CT) == "float", db = std::string(CT) == "double", in = CT == "long long";
  // Comparisons, min and max of two integer values compare them as integers (as long long),
  // the others as doubles.
  const bool ints = n.args.size() >= 2 && x.nodes[n.args[0]].integerValued() && x.nodes[n.args[1]].integerValued();
  auto cmp = [&](int k) { return (ints ? "static_cast<long long>(" : "(double)(") + args[k] + ")"; };
  auto call = [&](const char* f, int count) {
    std::string s = std::string("coconet_rt::") + f + "(";
    for (int k = 0; k < count; ++k) s += (k ? ", " : "") + a(k);
    return s + ")";
  };
  std::string e;
  switch (n.op) {
    case EOp::Operand: e = operand; break;
    case EOp::Const: e = n.integerConst() ? std::to_string(n.ivalue) + "LL" : num(n.value); break;
    case EOp::Param: e = "prm_" + ident(n.name); break;
    case EOp::Rank:
    case EOp::GroupIndex:
    case EOp::GroupSize: e = scalar; break;
    case EOp::Neg: e = in ? call("ineg", 1) : "-" + a(0); break;
    case EOp::Not: e = "!(" + args[0] + ")"; break;
    case EOp::Add:
      e = fl   ? "__fadd_rn(" + a(0) + ", " + a(1) + ")"
          : db ? "__dadd_rn(" + a(0) + ", " + a(1) + ")"
          : in ? call("iadd", 2)
               : a(0) + " + " + a(1);
      break;
    case EOp::Sub:
      e = fl   ? "__fsub_rn(" + a(0) + ", " + a(1) + ")"
          : db ? "__dsub_rn(" + a(0) + ", " + a(1) + ")"
          : in ? call("isub", 2)
               : a(0) + " - " + a(1);
      break;
    case EOp::Mul:
      e = fl   ? "__fmul_rn(" + a(0) + ", " + a(1) + ")"
          : db ? "__dmul_rn(" + a(0) + ", " + a(1) + ")"
          : in ? call("imul", 2)
               : a(0) + " * " + a(1);
      break;
    case EOp::Div:
      e = fl   ? "__fdiv_rn(" + a(0) + ", " + a(1) + ")"
          : db ? "__ddiv_rn(" + a(0) + ", " + a(1) + ")"
          : in ? call("idiv", 2)
               : "(" + a(1) + " == 0 ? 0 : " + a(0) + " / " + a(1) + ")";
      break;
    case EOp::Mod:
      e = fl   ? "fmodf(" + a(0) + ", " + a(1) + ")"
          : db ? "fmod(" + a(0) + ", " + a(1) + ")"
          : in ? call("imod", 2)
               : "(" + a(1) + " == 0 ? 0 : " + a(0) + " % " + a(1) + ")";
      break;
    case EOp::Lt: e = cmp(0) + " < " + cmp(1); break;
    case EOp::Le: e = cmp(0) + " <= " + cmp(1); break;
    case EOp::Gt: e = cmp(0) + " > " + cmp(1); break;
    case EOp::Ge: e = cmp(0) + " >= " + cmp(1); break;
    case EOp::Eq: e = cmp(0) + " == " + cmp(1); break;
    case EOp::Ne: e = cmp(0) + " != " + cmp(1); break;
    case EOp::And: e = "(" + args[0] + ") && (" + args[1] + ")"; break;
    case EOp::Or: e = "(" + args[0] + ") || (" + args[1] + ")"; break;
#define COCONET_UNARY_MATH(k, s, f32, f64, cuda32, cuda64, host) \
  case EOp::k:                                                   \
    e = mathCall(fl ? cuda32 : cuda64, a(0));                    \
    break;
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    case EOp::Abs: e = in ? call("iabs", 1) : (fl ? "fabsf(" : db ? "fabs(" : "llabs(") + a(0) + ")"; break;
    case EOp::Relu: e = "(" + a(0) + " > 0 ? " + a(0) + " : static_cast<" + CT + ">(0))"; break;
    case EOp::Pow:
      e = fl ? "powf(" + a(0) + ", " + a(1) + ")" : in ? call("ipow", 2) : "pow((double)" + args[0] + ", (double)" + args[1] + ")";
      break;
    case EOp::Min: e = "(" + cmp(1) + " < " + cmp(0) + " ? " + a(1) + " : " + a(0) + ")"; break;
    case EOp::Max: e = "(" + cmp(0) + " < " + cmp(1) + " ? " + a(1) + " : " + a(0) + ")"; break;
    case EOp::Select: e = "((" + args[0] + ") ? " + a(1) + " : " + a(2) + ")"; break;
    case EOp::Cast:
      switch (n.dtype) {
        case DType::F16: e = "coconet_rt::round_f16(static_cast<float>(" + args[0] + "))"; break;
        case DType::BF16: e = "coconet_rt::round_bf16(static_cast<float>(" + args[0] + "))"; break;
        case DType::Bool: e = "((" + args[0] + ") != 0)"; break;
        case DType::I8:
        case DType::U8:
        case DType::I32:
        case DType::I64: {
          // from an integer exactly (saturated to the type), from a float truncated and saturated
          const std::string I = n.dtype == DType::I8    ? "int8_t"
                                : n.dtype == DType::U8  ? "uint8_t"
                                : n.dtype == DType::I32 ? "int"
                                                        : "long long";
          e = x.nodes[n.args[0]].integerValued() ? "coconet_rt::saturateInteger<" + I + ">(static_cast<long long>(" + args[0] + "))"
                                                 : "coconet_rt::saturate<" + I + ">((double)(" + args[0] + "))";
          break;
        }
        default: e = a(0);
      }
      break;
    case EOp::Dropout: {
      std::string seed = n.args.size() > 2 ? "static_cast<unsigned long long>(static_cast<long long>(" + args[2] + "))" : "seed";
      std::string p = "static_cast<float>(" + args[1] + ")";
      // The kept value first, as its own statement: inside the select, nvcc turned the select
      // into a branch around a division per element (the division's operand is the same for
      // every element, and out of the select it is hoisted from the loop).
      const std::string kept =
          fl ? "__fmul_rn(" + a(0) + ", __fdiv_rn(1.0f, __fsub_rn(1.0f, " + p + ")))" : a(0) + " / (1.0 - (double)(" + args[1] + "))";
      return ind + "const " + CT + " " + v + "_kept = " + kept + ";\n" + ind + "const " + CT + " " + v +
             " = (coconet_rt::dropout_uniform(" + seed + ", " + std::to_string(n.salt) + "ULL, key) < " + p + " ? " +
             std::string(fl ? "0.0f" : "0.0") + " : " + v + "_kept);\n";
    }
  }
  return ind + "const " + CT + " " + v + " = " + e + ";\n";
}

std::string Emitter::fastIndex(Access a, size_t k, const std::string& i, const std::string& iMod) {
  const std::string kk = std::to_string(k);
  return a == Access::Linear   ? "b" + kk + " + " + i
         : a == Access::Modulo ? iMod + " % b" + kk
         : a == Access::Row    ? "b" + kk + " + " + i + " / rl"
                               : "b" + kk;
}

bool Emitter::rowBroadcast(const TensorType& ot, const TensorType& t) {
  const int r = t.rank();
  if (r < 2 || ot.rank() != r || ot.shape.back().constantValue() != 1 || t.shape.back().constantValue() == 1) return false;
  for (int k = 0; k + 1 < r; ++k)
    if (ot.shape[k] != t.shape[k]) return false;
  const bool outSliced = t.group && t.layout.kind == Layout::Sliced, opSliced = ot.group && ot.layout.kind == Layout::Sliced;
  if (outSliced && t.layout.dim != 0) return false;
  return !opSliced || (outSliced && ot.layout == t.layout && ot.group == t.group);  // as Linear's rule: whole, or the same slice
}

Emitter::Access Emitter::accessOf(int operand, const Stage& out) const {
  const TensorType& ot = p_.stages[operand].type;
  const TensorType& t = out.type;
  bool allOne = true;
  for (auto& d : ot.shape) allOne = allOne && d.constantValue() == 1;
  if (allOne) return Access::Scalar;
  // (a permute read in place: its operand's strides, permuted; emitMaps)
  if (static_cast<size_t>(operand) < plan_.size() && plan_.at(operand).storage == plan::Storage::Permuted) return Access::Mapped;
  bool outSliced = t.group && t.layout.kind == Layout::Sliced;
  bool opSliced = ot.group && ot.layout.kind == Layout::Sliced;
  if (outSliced && t.layout.dim != 0) return Access::Mapped;
  if (ot.shape == t.shape) {
    if (!opSliced) return Access::Linear;  // whole: its block of dimension 0 when the output is a slice
    if (outSliced && ot.layout == t.layout && ot.group == t.group) return Access::Linear;
    return Access::Mapped;
  }
  // Trailing dimensions of the output (after leading constant 1s), held whole.
  if (opSliced) return Access::Mapped;
  int lead = 0;
  while (lead < ot.rank() && ot.shape[lead].constantValue() == 1) ++lead;
  int r = ot.rank() - lead, R = t.rank();
  if (r <= 0 || r >= R) return Access::Mapped;
  for (int k = 0; k < r; ++k)
    if (ot.shape[lead + k] != t.shape[R - r + k]) return Access::Mapped;
  return Access::Modulo;  // output dims < R - r vary slowest; a slice of dim 0 keeps whole rows
}

std::string Emitter::paramValue(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name && prm.isSize) return "static_cast<double>(sz.s_" + name + ")";
  return "sc." + ident(name);
}

std::string Emitter::scalarValue(const ScalarRef& r) const { return r.param.empty() ? num(r.value) : paramValue(r.param); }

bool Emitter::integerParam(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name) return prm.isSize || ast::isInteger(prm.dtype);
  return false;
}

std::string Emitter::paramInteger(const std::string& name) const {
  for (auto& prm : p_.params)
    if (prm.name == name && prm.isSize) return "sz.s_" + name;
  return "sc." + ident(name);
}

std::optional<std::string> Emitter::hostScalar(const Expr& e, int i) const {
  const ENode& n = e.nodes[static_cast<size_t>(i)];
  const std::string CT = n.integerConst() ? "long long" : computeType(n.dtype);
  const bool flt = CT == "float" || CT == "double", fl = CT == "float";
  std::vector<std::string> args;
  for (int a : n.args) {
    auto t = hostScalar(e, a);
    if (!t) return std::nullopt;
    args.push_back(*t);
  }
  auto a = [&](size_t k) { return "static_cast<" + CT + ">(" + args[k] + ")"; };
  const bool in = CT == "long long";  // integers: coconet_rt's wrapping arithmetic, as the kernels
  switch (n.op) {
    case EOp::Const:
      return n.integerConst() ? "static_cast<" + CT + ">(" + std::to_string(n.ivalue) + "LL)"
                              : "static_cast<" + CT + ">(" + num(n.value) + ")";
    case EOp::Param: return "static_cast<" + CT + ">(" + (integerParam(n.name) ? paramInteger(n.name) : paramValue(n.name)) + ")";
    case EOp::Cast:
      if (n.dtype != DType::F32 && n.dtype != DType::F64) return std::nullopt;
      return a(0);
    case EOp::Neg: return in ? "coconet_rt::ineg(" + a(0) + ")" : "(-" + a(0) + ")";
    case EOp::Add: return in ? "coconet_rt::iadd(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " + " + a(1) + ")";
    case EOp::Sub: return in ? "coconet_rt::isub(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " - " + a(1) + ")";
    case EOp::Mul: return in ? "coconet_rt::imul(" + a(0) + ", " + a(1) + ")" : "(" + a(0) + " * " + a(1) + ")";
    case EOp::Div:
      if (!flt) return std::nullopt;
      return "(" + a(0) + " / " + a(1) + ")";
    case EOp::Min: return "(" + a(1) + " < " + a(0) + " ? " + a(1) + " : " + a(0) + ")";
    case EOp::Max: return "(" + a(0) + " < " + a(1) + " ? " + a(1) + " : " + a(0) + ")";
#define COCONET_UNARY_MATH(k, s, f32, f64, cuda32, cuda64, host) \
  case EOp::k:                                                   \
    if (!(host) || !flt) return std::nullopt;                    \
    return mathCall(fl ? cuda32 : cuda64, a(0));
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
    default: return std::nullopt;
  }
}

void Emitter::runParams(const std::vector<int>& run, std::vector<std::string>& params, std::vector<std::string>& hostArgs) const {
  std::set<std::string> prms;
  for (int id : run) {
    const Stage& s = p_.stages[id];
    for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
      const ENode& n = s.expr.nodes[i];
      if (n.op == EOp::Param && prms.insert(n.name).second) {
        const bool integer = integerParam(n.name);
        params.push_back(std::string(integer ? "long long" : "double") + " prm_" + ident(n.name));
        hostArgs.push_back(integer ? paramInteger(n.name) : paramValue(n.name));
      }
      if (n.op == EOp::Rank || n.op == EOp::GroupIndex || n.op == EOp::GroupSize) {
        params.push_back("long long gv" + std::to_string(id) + "_" + std::to_string(i));
        hostArgs.push_back(g(n.group, n.op == EOp::Rank ? "pos" : n.op == EOp::GroupIndex ? "inst" : "size"));
      }
    }
  }
}

std::string Emitter::runMembers(const std::vector<int>& run, const std::map<int, int>& extIndex, const std::vector<int>& written,
                                const std::string& ind, const std::function<std::string(int)>& operand,
                                const std::function<std::string(int)>& store, bool uniqueNames) {
  std::set<int> inRun(run.begin(), run.end());
  std::ostringstream m;
  for (int id : run) {
    const Stage& s = p_.stages[id];
    std::string pre = run.size() > 1 || uniqueNames ? "v" + std::to_string(id) + "_" : "v";
    std::vector<char> uniform(s.expr.nodes.size(), 0);  // the same for every element (hoist_)
    for (size_t i = 0; i < s.expr.nodes.size(); ++i) {
      const ENode& n = s.expr.nodes[i];
      std::vector<std::string> args;
      for (int a : n.args) args.push_back(pre + std::to_string(a));
      const std::string name = pre + std::to_string(i), scalar = "gv" + std::to_string(id) + "_" + std::to_string(i);
      if (hoist_) {
        bool u = n.op == EOp::Const || n.op == EOp::Param || n.op == EOp::Rank || n.op == EOp::GroupIndex || n.op == EOp::GroupSize;
        if (!u && n.op != EOp::Operand && n.op != EOp::Dropout && !n.args.empty()) {
          u = true;
          for (int a : n.args) u = u && uniform[static_cast<size_t>(a)];
        }
        uniform[i] = u;
        if (u) {
          if (hoist_->names.insert(name).second) hoist_->code << nodeCode(s.expr, n, name, args, "", scalar, "  ");
          continue;
        }
      }
      std::string opnd;
      if (n.op == EOp::Operand) {
        int o = s.operands[n.index];
        opnd = inRun.count(o) ? "r" + std::to_string(o) : operand(extIndex.at(o));
      }
      m << nodeCode(s.expr, n, name, args, opnd, scalar, ind);
    }
    std::string last = pre + std::to_string(s.expr.nodes.size() - 1);
    std::string T = storageType(s.type.dtype);
    std::string stored = storeValue(s.type.dtype, s.expr.nodes.back(), last);
    m << ind << "const " << T << " s" << id << " = " << stored << ";\n"
      << ind << "const auto r" << id << " = coconet_rt::to_f(s" << id << ");\n"
      << ind << "(void)r" << id << ";\n";
  }
  for (int id : written) m << ind << store(id) << "\n";
  return m.str();
}

void Emitter::emitComputeRun(const std::vector<int>& run, const std::string& stream, const std::string& first, const std::string& count) {
  const RunShape r = runShape(run);
  const int ref = run.front();
  const Stage& r0 = p_.stages[ref];
  const std::vector<int>&ext = r.ext, &written = r.written;
  const std::vector<Access>& acc = r.acc;
  const bool fast = r.fast, rows = r.rows;
  const int V = r.V;
  auto isAliasedOut = [&](int id) {
    for (auto& st : p_.states)
      if (st.exit == id && plan_.aliased.count(st.entry)) return true;
    return false;
  };
  std::string kname = "k_" + std::to_string(ref) + "_" + ident(run.size() > 1 ? r0.fusedInto : r0.name);
  std::vector<std::string> params, hostArgs;
  for (int id : written) {
    params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + (isAliasedOut(id) ? "* out" : "* __restrict__ out") +
                     std::to_string(id));
    hostArgs.push_back(var(id));
  }
  for (size_t k = 0; k < ext.size(); ++k) {
    params.push_back("const " + std::string(storageType(p_.stages[ext[k]].type.dtype)) +
                     (plan_.aliased.count(ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
    hostArgs.push_back(var(ext[k]));
  }
  params.push_back("OutputMap om");
  hostArgs.push_back("om");
  for (size_t k = 0; k < ext.size(); ++k) {
    params.push_back(fast ? "long long b" + std::to_string(k) : "OperandMap m" + std::to_string(k));
    hostArgs.push_back(fast ? (acc[k] == Access::Modulo ? countVar(ext[k]) : "m" + std::to_string(k) + ".base") : "m" + std::to_string(k));
  }
  runParams(run, params, hostArgs);
  params.push_back("unsigned long long seed");
  hostArgs.push_back("seed");
  if (fast) {
    params.push_back("int vec");
    hostArgs.push_back("vec");
  }
  const std::string rowLength = shapeVar(ref) + "[" + std::to_string(std::max(0, r0.type.rank() - 1)) + "]";
  if (fast && rows) {
    params.push_back("long long rl");  // the row length (the output's last dimension), for the one-value-a-row operands
    hostArgs.push_back(rowLength);
  }
  for (int id : run) kernels_ << "// " << p_.stages[id].name << " = " << exprTextFor(p_.stages[id]) << "\n";
  if (run.size() > 1) kernels_ << "// (fused group '" << r0.fusedInto << "': one pass over the elements)\n";
  if (fast) kernels_ << "// Linear accesses: " << V << " elements per step with vector loads and stores where aligned.\n";
  kernels_ << "__global__ void " << kname << "(";
  for (size_t k = 0; k < params.size(); ++k) kernels_ << (k ? ", " : "") << params[k];
  kernels_ << ") {\n  (void)seed;\n";
  // The kernel's loops go to `loops`, after the values they hoist (hoist_).
  Hoisted hoisted;
  HoistScope hoisting(hoist_, hoisted);
  const std::string loopsText = runLoops(run, r);
  hoisting.end();
  kernels_ << hoisted.prologue() << loopsText;
  emitRunLaunch(run, r, kname, hostArgs, rowLength, stream, first, count);
}

RunShape Emitter::runShape(const std::vector<int>& run) const {
  int ref = run.front();
  const Stage& r0 = p_.stages[ref];
  std::set<int> inRun(run.begin(), run.end());
  RunShape r;
  std::vector<int>& ext = r.ext;
  std::map<int, int>& extIndex = r.extIndex;
  for (int id : run)
    for (int o : p_.stages[id].operands)
      if (!inRun.count(o) && !extIndex.count(o)) {
        extIndex[o] = static_cast<int>(ext.size());
        ext.push_back(o);
      }
  std::vector<int>& written = r.written;
  for (int id : run)
    if (neededOutside(id, inRun)) written.push_back(id);
  // Vector width: 16 bytes of the narrowest array, at most 8 elements.
  std::vector<Access>& acc = r.acc;
  bool& fast = r.fast;
  int minBytes = 16;
  bool& rows = r.rows;  // an operand of one value a row (a keepdim reduction's result): the kernel takes the row length
  for (int o : ext) {
    Access a = accessOf(o, r0);
    if (a == Access::Mapped && rowBroadcast(p_.stages[o].type, r0.type)) a = Access::Row;
    rows = rows || a == Access::Row;
    acc.push_back(a);
    fast = fast && acc.back() != Access::Mapped;
    if (acc.back() == Access::Linear || acc.back() == Access::Modulo) minBytes = std::min(minBytes, dtypeBytes(p_.stages[o].type.dtype));
  }
  for (int id : written) minBytes = std::min(minBytes, dtypeBytes(p_.stages[id].type.dtype));
  if (r0.type.group && r0.type.layout.kind == Layout::Sliced && r0.type.layout.dim != 0) fast = false;
  r.V = std::min(8, 16 / minBytes);
  return r;
}

std::string Emitter::runLoops(const std::vector<int>& run, const RunShape& r) {
  const std::vector<int>&ext = r.ext, &written = r.written;
  const std::map<int, int>& extIndex = r.extIndex;
  const std::vector<Access>& acc = r.acc;
  const int V = r.V;
  std::ostringstream loops;
  // The members of one element: operand(k) reads external operand k, store(id) writes member id.
  auto members = [&](const std::string& ind, const std::function<std::string(int)>& operand, const std::function<std::string(int)>& store) {
    return runMembers(run, extIndex, written, ind, operand, store);
  };
  if (!r.fast) {
    loops << "  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < om.n; j += (long long)gridDim.x * blockDim.x) {\n"
          << "    const long long i = j + om.first;\n"
          << "    long long c[coconet_rt::kMaxRank];\n    long long rem = i, gidx = om.gbase;\n"
          << "    for (int k = om.rank - 1; k >= 0; --k) { c[k] = rem % om.shape[k]; rem /= om.shape[k]; gidx += c[k] * om.gstride[k]; }\n"
          << "    const unsigned long long key = static_cast<unsigned long long>(gidx) ^ om.keyXor;\n    (void)key;\n";
    for (size_t k = 0; k < ext.size(); ++k)
      loops << "    long long i" << k << " = m" << k << ".base;\n    for (int k = 0; k < om.rank; ++k) i" << k << " += c[k] * m" << k
            << ".stride[k];\n";
    loops << members(
        "    ", [](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[i" + std::to_string(k) + "])"; },
        [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
    loops << "  }\n}\n\n";
  } else {
    auto scalarIndex = [&](size_t k, const std::string& i) { return fastIndex(acc[k], k, i, i); };
    loops << "  const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;\n"
          << "  long long start = 0;\n  if (vec) {\n    constexpr int V = " << V << ";\n    const long long nv = om.n / V;\n"
          << "    for (long long jv = tid; jv < nv; jv += nth) {\n      const long long i0 = om.first + jv * V;\n";
    for (size_t k = 0; k < ext.size(); ++k) {
      std::string kk = std::to_string(k), T = storageType(p_.stages[ext[k]].type.dtype);
      if (acc[k] == Access::Scalar || acc[k] == Access::Row) {  // (a row's V elements share its value: rl % V == 0)
        loops << "      const " << T << " x" << kk << " = a" << kk << "[" << scalarIndex(k, "i0") << "];\n";
      } else {
        loops << "      coconet_rt::Vec<" << T << ", V> x" << kk << ";\n      coconet_rt::load_vec"
              << (plan_.aliased.count(ext[k]) ? "_rw" : "") << "(x" << kk << ", a" << kk << " + " << scalarIndex(k, "i0") << ");\n";
      }
    }
    for (int id : written) loops << "      coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
    loops << "#pragma unroll\n      for (int e = 0; e < V; ++e) {\n        const long long i = i0 + e;\n"
          << "        const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n        (void)key;\n";
    loops << members(
        "        ",
        [&](int k) {
          std::string kk = std::to_string(k);
          return acc[k] == Access::Scalar || acc[k] == Access::Row ? "coconet_rt::to_f(x" + kk + ")" : "coconet_rt::to_f(x" + kk + ".v[e])";
        },
        [](int id) { return "o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";"; });
    loops << "      }\n";
    for (int id : written) loops << "      coconet_rt::store_vec(out" << id << " + i0, o" << id << ");\n";
    loops << "    }\n    start = nv * V;\n  }\n"
          << "  for (long long j = start + tid; j < om.n; j += nth) {\n    const long long i = om.first + j;\n"
          << "    const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n    (void)key;\n";
    loops << members(
        "    ", [&](int k) { return "coconet_rt::to_f(a" + std::to_string(k) + "[" + scalarIndex(k, "i") + "])"; },
        [](int id) { return "out" + std::to_string(id) + "[i] = s" + std::to_string(id) + ";"; });
    loops << "  }\n}\n\n";
  }
  return loops.str();
}

void Emitter::emitRunLaunch(const std::vector<int>& run, const RunShape& r, const std::string& kname,
                            const std::vector<std::string>& hostArgs, const std::string& rowLength, const std::string& stream,
                            const std::string& first, const std::string& count) {
  const int ref = run.front();
  const Stage& r0 = p_.stages[ref];
  const std::vector<int>&ext = r.ext, &written = r.written;
  const std::vector<Access>& acc = r.acc;
  const bool fast = r.fast, rows = r.rows;
  const int V = r.V;
  emitMaps(ref, ext);
  std::string n = countVar(ref);
  if (!first.empty()) {
    body_ << "    om.first = " << first << ";\n    om.n = " << count << ";\n";
    n = count;
  }
  std::string grid = "coconet_rt::gridFor(" + n + ")";
  if (fast) {
    // Vector accesses need every array 16-byte aligned where the launch starts, and each
    // modulo operand's period a multiple of V.
    body_ << "    const bool vec = om.first % " << V << " == 0";
    for (int id : written) body_ << " &&\n        coconet_rt::aligned16(" << var(id) << ", om.first)";
    for (size_t k = 0; k < ext.size(); ++k) {
      if (acc[k] == Access::Linear) body_ << " &&\n        coconet_rt::aligned16(" << var(ext[k]) << ", m" << k << ".base + om.first)";
      if (acc[k] == Access::Modulo)
        body_ << " &&\n        " << countVar(ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(ext[k]) << ", 0)";
    }
    if (rows) body_ << " &&\n        " << rowLength << " % " << V << " == 0";
    body_ << ";\n";
    grid = "coconet_rt::gridFor(vec ? " + n + " / " + std::to_string(V) + " + 1 : " + n + ")";
  }
  body_ << "    " << kname << "<<<" << grid << ", 256, 0, " << stream << ">>>(";
  for (size_t k = 0; k < hostArgs.size(); ++k) body_ << (k ? ", " : "") << hostArgs[k];
  body_ << ");\n    CHECK(cudaGetLastError(), \"" << (run.size() > 1 ? r0.fusedInto : r0.name) << "\");\n";
}

void Emitter::emitIndented(const std::string& ind, const std::function<void()>& emit) {
  std::ostringstream saved;
  saved << body_.str();
  body_.str("");
  body_.clear();
  emit();
  std::string text = body_.str();
  body_.str("");
  body_.clear();
  body_ << saved.str();
  std::istringstream ms(text);
  for (std::string line; std::getline(ms, line);) body_ << ind << line << "\n";
}

std::string Emitter::exprTextFor(const Stage& s) const {
  std::vector<std::string> names;
  for (int o : s.operands) names.push_back(p_.stages[o].name);
  return s.expr.str(names);
}

}  // namespace coconet::backend::detail
