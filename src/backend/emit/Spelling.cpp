// User names as identifiers and text of the generated sources.
#include <cctype>
#include <cstdio>
#include <set>
#include <string>

#include "backend/emit/Spelling.h"

namespace coconet::backend::detail {

bool reservedInGeneratedCode(const std::string& s) {
  static const std::set<std::string> names = {
      // C++20 keywords and alternative tokens
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "char8_t",
      "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue",
      "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit",
      "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
      "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "final", "override", "import", "module",
      // macros and globals of the C and C++ headers
      "NULL", "EOF", "errno", "stdin", "stdout", "stderr", "assert", "offsetof", "BUFSIZ", "FILENAME_MAX", "CHAR_BIT", "INT_MAX", "INT_MIN",
      "LLONG_MAX", "LLONG_MIN", "SIZE_MAX", "HUGE_VAL", "INFINITY", "NAN", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX", "MB_CUR_MAX",
      "FLT_MAX", "DBL_MAX", "FLT_MIN", "DBL_MIN", "M_PI", "M_E", "FP_NAN", "FP_INFINITE", "FP_ZERO", "FP_NORMAL", "FP_SUBNORMAL", "unix",
      "linux", "main", "environ", "signbit", "isnan", "isinf", "isfinite", "fpclassify", "setjmp", "va_arg", "va_start", "va_end",
      // CUDA's types and built-in variables
      "dim3", "half", "half2", "nv_bfloat16", "nv_bfloat162", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "clock", "printf",
      "malloc", "free", "memcpy", "memset", "min", "max", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "pow", "fabs", "fmin", "fmax",
      "floor", "ceil", "round", "erf",
      // the generated code's own names
      "std", "coconet_rt", "coconet_gen", "CHECK"};
  if (names.count(s)) return true;
  if (s.size() >= 2 && s[0] == '_' && (s[1] == '_' || std::isupper(static_cast<unsigned char>(s[1])))) return true;
  if (s.find("__") != std::string::npos) return true;
  if (s.size() >= 2 && s.compare(s.size() - 2, 2, "_t") == 0) return true;
  // Prefixes of the CUDA, cuBLAS and NCCL APIs and of the runtime (cudaStream_t, CUBLAS_OP_N,
  // ncclSum, coconet_NAME_run).
  for (const char* p : {"cuda", "CUDA", "cublas", "CUBLAS", "nccl", "NCCL", "CU_", "cu", "coconet", "COCONET", "__nv"})
    if (s.rfind(p, 0) == 0 && (std::string(p) != "cu" || (s.size() > 2 && std::isupper(static_cast<unsigned char>(s[2]))))) return true;
  // CUDA's vector types: char1..4, uint2, longlong4, float4, double2, ...
  for (const char* base :
       {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong", "float", "double"}) {
    const std::string b = base;
    if (s.size() == b.size() + 1 && s.compare(0, b.size(), b) == 0 && s.back() >= '1' && s.back() <= '4') return true;
  }
  return false;
}

namespace {
std::string sanitized(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}
}  // namespace

std::string ident(const std::string& s) {
  std::string r = sanitized(s);
  return reservedInGeneratedCode(r) ? r + "_" : r;
}

std::string className(const std::string& program) {
  // The class's members: a class cannot declare a member of its own name.
  static const std::set<std::string> members = {"run", "finish", "localElements", "localShape", "rank", "worldSize", "devReady", "Dev_"};
  std::string r = sanitized(program);
  return reservedInGeneratedCode(r) || members.count(r) || r.back() == '_' ? r + "_program" : r;
}

std::string commentText(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    if (c >= 0x20 && c != 0x7f && c != '\\') {  // a backslash ending the line would continue the comment
      r += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    }
  }
  return r;
}

}  // namespace coconet::backend::detail
