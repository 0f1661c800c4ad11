// Element types, symbolic sizes, layouts and the type of a value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace coconet::ast {

// ---- Element types ---------------------------------------------------------------------------
// LitInt / LitFloat are the types of untyped literals: they take the type of the other operand.
// clang-format off
#define COCONET_DTYPES(X) \
  X(F16, "f16", 2)        \
  X(BF16, "bf16", 2)      \
  X(F32, "f32", 4)        \
  X(F64, "f64", 8)        \
  X(I8, "i8", 1)          \
  X(I32, "i32", 4)        \
  X(I64, "i64", 8)        \
  X(U8, "u8", 1)          \
  X(Bool, "bool", 1)      \
  X(LitInt, "int literal", 8) \
  X(LitFloat, "float literal", 8)
// clang-format on

enum class DType : uint8_t {
#define X(name, str, bytes) name,
  COCONET_DTYPES(X)
#undef X
};

const char* dtypeName(DType t);
int dtypeBytes(DType t);  // storage bytes of one element (8 for literals)
std::optional<DType> dtypeFromName(const std::string& s);
bool isFloat(DType t);    // f16 bf16 f32 f64 and float literals
bool isInteger(DType t);  // i8 i32 i64 u8 and int literals
bool isLiteral(DType t);
// The common type of two operands of arithmetic (PyTorch-like promotion); nullopt: no common type.
std::optional<DType> promote(DType a, DType b);
// The type a literal-only expression gets when it must be concrete.
DType concrete(DType t);

// ---- Symbolic sizes --------------------------------------------------------------------------
// A polynomial with integer coefficients over atoms. An atom is a size symbol (a `size`
// parameter, or "world.size" for the number of ranks), or an inexact quotient or remainder
// of two size expressions. The form is canonical, so structural equality is symbolic equality
// for polynomials (division and remainder compare structurally).
class SizeExpr;
struct SizeAtom;
using AtomPtr = std::shared_ptr<const SizeAtom>;

class SizeOverflow : public std::runtime_error {
public:
  SizeOverflow() : std::runtime_error("size arithmetic overflows 64 bits") {}
};

class SizeExpr {
public:
  using Monomial = std::vector<std::string>;  // sorted atom keys, with repetition

  SizeExpr() = default;  // zero
  static SizeExpr constant(int64_t v);
  static SizeExpr symbol(const std::string& name);
  // Exact when b is a constant dividing every coefficient, or when a is b times a polynomial
  // whose terms are found by b's single-monomial division; else an atom "(a / b)".
  static SizeExpr div(const SizeExpr& a, const SizeExpr& b);
  static SizeExpr mod(const SizeExpr& a, const SizeExpr& b);

  SizeExpr operator+(const SizeExpr& o) const;
  SizeExpr operator-(const SizeExpr& o) const;
  SizeExpr operator*(const SizeExpr& o) const;
  bool operator==(const SizeExpr& o) const { return terms_ == o.terms_; }
  bool operator!=(const SizeExpr& o) const { return !(*this == o); }
  bool operator<(const SizeExpr& o) const { return terms_ < o.terms_; }

  bool isConstant() const;
  // The sum of the coefficients' magnitudes (saturating): a product of expressions whose bounds
  // multiply to under 2^63 cannot overflow.
  uint64_t coefficientBound() const;
  // +1 when every coefficient is positive, -1 when every one is negative, 0 when mixed (sizes
  // and their quotients are positive, so +1 means positive for every binding).
  int sign() const;
  std::optional<int64_t> constantValue() const;
  // Evaluates with concrete values for symbols; nullopt if a symbol is unbound or a division
  // by zero happens; throws SizeOverflow where a step overflows 64 bits.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& env) const;
  std::vector<std::string> symbols() const;
  std::string str() const;
  // The expression written with the caller's spelling of each piece (the backend writes C++ whose
  // arithmetic checks overflow): terms in str()'s order.
  struct Spelling {
    std::function<std::string(const std::string&)> symbol;
    std::function<std::string(int64_t)> constant;
    std::function<std::string(const std::string&, const std::string&)> add, mul, div, mod;
  };
  std::string spell(const Spelling& s) const;
  // The operands (a, b) where this expression is exactly the remainder a % b; else nullopt.
  std::optional<std::pair<SizeExpr, SizeExpr>> asRemainder() const;

private:
  std::map<Monomial, int64_t> terms_;     // no zero coefficients
  std::map<std::string, AtomPtr> atoms_;  // key -> atom, for every atom used in terms_
  friend struct SizeAtom;
  static SizeExpr makeAtom(int kind, const SizeExpr& a, const SizeExpr& b);
  void addTerm(const Monomial& m, int64_t c);
};

