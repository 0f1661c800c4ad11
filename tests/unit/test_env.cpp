// The COCONET_* environment variables of generated programs (src/backend/runtime/coconet_env.h,
// plain C++, so it runs here without CUDA): one parser, its diagnostics, the --help listing, the
// documentation in docs/language.md section 19.4, and no other place in the runtime reading one.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backend/runtime/coconet_env.h"

using namespace coconet_rt;

namespace {

using coconet::test::sourceFile;

// envValue(id, fallback) with the variable set to `text` (nullptr: unset), and what it wrote to stderr.
long long valueWith(Env id, const char* text, long long fallback, std::string& err) {
  const char* name = envSpec(id).name;
  if (text)
    setenv(name, text, 1);
  else
    unsetenv(name);
  std::fflush(stderr);
  char path[] = "/tmp/coconet_env_testXXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = dup(2);
  dup2(fd, 2);
  const long long v = envValue(id, fallback);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  err = ss.str();
  std::remove(path);
  unsetenv(name);
  return v;
}

}  // namespace

TEST_CASE("every environment variable has one spec in the order of Env", "[env]") {
  std::vector<std::string> names;
  bool everyCall = true;
  for (int i = 0; i < static_cast<int>(Env::Count); ++i) {
    const EnvSpec& s = kEnvSpecs[i];
    INFO(s.name);
    CHECK(static_cast<int>(s.id) == i);
    CHECK(std::string(s.name).rfind("COCONET_", 0) == 0);
    CHECK(s.lo <= s.hi);
    CHECK(*s.meaning);
    CHECK((everyCall || !s.everyCall));  // those read at every call first
    everyCall = s.everyCall;
    for (const auto& n : names) CHECK(n != s.name);
    names.push_back(s.name);
  }
}

TEST_CASE("an integer variable takes whole numbers in its range and nothing else", "[env]") {
  std::string err;
  CHECK(valueWith(Env::ClaimedPush, nullptr, 4, err) == 4);
  CHECK(err.empty());
  CHECK(valueWith(Env::ClaimedPush, "", 4, err) == 4);
  CHECK(err.empty());
  CHECK(valueWith(Env::ClaimedPush, "0", 4, err) == 0);
  CHECK(valueWith(Env::ClaimedPush, "64", 4, err) == 64);
  CHECK(valueWith(Env::ClaimedPush, "17", 4, err) == 17);
  CHECK(err.empty());
  // Out of range, signs, spaces, trailing text, hex and overflow keep the default; the first is
  // reported with the range, later ones of the same variable are not.
  CHECK(valueWith(Env::ClaimedPush, "65", 4, err) == 4);
  CHECK(err == "coconet: COCONET_CLAIMED_PUSH='65' ignored: expected 0 to 64\n");
  for (const char* bad : {"-1", "+5", " 5", "5 ", "5x", "0x10", "99999999999999999999", "-", "1e3"}) {
    INFO(bad);
    CHECK(valueWith(Env::ClaimedPush, bad, 4, err) == 4);
    CHECK(err.empty());
  }
  CHECK(valueWith(Env::TailFlags, "2", 1, err) == 1);
  CHECK(err == "coconet: COCONET_TAIL_FLAGS='2' ignored: expected 0 to 1\n");
  CHECK(valueWith(Env::TimelineCall, "1099511627776", 10, err) == 1099511627776LL);
}

TEST_CASE("a word variable takes its words; the first is 0", "[env]") {
  std::string err;
  CHECK(valueWith(Env::RowWise, "long", 0, err) == 1);
  CHECK(valueWith(Env::RowWise, "auto", 1, err) == 0);
  CHECK(err.empty());
  CHECK(valueWith(Env::RowWise, "Long", 0, err) == 0);
  CHECK(err == "coconet: COCONET_ROWWISE='Long' ignored: expected auto or long\n");
  CHECK(valueWith(Env::RowWise, "1", 0, err) == 0);  // told once already
  CHECK(err.empty());
}

TEST_CASE("a reported value is printed escaped and cut short", "[env]") {
  std::string err;
  CHECK(valueWith(Env::ClaimedPull, "\x1b[2J", 8, err) == 8);
  CHECK(err == "coconet: COCONET_CLAIMED_PULL='\\x1b[2J' ignored: expected 0 to 64\n");
  const std::string longText(100, '7');
  CHECK(valueWith(Env::TimelineCall, longText.c_str(), 3, err) == 3);
  CHECK(err == "coconet: COCONET_TIMELINE_CALL='" + std::string(64, '7') + "...' ignored: expected 1 to 1099511627776\n");
}

TEST_CASE("--help lists every variable with its values", "[env]") {
  std::ostringstream os;
  printEnvHelp(os);
  for (const EnvSpec& s : kEnvSpecs) {
    INFO(s.name);
    CHECK(os.str().find(std::string("  ") + s.name + " (") != std::string::npos);
  }
  CHECK(os.str().find("COCONET_ROWWISE (auto or long, read at every call): long:") != std::string::npos);
  CHECK(os.str().find("COCONET_PDL (0 to 1, read once): 0:") != std::string::npos);
}

TEST_CASE("docs/language.md lists the variables in the order of Env", "[env]") {
  const std::string doc = sourceFile("docs/language.md");
  const size_t at = doc.find("### 19.4 Environment variables of a run");
  REQUIRE(at != std::string::npos);
  const std::string section = doc.substr(at, doc.find("\n## ", at) - at);
  std::regex row("\\n\\| `(COCONET_[A-Z_]+)` \\|");
  std::vector<std::string> listed;
  for (std::sregex_iterator it(section.begin(), section.end(), row), end; it != end; ++it) listed.push_back((*it)[1]);
  std::vector<std::string> names;
  int everyCall = 0;
  for (const EnvSpec& s : kEnvSpecs) {
    names.push_back(s.name);
    everyCall += s.everyCall;
  }
  CHECK(listed == names);
  const char* counts[] = {"", "first", "first two", "first three", "first four", "first five", "first six", "first seven", "first eight"};
  REQUIRE(everyCall < 9);
  CHECK(section.find(std::string("The ") + counts[everyCall] + " are read at every call") != std::string::npos);
}

TEST_CASE("no runtime file reads a COCONET_ variable but through the parser", "[env]") {
  std::vector<std::string> files = {"src/backend/runtime/coconet_runtime.cuh", "src/backend/runtime/coconet_device.cuh",
                                    "src/backend/runtime/driver_main.cu.in"};
  for (const char* dir : {"src/backend/runtime/common", "src/backend/runtime/device"})  // the headers' parts
    for (auto& e : std::filesystem::directory_iterator(std::string(COCONETC_SOURCE_STDLIB) + "/../" + dir))
      files.push_back(std::string(dir) + "/" + e.path().filename().string());
  REQUIRE(files.size() > 5);
  for (const std::string& f : files) {
    INFO(f);
    const std::string text = sourceFile(f);
    CHECK(text.find("getenv(\"COCONET") == std::string::npos);
    CHECK(text.find("getenv(name") == std::string::npos);
  }
}
