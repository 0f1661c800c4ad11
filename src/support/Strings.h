// Small string helpers for diagnostics.
#pragma once

#include <string>
#include <vector>

namespace coconet {

// Levenshtein distance, capped: returns max+1 as soon as the distance must exceed max.
size_t editDistance(const std::string& a, const std::string& b, size_t max);
// The candidate closest to `name` (distance <= 2 and < the name's length), or "".
std::string closestMatch(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace coconet
