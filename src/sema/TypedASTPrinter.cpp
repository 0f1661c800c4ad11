#include "sema/TypedASTPrinter.h"

#include "sema/SemaImpl.h"

#include <sstream>

namespace coconet::sema {
namespace {

class Printer {
public:
  Printer(std::ostream& os, const SourceManager& sm, uint32_t mainFile) : os_(os), sm_(sm), main_(mainFile) {}

  void program(const sema::CheckedProgram& cp) {
    const ProgramDecl& p = *cp.decl;
    os_ << "program " << p.name.name << " " << at(p.name.loc) << "\n";
    for (auto& prm : p.params) {
      os_ << "  param " << prm.name.name << " : " << (prm.isSize ? "size" : dtypeName(prm.dtype));
      if (prm.bound)
        os_ << " = " << (prm.isSize || isInteger(prm.dtype) ? std::to_string(prm.ivalue) : number(prm.value))
            << (prm.boundOnCommandLine ? " (-D)" : "");
      os_ << " " << at(prm.name.loc) << "\n";
    }
    for (auto& s : p.body.stmts) stmt(*s, 1);
    if (!cp.requirements.empty()) {
      os_ << "  requires\n";
      for (auto& r : cp.requirements) os_ << "    " << r.described() << " " << at(r.loc) << "\n";
    }
  }

private:
  std::ostream& os_;
  const SourceManager& sm_;
  uint32_t main_;

  std::string at(SourceLoc l) const {
    if (!l.valid()) return "<builtin>";
    std::string s = "<";
    if (l.file != main_) {
      std::string n = sm_.name(l.file);
      s += n.substr(n.find_last_of('/') + 1) + ":";
    }
    return s + std::to_string(l.line) + ":" + std::to_string(l.col) + ">";
  }
  static std::string number(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }
  // Deep trees (a 100,000-term sum) would print quadratic indentation: past kMaxIndent
  // levels the depth is written as a number instead.
  static constexpr int kMaxIndent = 32;
  static std::string exprSyntax(const Expr& e) { return sema::exprText(e); }
  void indent(int n) {
    if (n <= kMaxIndent)
      os_ << std::string(2 * n, ' ');
    else
      os_ << std::string(2 * kMaxIndent, ' ') << "[" << n << "] ";
  }

  void stmt(const Stmt& s, int d) {
    indent(d);
    switch (s.kind) {
      case StmtKind::Decl: {
        auto& x = static_cast<const DeclStmt&>(s);
        os_ << (x.role == Role::State ? "state " : "in ") << x.name.name << " : " << (x.symbol ? x.symbol->type.str() : "<error>") << " "
            << at(x.name.loc) << "\n";
        return;
      }
      case StmtKind::Group: {
        auto& x = static_cast<const GroupStmt&>(s);
        os_ << "group " << x.name.name;
        if (x.symbol && x.symbol->group)
          os_ << " = split(" << x.parent.name << ", " << x.symbol->group->count.str() << ") : size " << x.symbol->group->size.str();
        os_ << " " << at(x.name.loc) << "\n";
        return;
      }
      case StmtKind::Require: {
        auto& x = static_cast<const RequireStmt&>(s);
        os_ << "require " << exprSyntax(*x.cond) << " " << at(x.loc) << "\n";
        return;
      }
      case StmtKind::Let: {
        auto& x = static_cast<const LetStmt&>(s);
        os_ << "let ";
        for (size_t i = 0; i < x.names.size(); ++i) {
          os_ << (i ? ", " : "") << x.names[i].name;
          if (i < x.symbols.size()) os_ << " : " << x.symbols[i]->type.str();
        }
        os_ << " " << at(x.loc) << "\n";
        expr(*x.value, d + 1);
        return;
      }
      case StmtKind::Update: {
        auto& x = static_cast<const UpdateStmt&>(s);
        os_ << "update " << x.name.name << " : " << (x.state ? x.state->type.str() : "<error>") << " " << at(x.loc) << "\n";
        expr(*x.value, d + 1);
        return;
      }
      case StmtKind::Return: {
        auto& x = static_cast<const ReturnStmt&>(s);
        os_ << "return " << at(x.loc) << "\n";
        for (auto& v : x.values) expr(*v, d + 1);
        return;
      }
    }
  }

  void expr(const Expr& e, int d) {
    indent(d);
    switch (e.kind) {
      case ExprKind::IntLit: os_ << "int " << static_cast<const IntLit&>(e).text; break;
      case ExprKind::FloatLit: os_ << "float " << static_cast<const FloatLit&>(e).text; break;
      case ExprKind::BoolLit: os_ << "bool " << (static_cast<const BoolLit&>(e).value ? "true" : "false"); break;
      case ExprKind::NameRef: os_ << "name " << static_cast<const NameRef&>(e).spelling(); break;
      case ExprKind::OpToken: os_ << "op " << reduceOpName(static_cast<const OpToken&>(e).op); break;
      case ExprKind::Unary: os_ << "unary " << unaryOpSpelling(static_cast<const Unary&>(e).op); break;
      case ExprKind::Binary: os_ << "binary " << binaryOpSpelling(static_cast<const Binary&>(e).op); break;
      case ExprKind::Call: {
        auto& c = static_cast<const Call&>(e);
        if (c.def)
          os_ << "call " << c.spelling();
        else if (c.op == BuiltinOp::Cast)
          os_ << "cast " << dtypeName(c.castTo);
        else {
          os_ << builtinOpName(c.op);
          if (c.op == BuiltinOp::AllReduce || c.op == BuiltinOp::ReduceScatter || c.op == BuiltinOp::Reduce)
            os_ << "(" << reduceOpName(c.reduceOp) << ")";
          if (c.dim >= 0) os_ << " dim=" << c.dim;
          if (c.keepdim) os_ << " keepdim";
        }
        break;
      }
    }
    if (e.type.isTensor() || e.type.isError()) os_ << " : " << e.type.str();
    os_ << " " << at(e.loc) << "\n";
    switch (e.kind) {
      case ExprKind::Unary: expr(*static_cast<const Unary&>(e).operand, d + 1); break;
      case ExprKind::Binary: {
        auto& b = static_cast<const Binary&>(e);
        expr(*b.lhs, d + 1);
        expr(*b.rhs, d + 1);
        break;
      }
      case ExprKind::Call: {
        auto& c = static_cast<const Call&>(e);
        for (auto& a : c.args) {
          if (!a.name.empty()) {
            indent(d + 1);
            os_ << a.name << " =\n";
            expr(*a.value, d + 2);
          } else if (!(a.value->kind == ExprKind::OpToken || (a.value->type.kind == ValueKind::Op))) {
            expr(*a.value, d + 1);
          }
        }
        if (c.def) {
          indent(d + 1);
          os_ << "inlined " << (c.def->module.empty() ? "" : c.def->module + ".") << c.def->name.name << " " << at(c.def->name.loc) << "\n";
          for (auto& s : c.body) stmt(*s, d + 2);
        }
        break;
      }
      default: break;
    }
  }
};

}  // namespace

void printTypedAST(std::ostream& os, const sema::CheckedProgram& p, const SourceManager& sm) {
  Printer(os, sm, p.decl->loc.file).program(p);
}

}  // namespace coconet::sema
