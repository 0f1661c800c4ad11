// coconet_env.h: the COCONET_* environment variables a generated program reads, declared in one
// table and parsed in one place. Each overrides a choice the code makes by measurement (for A/B
// timings of one build: tools/bench/gpu, BENCH_ENV_ROWS) or switches on a form for tests; the
// program's --help lists them. Plain C++ (no CUDA): written into each output folder by
// `coconetc compile` and included by coconet_runtime.cuh.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>

namespace coconet_rt {

// Those read at every call come first.
enum class Env : int {
  ClaimedPush,
  ClaimedPull,
  TailFlags,
  RowWise,
  Pdl,
  MultiRankForms,
  TimelineCall,
  Count
};

// One variable: its name, the integers it takes (lo .. hi), or the words it takes instead
// (`words`, separated by '|': the first word is 0, the next 1, ...), whether it is read at every
// call (so that one process may time both settings) or once per process, and what it does.
struct EnvSpec {
  Env id;
  const char* name;
  long long lo, hi;
  const char* words;  // nullptr: an integer from lo to hi
  bool everyCall;
  const char* meaning;
};

inline constexpr EnvSpec kEnvSpecs[] = {
    {Env::ClaimedPush, "COCONET_CLAIMED_PUSH", 0, 64, nullptr, true,
     "units per thread of a device group's claimed push tiles on any ranks and rounds; 0: fixed parts"},
    {Env::ClaimedPull, "COCONET_CLAIMED_PULL", 0, 64, nullptr, true,
     "units per thread of a tail's claimed pull tiles on any ranks and rounds; 0: fixed parts"},
    {Env::TailFlags, "COCONET_TAIL_FLAGS", 0, 1, nullptr, true, "0: tails wait at a barrier per round, not on flags"},
    {Env::RowWise, "COCONET_ROWWISE", 0, 1, "auto|long", true,
     "long: every row kernel takes a block a row and reads the row twice"},
    {Env::Pdl, "COCONET_PDL", 0, 1, nullptr, false,
     "0: no programmatic dependent launch (kernels of one call do not overlap)"},
    {Env::MultiRankForms, "COCONET_MULTI_RANK_FORMS", 0, 1, nullptr, false,
     "1: at one rank, device groups run their multi-rank kernels over a team of one (tests)"},
    {Env::TimelineCall, "COCONET_TIMELINE_CALL", 1, 1LL << 40, nullptr, false,
     "N: a --timeline build records the N-th call (default 10)"},
};
constexpr bool envSpecsInOrder() {
  for (int i = 0; i < static_cast<int>(Env::Count); ++i)
    if (static_cast<int>(kEnvSpecs[i].id) != i) return false;
  return true;
}
static_assert(sizeof(kEnvSpecs) / sizeof(kEnvSpecs[0]) == static_cast<int>(Env::Count) && envSpecsInOrder(),
              "one spec per variable, in the order of Env");

inline constexpr const EnvSpec& envSpec(Env id) { return kEnvSpecs[static_cast<int>(id)]; }

namespace detail {
// The value of `text` for `s`, or false where it is none of the values s takes.
inline bool parseEnv(const EnvSpec& s, const char* text, long long& value) {
  if (s.words) {
    long long i = 0;
    for (const char* w = s.words;; ++i) {
      const char* bar = std::strchr(w, '|');
      const size_t n = bar ? static_cast<size_t>(bar - w) : std::strlen(w);
      if (std::strlen(text) == n && std::strncmp(text, w, n) == 0) {
        value = i;
        return true;
      }
      if (!bar) return false;
      w = bar + 1;
    }
  }
  const char* digits = *text == '-' ? text + 1 : text;
  if (*digits < '0' || *digits > '9') return false;  // strtoll would skip spaces and signs
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (*end || errno == ERANGE || v < s.lo || v > s.hi) return false;
  value = v;
  return true;
}
// Where the variable's value is expected, for messages: "0 to 64", "auto or long".
inline void printValues(std::ostream& os, const EnvSpec& s) {
  if (!s.words) {
    os << s.lo << " to " << s.hi;
    return;
  }
  const std::string words = s.words;
  const size_t last = words.rfind('|');
  for (size_t i = 0; i < words.size(); ++i)
    if (words[i] != '|') os << words[i];
    else os << (i == last ? " or " : ", ");
}
}  // namespace detail

// The variable's value where it is set to one it takes; else `fallback` (unset or empty: the
// default). A value it does not take is reported on stderr (once per variable and process) and
// ignored.
inline long long envValue(Env id, long long fallback) {
  const EnvSpec& s = envSpec(id);
  const char* text = std::getenv(s.name);
  if (!text || !*text) return fallback;
  long long v = 0;
  if (detail::parseEnv(s, text, v)) return v;
  static std::atomic<bool> told[static_cast<int>(Env::Count)] = {};
  if (!told[static_cast<int>(id)].exchange(true)) {
    std::ostringstream msg;
    msg << "coconet: " << s.name << "='";
    for (const char* c = text; *c && c - text < 64; ++c)  // printable, and not a screenful
      if (*c >= ' ' && *c <= '~') msg << *c;
      else msg << "\\x" << "0123456789abcdef"[(*c >> 4) & 15] << "0123456789abcdef"[*c & 15];
    msg << (std::strlen(text) > 64 ? "...' ignored: expected " : "' ignored: expected ");
    detail::printValues(msg, s);
    std::fprintf(stderr, "%s\n", msg.str().c_str());
  }
  return fallback;
}

// The variables for a program's --help.
inline void printEnvHelp(std::ostream& os) {
  os << "environment (overrides for A/B timings and tests; a value outside the range is reported and ignored):\n";
  for (const EnvSpec& s : kEnvSpecs) {
    os << "  " << s.name << " (";
    detail::printValues(os, s);
    os << (s.everyCall ? ", read at every call" : ", read once") << "): " << s.meaning << "\n";
  }
}

}  // namespace coconet_rt
