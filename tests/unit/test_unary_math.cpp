// The math functions of one float tensor (src/ast/UnaryMath.def): each entry reaches every layer
// by that entry alone. For each: sema types it (f32 and f16 in, the same type out; a bool tensor
// is an error naming it), lowering makes its element op, the interpreter computes the
// entry's f32 value, and the CUDA backend writes the entry's expression in the kernel.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "TestSupport.h"
#include "backend/CudaEmitter.h"
#include "interp/Interpreter.h"
#include "ir/IR.h"

namespace {

struct MathFn {
  const char* name;
  float (*f32)(float);
  const char* cuda32;
};

const std::vector<MathFn>& functions() {
  static const std::vector<MathFn> all = {
#define COCONET_UNARY_MATH(k, s, f32v, f64v, cuda32, cuda64, host) {s, [](float x) -> float { return f32v; }, cuda32},
#include "ast/UnaryMath.def"
#undef COCONET_UNARY_MATH
  };
  return all;
}

std::string program(const std::string& fn, const std::string& type) {
  return "program p(N: size) {\n  in x : " + type + "[N] replicated;\n  y = " + fn + "(x);\n  return y;\n}\n";
}

}  // namespace

TEST_CASE("every unary math function types and lowers and interprets and compiles", "[unary-math]") {
  REQUIRE(functions().size() >= 7);
  for (const MathFn& f : functions()) {
    INFO(f.name);
    // sema: a float tensor in, its type out; bool refused with the function's name
    auto c32 = coconet::test::checkText("p.cnet", program(f.name, "f32"));
    auto c16 = coconet::test::checkText("p.cnet", program(f.name, "f16"));
    CHECK(coconet::ir::print(c16->lowered()).find(std::string(f.name) + "(x) } : f16[N]") != std::string::npos);
    coconet::test::Checked ci;
    coconet::driver::LoadOptions load;
    load.searchInputDir = false;
    coconet::driver::checkSource(ci.comp, "p.cnet", program(f.name, "bool"), coconet::sema::Options{}, load, ci.diags);
    CHECK(ci.diags.hasErrors());
    CHECK(ci.diagOut.str().find(std::string(f.name)) != std::string::npos);
    // lowering: one compute stage whose expression is the function of the operand
    coconet::ir::Program p = c32->lowered();
    const std::string ir = coconet::ir::print(p);
    CHECK(ir.find(std::string(f.name) + "(") != std::string::npos);
    // the interpreter: the entry's f32 value at a few points
    coconet::interp::Config cfg;
    cfg.ranks = 1;
    cfg.sizes = {{"N", 3}};
    coconet::interp::Values in;
    coconet::interp::Tensor x;
    x.shape = {3};
    x.data = {0.25, 1.0, 2.5};
    in.inputs["x"] = {x};
    auto res = coconet::interp::run(p, cfg, in);
    REQUIRE(res.outputs.size() == 1);
    for (size_t i = 0; i < 3; ++i) CHECK(res.outputs[0][0].data[i] == static_cast<double>(f.f32(static_cast<float>(x.data[i]))));
    // the CUDA backend: the entry's f32 expression in the kernel, its operand in place of `%`
    const std::string dir = (std::filesystem::temp_directory_path() / ("coconet-unary-math-" + std::string(f.name))).string();
    coconet::backend::CompileOptions o;
    o.outDir = dir;
    coconet::backend::emitCuda(p, o);
    std::ifstream cu(dir + "/p.cu");
    std::stringstream ss;
    ss << cu.rdbuf();
    std::string want = f.cuda32;
    want = want.substr(0, want.find('%'));  // the expression up to its operand
    CHECK(ss.str().find(want) != std::string::npos);
    std::filesystem::remove_all(dir);
  }
}
