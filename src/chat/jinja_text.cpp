#include "chat/jinja_text.h"

#include <algorithm>
#include <functional>

#include <utf8proc.h>

#include "base/error.h"

namespace glass::jinja {

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    char32_t c = 0;
    if ((b & 0xE0) == 0xC0) len = 2, c = b & 0x1F;
    else if ((b & 0xF0) == 0xE0) len = 3, c = b & 0x0F;
    else if ((b & 0xF8) == 0xF0) len = 4, c = b & 0x07;
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cb = static_cast<unsigned char>(s[i + k]);
      if ((cb & 0xC0) != 0x80) return false;
      c = (c << 6) | (cb & 0x3F);
    }
    static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < kMinForLength[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

char32_t next_code_point(std::string_view s, size_t& pos) {
  const auto b = static_cast<unsigned char>(s[pos]);
  if (b < 0x80) {
    ++pos;
    return b;
  }
  size_t len = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
  char32_t c = b & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len && pos + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[pos + k]) & 0x3F);
  pos += len;
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  return n;
}

size_t code_point_offset(std::string_view s, size_t index, size_t count) {
  if (index >= count) return s.size();
  size_t pos = 0;
  if (index <= count / 2) {
    for (size_t seen = 0;; ++pos)
      if ((static_cast<unsigned char>(s[pos]) & 0xC0) != 0x80 && seen++ == index) return pos;
  }
  pos = s.size();
  for (size_t left = count - index; left > 0;)
    if ((static_cast<unsigned char>(s[--pos]) & 0xC0) != 0x80) --left;
  return pos;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t python_space_length(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t next = pos;
  return is_python_space(next_code_point(s, next)) ? next - pos : 0;
}

namespace {

// The code points to strip, sorted, so that each test costs O(log m) whatever `chars`.
class StripSet {
 public:
  explicit StripSet(const std::optional<std::string_view>& chars) : whitespace_(!chars) {
    if (!chars) return;
    for (size_t i = 0; i < chars->size();) set_.push_back(next_code_point(*chars, i));
    std::sort(set_.begin(), set_.end());
  }
  bool contains(char32_t c) const {
    return whitespace_ ? is_python_space(c) : std::binary_search(set_.begin(), set_.end(), c);
  }

 private:
  bool whitespace_;
  std::vector<char32_t> set_;
};

// The code point that ends just before byte `end`.
char32_t previous_code_point(std::string_view s, size_t& end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t p = start;
  const char32_t c = next_code_point(s, p);
  end = start;
  return c;
}

template <class Map>
std::string map_code_points(std::string_view s, Map map) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) map(out, next_code_point(s, i));
  return out;
}

