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
  for (int i = 0; i < static_cast<int>(Env::Count); ++i) {
    const EnvSpec& s = kEnvSpecs[i];
    INFO(s.name);
    CHECK(static_cast<int>(s.id) == i);
    CHECK(std::string(s.name).rfind("COCONET_", 0) == 0);
    CHECK(s.lo <= s.hi);
    CHECK(*s.meaning);
    for (const auto& n : names) CHECK(n != s.name);
    names.push_back(s.name);
  }
}

TEST_CASE("the environment holds test and debug switches only", "[env]") {
  // The performance choices are tuning-table entries (coconetc tune measures them); only these
  // two remain, and the variables that once set such choices are gone.
  std::vector<std::string> names;
  for (const EnvSpec& s : kEnvSpecs) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"COCONET_MULTI_RANK_FORMS", "COCONET_TIMELINE_CALL"});
}

TEST_CASE("an integer variable takes whole numbers in its range and nothing else", "[env]") {
  std::string err;
  CHECK(valueWith(Env::TimelineCall, nullptr, 10, err) == 10);
  CHECK(err.empty());
  CHECK(valueWith(Env::TimelineCall, "", 10, err) == 10);
  CHECK(err.empty());
  CHECK(valueWith(Env::TimelineCall, "1", 10, err) == 1);
  CHECK(valueWith(Env::TimelineCall, "64", 10, err) == 64);
  CHECK(valueWith(Env::TimelineCall, "1099511627776", 10, err) == 1099511627776LL);
  CHECK(err.empty());
  // Out of range, signs, spaces, trailing text, hex and overflow keep the default; the first is
  // reported with the range, later ones of the same variable are not.
  CHECK(valueWith(Env::TimelineCall, "0", 10, err) == 10);
  CHECK(err == "coconet: COCONET_TIMELINE_CALL='0' ignored: expected 1 to 1099511627776\n");
  for (const char* bad : {"-1", "+5", " 5", "5 ", "5x", "0x10", "99999999999999999999", "1099511627777", "-", "1e3"}) {
    INFO(bad);
    CHECK(valueWith(Env::TimelineCall, bad, 10, err) == 10);
    CHECK(err.empty());
  }
  CHECK(valueWith(Env::MultiRankForms, "1", 0, err) == 1);
  CHECK(valueWith(Env::MultiRankForms, "0", 1, err) == 0);
  CHECK(err.empty());
}

TEST_CASE("a reported value is printed escaped and cut short", "[env]") {
  // (each variable is reported once per process: TimelineCall's report is the range test's)
  std::string err;
  const std::string text = "\x1b[2J" + std::string(100, '7');
  CHECK(valueWith(Env::MultiRankForms, text.c_str(), 0, err) == 0);
  CHECK(err == "coconet: COCONET_MULTI_RANK_FORMS='\\x1b[2J" + std::string(60, '7') + "...' ignored: expected 0 to 1\n");
  CHECK(valueWith(Env::MultiRankForms, "2", 0, err) == 0);  // told once already
  CHECK(err.empty());
}

TEST_CASE("--help lists every variable with its values", "[env]") {
  std::ostringstream os;
  printEnvHelp(os);
  for (const EnvSpec& s : kEnvSpecs) {
    INFO(s.name);
    CHECK(os.str().find(std::string("  ") + s.name + " (") != std::string::npos);
  }
  CHECK(os.str().find("environment (test and debug switches") != std::string::npos);
  CHECK(os.str().find("COCONET_MULTI_RANK_FORMS (0 to 1): 1:") != std::string::npos);
  CHECK(os.str().find("COCONET_TIMELINE_CALL (1 to 1099511627776): N:") != std::string::npos);
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
  for (const EnvSpec& s : kEnvSpecs) names.push_back(s.name);
  CHECK(listed == names);
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
