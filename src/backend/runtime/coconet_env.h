// coconet_env.h: the COCONET_* environment variables a generated program reads, declared in one
// table and parsed in one place. They hold test and debug switches only, no performance choice:
// those are the tuning table's entries (coconet_tuning.h), which `coconetc tune` measures and
// `coconetc compile --tuning FILE` sets. The program's --help lists them. Plain C++ (no CUDA):
// written into each output folder by `coconetc compile` and included by coconet_runtime.cuh.
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

enum class Env : int {
  MultiRankForms,
  TimelineCall,
  Count
};

// One variable: its name, the integers it takes (lo .. hi) and what it does. Each is read once
// per process (COCONET_TIMELINE_CALL at a program's first call).
struct EnvSpec {
  Env id;
  const char* name;
  long long lo, hi;
  const char* meaning;
};

inline constexpr EnvSpec kEnvSpecs[] = {
    {Env::MultiRankForms, "COCONET_MULTI_RANK_FORMS", 0, 1,
     "1: at one rank, device groups run their multi-rank kernels over a team of one (tests)"},
    {Env::TimelineCall, "COCONET_TIMELINE_CALL", 1, 1LL << 40, "N: a --timeline build records the N-th call (default 10)"},
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
  const char* digits = *text == '-' ? text + 1 : text;
  if (*digits < '0' || *digits > '9') return false;  // strtoll would skip spaces and signs
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (*end || errno == ERANGE || v < s.lo || v > s.hi) return false;
  value = v;
  return true;
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
    msg << (std::strlen(text) > 64 ? "...' ignored: expected " : "' ignored: expected ") << s.lo << " to " << s.hi;
    std::fprintf(stderr, "%s\n", msg.str().c_str());
  }
  return fallback;
}

// The variables for a program's --help.
inline void printEnvHelp(std::ostream& os) {
  os << "environment (test and debug switches, read once; a value outside the range is reported and ignored):\n";
  for (const EnvSpec& s : kEnvSpecs) os << "  " << s.name << " (" << s.lo << " to " << s.hi << "): " << s.meaning << "\n";
}

}  // namespace coconet_rt
