// The ANTLR-owning front end class, the diagnostic error listener, and the pre-parse checks.
#include "frontend/Parser.h"

#include <cctype>
#include <set>
#include <sstream>

#include "CnetLexer.h"
#include "CnetParser.h"
#include "antlr4-runtime.h"
#include "frontend/ASTBuilder.h"
#include "support/SyntaxError.h"

namespace coconet::frontend {
namespace {

using cnetgen::CnetLexer;
using cnetgen::CnetParser;

SourceLoc locOf(uint32_t file, const antlr4::Token* t) {
  return {file, static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
}

// Token names as a user reads them: "';'" for literals, "identifier" for IDENT.
std::string tokenDisplay(const antlr4::dfa::Vocabulary& vocab, size_t type) {
  if (type == antlr4::Token::EOF) return "end of file";
  std::string lit = vocab.getLiteralName(type);
  if (!lit.empty()) return lit;
  std::string sym = vocab.getSymbolicName(type);
  if (sym == "IDENT") return "identifier";
  if (sym == "INT") return "integer";
  if (sym == "FLOAT") return "number";
  return sym;
}

std::string describeToken(const antlr4::Token* t) {
  if (!t || t->getType() == antlr4::Token::EOF) return "end of file";
  return quote(t->getText());
}

// Reports syntax errors in our format instead of ANTLR's console output.
class DiagnosticListener : public antlr4::BaseErrorListener {
public:
  DiagnosticListener(uint32_t file, DiagnosticEngine& d) : file_(file), diags_(d) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line, size_t col, const std::string& msg,
                   std::exception_ptr) override {
    auto* parser = dynamic_cast<antlr4::Parser*>(recognizer);
    // What the parser's recovery finds after a keyword used as a name, on that line, follows
    // from it: the one error says it.
    if (keywordLine_ && line == keywordLine_) return;
    SyntaxErrorPlace place = placeSyntaxError(file_, parser, offending, line, col);
    std::string text;
    if (parser) {
      antlr4::misc::IntervalSet expected;
      try {
        expected = parser->getExpectedTokens();
      } catch (...) {}
      // A keyword where a name may stand (`in local : ...`, then `local * 2.0`): said once per
      // keyword, at its first misuse.
      // A keyword assigned to (`state = x * 2.0;`) is one too: the '=' after it is the offence.
      antlr4::Token* word = offending;
      if (offending && offending->getText() == "=" && offending->getTokenIndex() > 0)
        word = parser->getTokenStream()->get(offending->getTokenIndex() - 1);
      const bool asName = word == offending ? expected.contains(static_cast<size_t>(CnetParser::IDENT)) : word != nullptr;
      if (word && asName && isKeyword(parser->getVocabulary(), word->getType())) {
        keywordLine_ = line;
        if (!keywordsNamed_.insert(word->getText()).second) return;
        diags_.error(locOf(file_, word), quote(word->getText()) + " is a keyword; it cannot be used as a name",
                     static_cast<uint32_t>(word->getText().size()));
        return;
      }
      std::vector<std::string> names;
      for (size_t t : expected.toList()) {
        if (t == CnetParser::BAD_CHAR || t == CnetParser::UNTERMINATED_COMMENT) continue;
        names.push_back(tokenDisplay(parser->getVocabulary(), t));
      }
      if (!names.empty() && names.size() <= 5) {
        SyntaxErrorReport r = expectedReport(names, place, describeToken(offending));
        if (msg.rfind("missing", 0) == 0 && names.size() == 1 && r.loc == place.at)
          r.text = "expected " + names[0] + " before " + describeToken(offending);
        diags_.error(r.loc, r.text, r.length);
        return;
      }
      text = "unexpected " + describeToken(offending);
    } else {
      text = msg;
    }
    diags_.error(place.at, text, place.length);
  }

private:
  // A token spelled as a word in the grammar ('local', 'state', 'f32', ...).
  static bool isKeyword(const antlr4::dfa::Vocabulary& vocab, size_t type) {
    const std::string lit = vocab.getLiteralName(type);
    return lit.size() > 2 && std::isalpha(static_cast<unsigned char>(lit[1]));
  }
  uint32_t file_;
  DiagnosticEngine& diags_;
  std::set<std::string> keywordsNamed_;
  size_t keywordLine_ = 0;
};

// Rejects lexical problems and excessive nesting before the parser sees the tokens.
bool checkTokens(const std::vector<antlr4::Token*>& toks, uint32_t file, DiagnosticEngine& diags) {
  bool ok = true;
  unsigned depth = 0, unaryRun = 0;
  size_t prevType = 0;
  for (auto* t : toks) {
    size_t type = t->getType();
    if (type == CnetLexer::BAD_CHAR) {
      diags.error(locOf(file, t), "unexpected character " + quote(t->getText()));
      ok = false;
    } else if (type == CnetLexer::UNTERMINATED_COMMENT) {
      diags.error(locOf(file, t), "unterminated comment", 2);
      ok = false;
    } else if (type == CnetLexer::IDENT && t->getText().size() > kMaxIdentifierLength) {
      diags.error(locOf(file, t), "identifier is too long (" + std::to_string(t->getText().size()) + " characters; the limit is " +
                                      std::to_string(kMaxIdentifierLength) + ")");
      ok = false;
    }
    // A '-' or '!' after an operator, an opening bracket, '=' or ',' is a prefix operator;
    // each one nests the parse one level deeper, like a parenthesis.
    bool prefix = (type == CnetLexer::MINUS || type == CnetLexer::BANG) && prevType != CnetLexer::IDENT && prevType != CnetLexer::INT &&
                  prevType != CnetLexer::FLOAT && prevType != CnetLexer::RPAREN && prevType != CnetLexer::RBRACK &&
                  prevType != CnetLexer::TRUE && prevType != CnetLexer::FALSE;
    unaryRun = prefix ? unaryRun + 1 : 0;
    if (type == CnetLexer::LPAREN || type == CnetLexer::LBRACK || type == CnetLexer::LBRACE) ++depth;
    if ((type == CnetLexer::RPAREN || type == CnetLexer::RBRACK || type == CnetLexer::RBRACE) && depth) --depth;
    if (depth + unaryRun > kMaxNesting) {
      diags.error(locOf(file, t), "expression is nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
      return false;
    }
    if (diags.tooManyErrors()) return false;
    prevType = type;
  }
  return ok;
}

}  // namespace

std::unique_ptr<ast::Module> parseFile(const SourceManager& sm, uint32_t file, DiagnosticEngine& diags) {
  const std::string& text = sm.contents(file);
  auto problems = checkEncoding(text);
  if (!problems.empty()) {
    diags.error(sm.locOfOffset(file, problems[0].offset), problems[0].message);
    return nullptr;
  }

  antlr4::ANTLRInputStream input(text);
  CnetLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  if (!checkTokens(tokens.getTokens(), file, diags)) return nullptr;

  CnetParser parser(&tokens);
  parser.removeErrorListeners();
  // Fast path: SLL prediction, bail at the first error; on error, re-parse with full LL and
  // error recovery so that several syntax errors can be reported in one run.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  CnetParser::File_Context* tree = nullptr;
  try {
    tree = parser.file_();
  } catch (const antlr4::ParseCancellationException&) {
    tree = nullptr;
  }
  if (!tree) {
    tokens.seek(0);
    parser.reset();
    DiagnosticListener listener(file, diags);
    parser.addErrorListener(&listener);
    parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
    unsigned before = diags.errorCount();
    tree = parser.file_();
    parser.removeErrorListeners();
    if (diags.errorCount() != before) return nullptr;
  }
  auto module = buildAST(tree, file, diags);
  if (diags.hasErrors()) return nullptr;
  return module;
}

}  // namespace coconet::frontend