struct SizeAtom {
  enum Kind { Symbol, Div, Mod } kind = Symbol;
  std::string name;                    // Symbol
  std::shared_ptr<SizeExpr> lhs, rhs;  // Div, Mod
  std::string key() const;
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& env) const;
};

using Shape = std::vector<SizeExpr>;
std::string shapeStr(const Shape& s);
// Whether the bytes a value of this shape and type takes (elements times the element's bytes)
// count in 64 bits as far as the shape's form shows: false for constants whose product passes
// 2^63 - 1 (sizes bound with -D are constants). Every count the interpreter and the generated
// code take is at most this one.
bool storageCountable(const Shape& s, DType t);

// ---- Layouts and process groups ----------------------------------------------------------------
// A process group: the world, or one of the equal parts a `group` statement splits a parent
// into. A value that lives in a group is held by every instance of it independently.
struct GroupInfo {
  std::string name;  // "world" or the statement's name
  const GroupInfo* parent = nullptr;
  SizeExpr count;      // how many parts the parent is split into (1 for world)
  SizeExpr size;       // ranks in one part: world.size / (product of counts)
  uint32_t depth = 0;  // 0 for world
};

struct Layout {
  enum Kind : uint8_t { Replicated, Local, Sliced } kind = Replicated;
  int dim = -1;  // Sliced only
  static Layout replicated() { return {Replicated, -1}; }
  static Layout local() { return {Local, -1}; }
  static Layout sliced(int d) { return {Sliced, d}; }
  bool operator==(const Layout&) const = default;
  std::string str() const;
};

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };
const char* reduceOpName(ReduceOp op);  // "+", "*", "max", "min"

enum class PeerKind : uint8_t { NextRank, PrevRank, NextGroup, PrevGroup };

// What an expression denotes. Most are tensors; the others appear only where an operation
// asks for them (a group in `split`, a peer in `send`, an operator in `allreduce`).
enum class ValueKind : uint8_t { Error, Tensor, Group, Peer, Op, Module };

struct Type {
  ValueKind kind = ValueKind::Error;
  DType dtype = DType::F32;
  Shape shape;
  Layout layout;
  // The process group the value lives in; nullptr for uniform values (literals and scalar
  // parameters), which are the same on every rank and fit any group.
  const GroupInfo* group = nullptr;
  PeerKind peer = PeerKind::NextRank;  // Peer
  ReduceOp op = ReduceOp::Sum;         // Op

  static Type error() { return {}; }
  static Type tensor(DType t, Shape s, Layout l, const GroupInfo* g) {
    Type r;
    r.kind = ValueKind::Tensor;
    r.dtype = t;
    r.shape = std::move(s);
    r.layout = l;
    r.group = g;
    return r;
  }
  bool isError() const { return kind == ValueKind::Error; }
  bool isTensor() const { return kind == ValueKind::Tensor; }
  bool isScalar() const { return isTensor() && shape.empty(); }
  int rank() const { return static_cast<int>(shape.size()); }
  // "f16[B, S, H] sliced(2)", with " @stage" when the group is not the world.
  std::string str() const;
  std::string tensorTypeStr() const;  // "f16[B, S, H]"
  // With an article, for messages: "a process group", "an operator", "a tensor (i32 local)".
  std::string describe() const;
};

}  // namespace coconet::ast