bool is_cased(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

// Python uses full case mappings; these are the common ones that differ from the simple
// mappings utf8proc provides.
void append_upper(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  } else if (c == 0xDF) {
    out += "SS";
  } else {
    append_utf8(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
  }
}

void append_lower(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {
    out += "i\xCC\x87";
  } else {
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
}

void append_title(std::string& out, char32_t c) {
  if (c < 0x80) {
    append_upper(out, c);
  } else if (c == 0xDF) {
    out += "Ss";
  } else {
    append_utf8(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
  }
}

}  // namespace

std::string_view python_strip(std::string_view s, bool left, bool right, const std::optional<std::string_view>& chars) {
  const StripSet strip(chars);
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!strip.contains(next_code_point(s, next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      size_t prev = end;
      if (!strip.contains(previous_code_point(s, prev))) break;
      end = prev;
    }
  }
  return s.substr(begin, end - begin);
}

std::string python_lower(std::string_view s) { return map_code_points(s, append_lower); }
std::string python_upper(std::string_view s) { return map_code_points(s, append_upper); }

std::string python_swapcase(std::string_view s) {
  return map_code_points(s, [](std::string& out, char32_t c) {
    if (is_python_cased_upper(c)) append_lower(out, c);
    else if (is_python_cased_lower(c)) append_upper(out, c);
    else append_utf8(out, c);
  });
}

std::string python_capitalize(std::string_view s) {
  bool first = true;
  return map_code_points(s, [&first](std::string& out, char32_t c) {
    if (first) append_title(out, c);
    else append_lower(out, c);
    first = false;
  });
}

std::string python_title(std::string_view s) {
  bool previous_is_cased = false;
  return map_code_points(s, [&previous_is_cased](std::string& out, char32_t c) {
    if (previous_is_cased) append_lower(out, c);
    else append_title(out, c);
    previous_is_cased = is_cased(c);
  });
}

bool is_python_alpha(char32_t c) {
  if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool is_python_decimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ND;
}

bool is_python_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_python_cased_upper(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
}

bool is_python_cased_lower(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LL;
}

bool is_python_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

namespace {

bool cased_test(std::string_view s, bool want_upper) {
  bool any_cased = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = next_code_point(s, i);
    const bool upper = is_python_cased_upper(c), lower = is_python_cased_lower(c);
    if (want_upper ? lower : upper) return false;
    if (upper || lower) any_cased = true;
  }
  return any_cased;
}

}  // namespace

bool python_is_upper(std::string_view s) { return cased_test(s, true); }
bool python_is_lower(std::string_view s) { return cased_test(s, false); }

bool is_python_word(char32_t c) { return c == '_' || is_python_alpha(c) || is_python_numeric(c); }

namespace {

// The pieces of a split, each charged to the budget (when there is one) before it is made.
class Parts {
 public:
  explicit Parts(RenderBudget* budget) : budget_(budget) {}
  void emplace_back(std::string_view part) {
    if (budget_ != nullptr) {
      budget_->check_list_size(parts_.size() + 1);
      budget_->charge_string(part.size());
    }
    parts_.emplace_back(part);
  }
  void reverse() { std::reverse(parts_.begin(), parts_.end()); }
  std::vector<std::string> take() { return std::move(parts_); }

 private:
  RenderBudget* budget_;
  std::vector<std::string> parts_;
};

// Needles up to this long are searched with std::string_view::find (a memchr for the
// first byte, then a compare): at worst this many byte compares per text byte.
constexpr size_t kShortNeedle = 16;

}  // namespace

size_t find_text(std::string_view s, std::string_view needle, size_t from) {
  if (needle.size() <= kShortNeedle || from > s.size()) return s.find(needle, from);
  const auto hay = s.substr(from);
  const auto it = std::search(hay.begin(), hay.end(), std::boyer_moore_searcher(needle.begin(), needle.end()));
  return it == hay.end() ? std::string_view::npos : from + static_cast<size_t>(it - hay.begin());
}

size_t rfind_text(std::string_view s, std::string_view needle, size_t from) {
  if (needle.size() <= kShortNeedle || needle.size() > s.size()) return s.rfind(needle, from);
  // The last match starting at or before `from`: search backwards from its end.
  const size_t end = from >= s.size() ? s.size() : std::min(s.size(), from + needle.size());
  const auto hay = s.substr(0, end);
  const auto it = std::search(hay.rbegin(), hay.rend(), std::boyer_moore_searcher(needle.rbegin(), needle.rend()));
  if (it == hay.rend()) return std::string_view::npos;
  return static_cast<size_t>(hay.rend() - it) - needle.size();
}

std::vector<std::string> python_split(std::string_view s, const std::optional<std::string_view>& sep, int64_t maxsplit,
                                      bool from_right, RenderBudget* budget) {
  Parts parts(budget);
  if (sep && sep->empty()) fail("empty separator");
  if (!sep) {
    // Runs of whitespace separate; leading and trailing whitespace yields nothing.
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < s.size()) {
      if (budget != nullptr) budget->check_list_size(words.size() + 1);
      size_t ws;
      while (i < s.size() && (ws = python_space_length(s, i)) > 0) i += ws;
      if (i >= s.size()) break;
      const size_t start = i;
      while (i < s.size() && python_space_length(s, i) == 0) next_code_point(s, i);
      words.emplace_back(start, i);
    }
    if (maxsplit < 0 || words.size() <= static_cast<size_t>(maxsplit) + 1) {
      for (auto [a, b] : words) parts.emplace_back(s.substr(a, b - a));
      return parts.take();
    }
    const size_t keep = static_cast<size_t>(maxsplit);
    if (!from_right) {
      for (size_t w = 0; w < keep; ++w) parts.emplace_back(s.substr(words[w].first, words[w].second - words[w].first));
      // The remainder keeps its inner and trailing whitespace, as Python's does.
      parts.emplace_back(s.substr(words[keep].first));
    } else {
      const size_t first_kept = words.size() - keep;
      parts.emplace_back(s.substr(0, words[first_kept - 1].second));
      for (size_t w = first_kept; w < words.size(); ++w)
        parts.emplace_back(s.substr(words[w].first, words[w].second - words[w].first));
    }
    return parts.take();
  }
  std::vector<size_t> hits;
  for (size_t at = find_text(s, *sep); at != std::string_view::npos; at = find_text(s, *sep, at + sep->size())) {
    if (budget != nullptr) budget->check_list_size(hits.size() + 2);
    hits.push_back(at);
  }
  size_t use = hits.size();
  if (maxsplit >= 0 && static_cast<size_t>(maxsplit) < use) use = static_cast<size_t>(maxsplit);
  if (!from_right) {
    size_t start = 0;
    for (size_t h = 0; h < use; ++h) {
      parts.emplace_back(s.substr(start, hits[h] - start));
      start = hits[h] + sep->size();
    }
    parts.emplace_back(s.substr(start));
  } else {
    // rsplit finds separators scanning from the right, so overlapping matches resolve
    // toward the end of the string.
    std::vector<size_t> right_hits;
    size_t end = s.size();
    while (right_hits.size() < use) {
      if (end < sep->size()) break;
      const size_t at = rfind_text(s, *sep, end - sep->size());
      if (at == std::string_view::npos) break;
      right_hits.push_back(at);
      end = at;
    }
    size_t stop = s.size();
    for (size_t at : right_hits) {
      parts.emplace_back(s.substr(at + sep->size(), stop - at - sep->size()));
      stop = at;
    }
    parts.emplace_back(s.substr(0, stop));
    parts.reverse();
  }
  return parts.take();
}

