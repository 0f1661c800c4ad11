#include "support/SyntaxError.h"

#include "antlr4-runtime.h"

namespace coconet {

SyntaxErrorPlace placeSyntaxError(uint32_t file, antlr4::Parser* parser, antlr4::Token* offending, size_t line, size_t col) {
  SyntaxErrorPlace place;
  place.at = {file, static_cast<uint32_t>(line), static_cast<uint32_t>(col + 1)};
  const bool eof = !offending || offending->getType() == antlr4::Token::EOF;
  if (offending && !eof) place.length = static_cast<uint32_t>(offending->getStopIndex() - offending->getStartIndex() + 1);
  antlr4::Token* prev =
      parser && parser->getTokenStream() && parser->getTokenStream()->index() > 0 ? parser->getTokenStream()->LT(-1) : nullptr;
  if (!prev || prev->getType() == antlr4::Token::EOF) return place;
  if (!eof && offending->getLine() <= prev->getLine()) return place;
  const std::string text = prev->getText();
  if (text.find('\n') != std::string::npos) return place;  // a token over several lines: keep ANTLR's place
  const size_t prevLength = prev->getStopIndex() - prev->getStartIndex() + 1;
  place.after = {file, static_cast<uint32_t>(prev->getLine()), static_cast<uint32_t>(prev->getCharPositionInLine() + prevLength + 1)};
  place.afterPrevious = true;
  place.previous = quote(text);
  return place;
}

SyntaxErrorReport expectedReport(const std::vector<std::string>& names, const SyntaxErrorPlace& place, const std::string& found) {
  bool closers = place.afterPrevious && !names.empty();
  for (auto& n : names) closers = closers && (n == "';'" || n == "')'" || n == "']'" || n == "'}'" || n == "','");
  SyntaxErrorReport r;
  r.text = "expected ";
  for (size_t i = 0; i < names.size(); ++i) r.text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  if (closers) {
    r.loc = place.after;
    r.text += " after " + place.previous;
  } else {
    r.loc = place.at;
    r.length = place.length;
    r.text += ", found " + found;
  }
  return r;
}

}  // namespace coconet
