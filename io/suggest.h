// "Did you mean ...?" for mistyped names: config keys, stages.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ds {

// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word` if it is within `max_distance` edits (ties: the first), else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates,
                         size_t max_distance = 2);

}  // namespace ds
