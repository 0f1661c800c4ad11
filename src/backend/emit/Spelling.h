// Spelling.h: how the CUDA backend spells things in generated code: element types for storage,
// computation, NCCL and cuBLAS; reduction operators; user names as C++ identifiers; numbers;
// size expressions over run()'s sizes.
#pragma once

#include <sstream>
#include <string>

#include "ir/IR.h"

namespace coconet::backend::detail {

using namespace ir;

// ---- Types ---------------------------------------------------------------------------------
inline const char* storageType(DType t) {
  switch (t) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I8: return "int8_t";
    case DType::U8:
    case DType::Bool: return "uint8_t";
    case DType::I32: return "int";
    default: return "long long";
  }
}

// The type an expression node is computed in (the interpreter's rules).
inline const char* computeType(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16:
    case DType::F32: return "float";
    case DType::Bool: return "bool";
    case DType::I8:
    case DType::U8:
    case DType::I32:
    case DType::I64: return "long long";
    default: return "double";  // f64 and literals
  }
}

inline const char* ncclType(DType t) {
  switch (t) {
    case DType::F16: return "ncclHalf";
    case DType::BF16: return "ncclBfloat16";
    case DType::F32: return "ncclFloat";
    case DType::F64: return "ncclDouble";
    case DType::I8: return "ncclInt8";
    case DType::U8:
    case DType::Bool: return "ncclUint8";
    case DType::I32: return "ncclInt32";
    default: return "ncclInt64";
  }
}

inline const char* cudaDataType(DType t) {
  switch (t) {
    case DType::F16: return "CUDA_R_16F";
    case DType::BF16: return "CUDA_R_16BF";
    case DType::F64: return "CUDA_R_64F";
    default: return "CUDA_R_32F";
  }
}

inline const char* ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "ncclSum";
    case ReduceOp::Prod: return "ncclProd";
    case ReduceOp::Max: return "ncclMax";
    case ReduceOp::Min: return "ncclMin";
  }
  return "ncclSum";
}

// A user's name as a C++ identifier of the generated code: '.' (an inner stage's name) becomes
// '_', and a name the generated sources could not declare as it is gets a trailing '_'.
std::string ident(const std::string& s);
// Whether a name is a C++ keyword or alternative token, reserved (`__x`, `_X`, POSIX's `x_t`), a
// macro or global of the C, C++, CUDA, cuBLAS or NCCL headers the generated code includes
// (`errno`, `NULL`, `stdout`, `cudaStream_t`, `ncclComm_t`, `float4`), or a name the generated code
// itself uses unqualified (`coconet_rt`, `std`, `CHECK`).
bool reservedInGeneratedCode(const std::string& s);
// A program's name as its class's name (ident, and never one of the class's members' names).
std::string className(const std::string& program);
// Text for a // comment of the generated sources: control characters and backslashes as \xNN
// (a newline in a file name would end the comment, a backslash before one continue it).
std::string commentText(const std::string& s);

inline std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A size expression as C++ over the run's sizes (sz.s_NAME) and the world size (P_), its
// arithmetic checked by the function's `const coconet_rt::SizeMath S_` (the caller's sizes may
// overflow it): "(sz.s_H)", "S_.mul(sz.s_B, sz.s_S)".
inline std::string cxx(const SizeExpr& e) {
  static const SizeExpr::Spelling spelling{[](const std::string& n) { return n == "world.size" ? std::string("P_") : "sz.s_" + n; },
                                           [](int64_t c) { return std::to_string(c) + "LL"; },
                                           [](const std::string& a, const std::string& b) { return "S_.add(" + a + ", " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "S_.mul(" + a + ", " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "S_.div(" + a + ", " + b + ")"; },
                                           [](const std::string& a, const std::string& b) { return "S_.mod(" + a + ", " + b + ")"; }};
  return "(" + e.spell(spelling) + ")";
}

}  // namespace coconet::backend::detail
