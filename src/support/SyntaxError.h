// Where a syntax error is reported, shared by the .cnet and .sched parsers.
//
// ANTLR blames the token it could not use. When that token is the end of the file, or starts a
// later line than the last token the parser took (a ';' or ')' missing at the end of a line),
// the error belongs just after that last token, as clang reports it: "expected ';' after ')'".
#pragma once

#include <string>
#include <vector>

#include "support/Diagnostics.h"

namespace antlr4 {
class Parser;
class Token;
}  // namespace antlr4

namespace coconet {

struct SyntaxErrorPlace {
  SourceLoc at;                // the offending token (ANTLR's place)
  uint32_t length = 1;         // its length, 1 at the end of the file
  bool afterPrevious = false;  // the offending token starts a later line or is the end of the file
  SourceLoc after;             // just after the last token the parser took (when afterPrevious)
  std::string previous;        // that token, quoted (when afterPrevious)
};

SyntaxErrorPlace placeSyntaxError(uint32_t file, antlr4::Parser* parser, antlr4::Token* offending, size_t line, size_t col);

struct SyntaxErrorReport {
  SourceLoc loc;
  uint32_t length = 1;
  std::string text;
};

// "expected A, B or C, found 'y'" at the offending token; but when only closing punctuation
// (';' ')' ']' '}' ',') would do and the offending token is on a later line or the end of the
// file, "expected A or B after 'x'" just after the last token taken.
SyntaxErrorReport expectedReport(const std::vector<std::string>& names, const SyntaxErrorPlace& place, const std::string& found);

}  // namespace coconet
