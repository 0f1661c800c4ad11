// Builds the untyped AST from an ANTLR parse tree (internal to the front end).
#pragma once

#include <memory>

#include "CnetParser.h"
#include "ast/AST.h"
#include "support/Diagnostics.h"

namespace coconet::frontend {

std::unique_ptr<ast::Module> buildAST(cnetgen::CnetParser::File_Context* tree, uint32_t file, DiagnosticEngine& diags);

}  // namespace coconet::frontend
