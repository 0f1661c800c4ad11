#include "support/Diagnostics.h"

#include <algorithm>
#include <ostream>

namespace coconet {

uint32_t SourceManager::add(std::string name, std::string contents) {
  File f{std::move(name), std::move(contents), {0}};
  for (size_t i = 0; i < f.contents.size(); ++i)
    if (f.contents[i] == '\n') f.lineStarts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size());
}

std::string_view SourceManager::line(uint32_t file, uint32_t line) const {
  const File& f = files_.at(file - 1);
  if (line == 0 || line > f.lineStarts.size()) return {};
  size_t b = f.lineStarts[line - 1];
  size_t e = line < f.lineStarts.size() ? f.lineStarts[line] - 1 : f.contents.size();
  if (e > b && f.contents[e - 1] == '\r') --e;
  return std::string_view(f.contents).substr(b, e - b);
}

static bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

SourceLoc SourceManager::locOfOffset(uint32_t file, size_t offset) const {
  const File& f = files_.at(file - 1);
  auto it = std::upper_bound(f.lineStarts.begin(), f.lineStarts.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - f.lineStarts.begin());
  size_t start = f.lineStarts[line - 1];
  uint32_t col = 1;
  for (size_t i = start; i < offset && i < f.contents.size(); ++i)
    if (!isContinuation(static_cast<unsigned char>(f.contents[i]))) ++col;
  return {file, line, col};
}

// Prints a source line with a caret under code-point column `col`. Very long lines are cut to
// a window around the column so that a 1 MB line prints as one short line.
// ANSI escapes of clang's diagnostic colours.
constexpr const char* kReset = "\033[0m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kCaret = "\033[0;1;32m";  // green
static const char* severityColor(Severity sev) {
  return sev == Severity::Error ? "\033[0;1;31m" : sev == Severity::Warning ? "\033[0;1;35m" : "\033[0;1;30m";
}

static void printSnippet(std::ostream& os, std::string_view text, uint32_t col, uint32_t length, bool color) {
  // Split into code points (byte ranges).
  std::vector<std::pair<size_t, size_t>> cps;
  for (size_t i = 0; i < text.size();) {
    size_t j = i + 1;
    while (j < text.size() && isContinuation(static_cast<unsigned char>(text[j]))) ++j;
    cps.push_back({i, j});
    i = j;
  }
  const size_t kWindow = 100;
  size_t c = col ? col - 1 : 0;
  if (c > cps.size()) c = cps.size();
  size_t first = 0, last = cps.size();
  bool cutLeft = false, cutRight = false;
  if (cps.size() > 2 * kWindow) {
    first = c > kWindow / 2 ? c - kWindow / 2 : 0;
    last = std::min(cps.size(), first + kWindow);
    cutLeft = first > 0;
    cutRight = last < cps.size();
  }
  std::string line, marks;
  if (cutLeft) {
    line += "...";
    marks += "   ";
  }
  for (size_t k = first; k < last; ++k) {
    std::string_view cp = text.substr(cps[k].first, cps[k].second - cps[k].first);
    // Control characters and malformed bytes print as '?', so a binary file cannot garble
    // the terminal; each stays one column wide.
    unsigned char c0 = static_cast<unsigned char>(cp[0]);
    bool printable = cp == "\t" || (cp.size() == 1 ? c0 >= 0x20 && c0 < 0x7f : checkEncoding(cp).empty());
    line += printable ? cp : std::string_view("?");
    if (k < c) marks += (cp == "\t" ? '\t' : ' ');
  }
  if (cutRight) line += "...";
  marks += '^';
  size_t underline = std::min<size_t>(length ? length - 1 : 0, last > c + 1 ? last - c - 1 : 0);
  marks.append(underline, '~');
  if (color)
    os << line << '\n' << kCaret << marks << kReset << '\n';
  else
    os << line << '\n' << marks << '\n';
}

void DiagnosticEngine::report(Severity sev, SourceLoc loc, const std::string& msg, uint32_t length) {
  if (sev == Severity::Note && suppressingNotes_) return;
  if (sev == Severity::Error) {
    if (limit_ && errors_ >= limit_) {
      suppressingNotes_ = true;
      if (!announcedLimit_) {
        os_ << "error: too many errors emitted, stopping now\n";
        announcedLimit_ = true;
      }
      return;
    }
    ++errors_;
  }
  if (sev == Severity::Warning) ++warnings_;
  suppressingNotes_ = false;
  bool atLimit = sev == Severity::Error && limit_ && errors_ == limit_;
  const char* word = sev == Severity::Error ? "error" : sev == Severity::Warning ? "warning" : "note";
  const std::string where =
      loc.valid() ? printable(sm_.name(loc.file)) + ':' + std::to_string(loc.line) + ':' + std::to_string(loc.col) : "coconetc";
  if (color_)
    os_ << kBold << where << ": " << severityColor(sev) << word << ": " << kReset << kBold << printable(msg) << kReset << '\n';
  else
    os_ << where << ": " << word << ": " << printable(msg) << '\n';
  if (loc.valid()) printSnippet(os_, sm_.line(loc.file, loc.line), loc.col, length, color_);
  if (atLimit && !announcedLimit_) {
    os_ << "error: too many errors emitted, stopping now\n";
    announcedLimit_ = true;
    suppressingNotes_ = true;
  }
}

void internalError(const std::string& what) { throw InternalError(what); }

std::vector<EncodingProblem> checkEncoding(std::string_view s, size_t maxProblems) {
  std::vector<EncodingProblem> out;
  auto add = [&](size_t off, std::string m) { out.push_back({off, std::move(m)}); };
  auto hex = [](unsigned char c) {
    const char* d = "0123456789abcdef";
    return std::string("0x") + d[c >> 4] + d[c & 15];
  };
  for (size_t i = 0; i < s.size() && out.size() < maxProblems;) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) {
      add(i, "source contains a NUL byte; is this a binary file?");
      ++i;
      continue;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
      min = 0x10000;
    } else {
      add(i, "invalid UTF-8 byte " + hex(c));
      ++i;
      continue;
    }
    bool ok = true;
    for (size_t k = 1; ok && k <= n; ++k) {
      if (i + k >= s.size() || !isContinuation(static_cast<unsigned char>(s[i + k])))
        ok = false;
      else
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      add(i, "invalid UTF-8 sequence starting with byte " + hex(c));
      ++i;
      continue;
    }
    i += n + 1;
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = n == 1 ? c >= 0x20 && c != 0x7f : n > 1 && i + n <= s.size() && checkEncoding(s.substr(i, n)).empty();
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      const char* d = "0123456789abcdef";
      out += std::string("\\x") + d[c >> 4] + d[c & 15];
      ++i;
    }
  }
  return out;
}

std::string quote(std::string_view name) {
  if (name.size() <= 64) return "'" + printable(name) + "'";
  return "'" + printable(name.substr(0, 16)) + "..." + printable(name.substr(name.size() - 8)) + "' (" + std::to_string(name.size()) +
         " characters)";
}

}  // namespace coconet
