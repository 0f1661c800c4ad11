// The interpreter's machine, which runs a program's stages rank by rank, and the helpers its
// files share (Interpreter.cpp, Compute.cpp); included only by src/interp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/Interpreter.h"

namespace coconet::interp::detail {

// The types computed in 64-bit integers (literals compute in double, as the other operand's
// type when they meet one).
inline bool integral(ir::DType t) { return t == ir::DType::I8 || t == ir::DType::U8 || t == ir::DType::I32 || t == ir::DType::I64; }

// A value inside a compute stage: an integer exactly (`isInt`), or a double.
struct Num {
  double d = 0;
  int64_t i = 0;
  bool isInt = false;
  static Num of(int64_t v) { return {static_cast<double>(v), v, true}; }
  static Num of(double v) { return {v, 0, false}; }
  double f() const { return isInt ? static_cast<double>(i) : d; }
  int64_t n() const { return isInt ? i : toInt64(d); }
};

// Two's complement arithmetic without undefined behaviour.
inline int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
inline int64_t iadd(int64_t a, int64_t b) { return wrap(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t isub(int64_t a, int64_t b) { return wrap(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t imul(int64_t a, int64_t b) { return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
inline int64_t ineg(int64_t a) { return wrap(0 - static_cast<uint64_t>(a)); }
inline int64_t idiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? ineg(a) : a / b; }
inline int64_t imod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }

inline bool floatish(ir::DType t) { return t == ir::DType::F16 || t == ir::DType::BF16 || t == ir::DType::F32 || t == ir::DType::LitFloat; }

inline std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

inline int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n)) throw RunError("a value's element count overflows 64 bits");
  return n;
}

// Runs a program for c.ranks simulated ranks: each stage's value on every rank, in program order.
class Machine {
public:
  Machine(const ir::Program& p, const Config& c) : p_(p), c_(c), vals_(p.stages.size()) {}

  Result run(const Values& in);

private:
  const ir::Program& p_;
  const Config& c_;
  std::vector<PerRank> vals_;

  void checkRequirements();

  // Rounds a stored value to its dtype (floating-point values stay exact in exact mode).
  double store(ir::DType t, double v) const { return c_.exact && ast::isFloat(t) ? v : roundTo(t, v); }
  // Stores element i of y, a value of type t: a double rounded as store() does, or an integer
  // exactly (saturated to t's range).
  void put(Tensor& y, int64_t i, ir::DType t, double v) const {
    if (keepsExact(t))
      y.setInteger(i, toInt64(v));
    else
      y.data[i] = store(t, v);
  }
  void put(Tensor& y, int64_t i, ir::DType t, Num v) const {
    if (v.isInt && (integral(t) || t == ir::DType::Bool))
      y.setInteger(i, saturateInteger(t, v.i));
    else
      put(y, i, t, v.f());
  }

  Tensor zeros(const ir::TensorType& t, int r);
  void checkExact(const ir::Stage& s, const PerRank& v) const;
  int64_t sliceOffset(const ir::TensorType& t, int r);
  PerRank toLayout(const PerRank& v, const ir::TensorType& from, const ir::TensorType& to);
  PerRank stage(const ir::Stage& s, const Values& in);

  // ---- Element-wise (Compute.cpp) ----
  PerRank compute(const ir::Stage& s);
  double param(const std::string& name, ir::DType t) { return paramNum(name, t).f(); }
  Num paramNum(const std::string& name, ir::DType t);
  template <class F> Num eval(const ir::ENode& n, const std::vector<Num>& v, F&& operand, int r, uint64_t key);

  // ---- Reductions and row-wise operations ----
  bool accFloat(ir::DType t) const { return t != ir::DType::F64 && !ast::isInteger(t) && !c_.exact; }
  PerRank reduce(const ir::Stage& s);
  PerRank rowwise(const ir::Stage& s);
  template <class T> PerRank rowwiseIn(const ir::Stage& s);

  // ---- Matrix operations ----
  PerRank matmul(const ir::Stage& s);
  PerRank embedding(const ir::Stage& s);
  PerRank embeddingGrad(const ir::Stage& s);
  PerRank permute(const ir::Stage& s);
  PerRank concat(const ir::Stage& s);
  PerRank narrow(const ir::Stage& s);

  // ---- Communication ----
  std::vector<std::vector<int>> instances(const ir::GroupInfo* g);
  double combine(ir::ReduceOp op, ir::DType t, double acc, double v);
  Tensor reduceAcross(const std::vector<int>& ranks, int operand, ir::ReduceOp op, ir::DType t);
  PerRank collective(const ir::Stage& s);
};

}  // namespace coconet::interp::detail
