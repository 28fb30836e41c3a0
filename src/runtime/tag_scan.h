// Scanning streamed reply text for tags (<think>, <tool_call>): whitespace at either end,
// and the part of a tag that may still be arriving.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace glass {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[n])) ++n;
  return n;
}

inline size_t trailing_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - n - 1])) ++n;
  return n;
}

// The longest end of `s` that begins `tag` without being all of it: where the tag may
// still be arriving.
inline size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace glass
