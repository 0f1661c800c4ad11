// Source files, locations and clang-style diagnostics.
//
// Every token, AST node and (later) IR node carries a SourceLoc. DiagnosticEngine prints
//   file:line:col: error: message
//   <the source line>
//   <caret under the column, ~ under the rest of the range>
// User errors and internal errors are different things: an InternalError is a compiler bug,
// and the driver reports it as such (never a crash, never expected by a test).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coconet {

struct SourceLoc {
  uint32_t file = 0;  // 0: no file (command line, built-ins)
  uint32_t line = 0;  // 1-based; 0 means unknown
  uint32_t col = 0;   // 1-based, in code points
  bool valid() const { return file != 0 && line != 0; }
  bool operator==(const SourceLoc&) const = default;
};

class SourceManager {
public:
  // Registers a buffer; returns its file id (never 0).
  uint32_t add(std::string name, std::string contents);
  const std::string& name(uint32_t file) const { return files_.at(file - 1).name; }
  const std::string& contents(uint32_t file) const { return files_.at(file - 1).contents; }
  // The text of a 1-based line, without its line break.
  std::string_view line(uint32_t file, uint32_t line) const;
  // 1-based line and code-point column of a byte offset.
  SourceLoc locOfOffset(uint32_t file, size_t offset) const;

private:
  struct File {
    std::string name, contents;
    std::vector<size_t> lineStarts;
  };
  std::vector<File> files_;
};

enum class Severity { Error, Warning, Note };

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager& sm, std::ostream& os) : sm_(sm), os_(os) {}

  // `length` is the range to underline in code points (1: just the caret).
  void report(Severity sev, SourceLoc loc, const std::string& msg, uint32_t length = 1);
  void error(SourceLoc loc, const std::string& msg, uint32_t length = 1) { report(Severity::Error, loc, msg, length); }
  void warning(SourceLoc loc, const std::string& msg, uint32_t length = 1) { report(Severity::Warning, loc, msg, length); }
  void note(SourceLoc loc, const std::string& msg, uint32_t length = 1) { report(Severity::Note, loc, msg, length); }
  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ != 0; }
  // After this many errors, the rest are dropped and one line says so.
  void setErrorLimit(unsigned n) { limit_ = n; }
  // Colours as clang's on a terminal: the place and message bold, the severity in its colour,
  // the caret line green.
  void setColor(bool on) { color_ = on; }
  bool tooManyErrors() const { return limit_ && errors_ >= limit_; }
  // Whether an error may search for a "did you mean" suggestion: each search scans every name in
  // scope, so a run makes at most kMaxSuggestions of them (as clang's spell-checking limit does),
  // and none for errors that will not print.
  static constexpr unsigned kMaxSuggestions = 50;
  bool takeSuggestion() {
    if (tooManyErrors() || suggestions_ >= kMaxSuggestions) return false;
    ++suggestions_;
    return true;
  }

private:
  const SourceManager& sm_;
  std::ostream& os_;
  unsigned errors_ = 0, warnings_ = 0, limit_ = 20, suggestions_ = 0;
  bool suppressingNotes_ = false, announcedLimit_ = false, color_ = false;
};

// A compiler bug. The driver prints it as an internal error and exits with code 3.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

[[noreturn]] void internalError(const std::string& what);
#define COCONET_ASSERT(cond, msg)                                                                               \
  do {                                                                                                          \
    if (!(cond)) ::coconet::internalError(std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " + (msg)); \
  } while (0)

// Validates raw source bytes: NUL bytes and malformed UTF-8 are reported with their offset.
struct EncodingProblem {
  size_t offset;
  std::string message;
};
std::vector<EncodingProblem> checkEncoding(std::string_view bytes, size_t maxProblems = 1);

// Text safe for a terminal: control characters, DEL and bytes of malformed UTF-8 as \xNN (a
// name or path in a message cannot move the cursor or change colours).
std::string printable(std::string_view s);
// Quotes a file path in full (printable).
inline std::string quotePath(std::string_view p) { return "'" + printable(p) + "'"; }
// Quotes a name for a message, shortening very long ones ('aaaa...aaaa' (1048576 characters)).
std::string quote(std::string_view name);

}  // namespace coconet
