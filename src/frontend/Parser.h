// The .cnet front end: bytes -> tokens -> parse tree -> untyped AST.
//
// Parser owns the ANTLR objects of one parse (input stream, lexer, token stream, parser) and
// replaces ANTLR's console error listeners with one that reports our diagnostics. Before
// parsing it rejects what would otherwise crash or mislead a parser: NUL bytes, malformed
// UTF-8, unterminated comments, stray characters, and nesting deeper than kMaxNesting.
#pragma once

#include <memory>

#include "ast/AST.h"
#include "support/Diagnostics.h"

namespace coconet::frontend {

constexpr unsigned kMaxNesting = 256;  // brackets plus prefix operators
constexpr size_t kMaxIdentifierLength = 256;

// Parses one registered file. Returns the module (possibly partial) when no error was
// reported; nullptr after errors (diagnostics have been emitted).
std::unique_ptr<ast::Module> parseFile(const SourceManager& sm, uint32_t file, DiagnosticEngine& diags);

}  // namespace coconet::frontend
