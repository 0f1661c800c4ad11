// The PyTorch target's package (`--target torch`), shared by its emitters: Torch.cpp (the Python
// module, setup.py, pyproject.toml, README.md) and TorchOp.cpp (the C++ operator).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backend/Emitter.h"

namespace coconet::backend::detail {

// A tensor of the program's interface, in the order the operator takes them: inputs, then states
// (changed in place), then outputs (returned).
struct TorchTensor {
  std::string name, arg;  // program name; Python/schema argument name
  std::string role;       // "in", "state", "out"
  TensorType type;
};

// The package's files, from the program's interface.
struct TorchPackage {
  const ir::Program& p_;
  const std::string& cls_;
  const CompileOptions& o_;
  std::string cInterface;  // the C interface's declarations (NAME.h's, which the operator cannot include)
  std::string N, mod, schema;
  std::vector<TorchTensor> ts;
  std::vector<const Param*> sizes, scalars;
  int nOut = 0;
  // The optimizer class (a program with states and one input, the gradient): the state that is
  // the model's parameter, the states that start as it (its master copies), the step scalar.
  // Empty `param`: no optimizer class.
  std::string grad, param, step;
  std::set<std::string> masters;
  // Whether the update is element by element (every stage element-wise or a collective, every
  // tensor 1-D): then a param group's parameters can be one flat buffer, updated in one call.
  bool elementwise = false;

  TorchPackage(const ir::Program& p, const std::string& cls, const CompileOptions& o, std::string cInterface);
  std::string opSource() const;        // NAME_torch.cpp
  std::string moduleHead() const;      // coconet_NAME.py: loading, communicators, shapes, sizes
  std::string moduleFunction() const;  // coconet_NAME.py: the fake implementation and the function
  std::string setupSource() const;     // setup.py
  std::string pyproject() const;
  std::string readme() const;
  std::string optimizerClass() const;  // coconet_NAME.py: the torch.optim.Optimizer, if the program is one
  std::string optimizerMethods() const;
  std::string moduleClass() const;  // coconet_NAME.py: the torch.nn.Module, if the program has outputs
  void findOptimizerRoles();
  static const char* scalarSchema(const Param& p) { return p.dtype == DType::Bool ? "bool" : ast::isInteger(p.dtype) ? "int" : "float"; }
};

// Spellings: a dtype as an ATen scalar type and as a torch dtype; a program name as a Python
// identifier; a scalar's default as a Python literal; a size expression as Python.
const char* atType(DType t);
const char* pyType(DType t);
std::string pyIdent(const std::string& n);
std::string pyDefault(const Param& p);
std::string py(const SizeExpr& e);

}  // namespace coconet::backend::detail
