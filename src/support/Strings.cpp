#include "support/Strings.h"

#include <algorithm>

namespace coconet {

size_t editDistance(const std::string& a, const std::string& b, size_t max) {
  if (a.size() > b.size() + max || b.size() > a.size() + max) return max + 1;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      best = std::min(best, cur[j]);
    }
    if (best > max) return max + 1;
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(const std::string& name, const std::vector<std::string>& candidates) {
  if (name.size() > 64) return "";
  std::string best;
  size_t bestD = 3;
  for (auto& c : candidates) {
    size_t d = editDistance(name, c, 2);
    size_t allowed = name.size() <= 4 ? 1 : 2;
    if (d < bestD && d <= allowed && d < name.size()) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

}  // namespace coconet