std::vector<std::string> python_splitlines(std::string_view s, bool keepends, RenderBudget* budget) {
  Parts lines(budget);
  size_t start = 0, i = 0;
  while (i < s.size()) {
    const size_t at = i;
    const char32_t c = next_code_point(s, i);
    const bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                          c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!boundary) continue;
    if (c == '\r' && i < s.size() && s[i] == '\n') ++i;
    lines.emplace_back(s.substr(start, (keepends ? i : at) - start));
    start = i;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines.take();
}

std::string python_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    size_t i = 0;
    while (i <= s.size()) {
      if (count >= 0 && done >= count) {
        out.append(s.substr(i));
        break;
      }
      out.append(replacement);
      ++done;
      if (i == s.size()) break;
      const size_t start = i;
      next_code_point(s, i);
      out.append(s.substr(start, i - start));
    }
    return out;
  }
  size_t start = 0;
  for (size_t at = find_text(s, old); at != std::string_view::npos && (count < 0 || done < count);
       at = find_text(s, old, start)) {
    out.append(s.substr(start, at - start));
    out.append(replacement);
    start = at + old.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

uint64_t python_replace_size(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  uint64_t hits = 0;
  if (old.empty()) {
    hits = code_point_count(s) + 1;
  } else {
    for (size_t at = find_text(s, old); at != std::string_view::npos && (count < 0 || hits < static_cast<uint64_t>(count));
         at = find_text(s, old, at + old.size()))
      ++hits;
  }
  if (count >= 0) hits = std::min(hits, static_cast<uint64_t>(count));
  // Saturates past 2^64: the string budget refuses it either way.
  uint64_t added;
  if (__builtin_mul_overflow(hits, static_cast<uint64_t>(replacement.size()), &added)) return UINT64_MAX;
  const uint64_t kept = s.size() - hits * old.size();
  return added > UINT64_MAX - kept ? UINT64_MAX : kept + added;
}

}  // namespace glass::jinja
