// Diagnostic formatting, encoding checks and name suggestions.
#include <catch2/catch.hpp>
#include <sstream>

#include "support/Diagnostics.h"
#include "support/Strings.h"

using namespace coconet;

TEST_CASE("diagnostics are clang-style with a caret and a range", "[diag]") {
  SourceManager sm;
  uint32_t f = sm.add("a.cnet", "line one\n  y = foo(x);\n");
  std::ostringstream os;
  DiagnosticEngine d(sm, os);
  d.error({f, 2, 7}, "unknown operation 'foo'", 3);
  CHECK(os.str() == "a.cnet:2:7: error: unknown operation 'foo'\n  y = foo(x);\n      ^~~\n");
  CHECK(d.errorCount() == 1);
}

TEST_CASE("columns count code points and tabs are kept", "[diag]") {
  SourceManager sm;
  uint32_t f = sm.add("u.cnet", "// \xc3\xa9t\xc3\xa9\n\tx = \xce\xb1;\n");
  CHECK(sm.locOfOffset(f, 4) == SourceLoc{f, 1, 5});  // after the 2-byte e-acute
  std::ostringstream os;
  DiagnosticEngine d(sm, os);
  d.error({f, 2, 6}, "unexpected character");
  CHECK(os.str() == "u.cnet:2:6: error: unexpected character\n\tx = \xce\xb1;\n\t    ^\n");
}

TEST_CASE("long lines are cut to a window around the column", "[diag]") {
  SourceManager sm;
  std::string line(100000, 'a');
  uint32_t f = sm.add("l.cnet", line);
  std::ostringstream os;
  DiagnosticEngine d(sm, os);
  d.error({f, 1, 50000}, "too long");
  CHECK(os.str().size() < 400);
  CHECK(os.str().find("...") != std::string::npos);
}

TEST_CASE("the error limit stops the flood", "[diag]") {
  SourceManager sm;
  uint32_t f = sm.add("m.cnet", "x\n");
  std::ostringstream os;
  DiagnosticEngine d(sm, os);
  d.setErrorLimit(3);
  for (int i = 0; i < 10; ++i) d.error({f, 1, 1}, "e");
  CHECK(d.errorCount() == 3);
  CHECK(os.str().find("too many errors emitted") != std::string::npos);
}

TEST_CASE("encoding problems are found with their offsets", "[diag]") {
  CHECK(checkEncoding("plain ascii").empty());
  CHECK(checkEncoding("caf\xc3\xa9").empty());
  auto nul = checkEncoding(std::string("ab\0c", 4));
  REQUIRE(nul.size() == 1);
  CHECK(nul[0].offset == 2);
  auto bad = checkEncoding("ok\xff");
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].offset == 2);
  CHECK(checkEncoding("\xc3").size() == 1);          // truncated sequence
  CHECK(checkEncoding("\xc0\xaf").size() == 1);      // overlong encoding
  CHECK(checkEncoding("\xed\xa0\x80").size() == 1);  // surrogate
}

TEST_CASE("suggestions pick a close name", "[diag]") {
  CHECK(editDistance("matmul", "matmal", 2) == 1);
  CHECK(editDistance("abc", "xyzw", 2) == 3);
  CHECK(closestMatch("allredcue", {"allreduce", "all_gather"}) == "allreduce");
  CHECK(closestMatch("zzz", {"allreduce"}).empty());
  CHECK(quote("x") == "'x'");
  CHECK(quote(std::string(1000, 'a')).find("(1000 characters)") != std::string::npos);
}
