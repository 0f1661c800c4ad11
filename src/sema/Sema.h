// Semantic analysis: the untyped AST of a program becomes a typed AST.
//
// Resolves names (parameters, tensors, groups, named statements, imported modules), inlines
// calls of `def` functions (each call is typed on its own arguments), and gives every
// expression its element type, symbolic shape and layout with the inference rules of
// docs/language.md. Size constraints that the program states (`require`) or that its layouts
// imply (a sliced dimension must divide by the group's size) are collected as requirements.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ast/AST.h"
#include "support/Diagnostics.h"

namespace coconet::sema {

using ast::Requirement;

struct CheckedProgram {
  const ast::ProgramDecl* decl = nullptr;
  std::deque<ast::Symbol> symbols;    // every symbol of the program (stable addresses)
  std::deque<ast::GroupInfo> groups;  // groups[0] is the world
  std::vector<Requirement> requirements;
  std::vector<const ast::Symbol*> params, inputs, states, outputs;
  std::map<const ast::Symbol*, const ast::Symbol*> updates;  // state -> its new value
};

struct Options {
  std::vector<std::pair<std::string, std::string>> defines;  // -D NAME=VALUE, in order
};

struct Compilation {
  SourceManager sources;
  std::vector<std::unique_ptr<ast::Module>> modules;  // modules[0]: the main file
  std::vector<std::unique_ptr<CheckedProgram>> programs;
};

// Finds, reads and parses the module an `import NAME;` names (the driver's: sema reads no files);
// nullptr after it reported why at the import (`at`, `length`).
using ModuleLoader = std::function<std::unique_ptr<ast::Module>(const std::string& name, SourceLoc at, uint32_t length)>;

// Checks every program of `main` (parsed, its name set), loading the modules it imports with
// `load`. Diagnostics go to `diags`; the result is complete only when no error was reported.
void check(Compilation& c, std::unique_ptr<ast::Module> main, const Options& opts, const ModuleLoader& load, DiagnosticEngine& diags);

}  // namespace coconet::sema
