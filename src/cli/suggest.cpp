#include "cli/suggest.h"

#include <algorithm>

namespace glass::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance, rows of the usual table (three kept for swaps).
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest_name(std::string_view given, const std::vector<std::string>& candidates) {
  if (given.empty()) return std::nullopt;
  // An abbreviation first: `--temp` means `--temperature` more likely than `--help`.
  const std::string* prefixed = nullptr;
  size_t prefixes = 0;
  for (const std::string& c : candidates)
    if (c.size() > given.size() && c.starts_with(given) && prefixes++ == 0) prefixed = &c;
  if (prefixes == 1) return *prefixed;
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(given, c);
    if (best == nullptr || d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  // One edit in three characters; none for one- or two-letter words, where every short
  // flag is one edit away.
  const size_t allowed = given.size() < 3 ? 0 : std::max<size_t>(1, given.size() / 3);
  if (best != nullptr && best_distance <= allowed) return *best;
  return std::nullopt;
}

}  // namespace glass::cli
