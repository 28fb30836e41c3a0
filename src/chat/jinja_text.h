// Python `str` semantics over UTF-8 `std::string`: templates index, slice, count, strip
// and case-map by code point, and "whitespace" means what Python's str.isspace() says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_budget.h"

namespace glass::jinja {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Decodes the code point at byte `pos` of valid UTF-8 and advances `pos` past it.
char32_t next_code_point(std::string_view s, size_t& pos);

void append_utf8(std::string& out, char32_t c);

size_t code_point_count(std::string_view s);

// The byte offset of code point `index` of `s` (s.size() for the end), walking from the
// nearer end; `index` must be at most the code point count.
size_t code_point_offset(std::string_view s, size_t index, size_t count);

// Byte offset of every code point in `s`, plus s.size() at the end (size = count + 1).
std::vector<size_t> code_point_offsets(std::string_view s);

// Python's str.isspace() for one code point.
bool is_python_space(char32_t c);

// Byte length of the whitespace character starting at `pos` (0 when it is not one).
size_t python_space_length(std::string_view s, size_t pos);

// s.rstrip() / s.lstrip() / s.strip() with Python's whitespace, or with the code points of
// `chars` when given: O((size + chars size) log chars size).
std::string_view python_strip(std::string_view s, bool left, bool right,
                              const std::optional<std::string_view>& chars = std::nullopt);

std::string python_lower(std::string_view s);
std::string python_upper(std::string_view s);
std::string python_swapcase(std::string_view s);
// str.capitalize(): first character title-cased, the rest lower-cased.
std::string python_capitalize(std::string_view s);
// str.title(): words (runs of cased characters) start title-cased, continue lower-cased.
std::string python_title(std::string_view s);

// Character classes as Python's str.isalpha() etc. test them, for one code point.
bool is_python_alpha(char32_t c);
bool is_python_decimal(char32_t c);
bool is_python_numeric(char32_t c);
bool is_python_cased_upper(char32_t c);
bool is_python_cased_lower(char32_t c);
bool is_python_printable(char32_t c);
// str.isupper() / str.islower(): some cased character, and none of the other case.
bool python_is_upper(std::string_view s);
bool python_is_lower(std::string_view s);
// \w in Python's re for str patterns: alphanumerics and the underscore.
bool is_python_word(char32_t c);

// s.find(needle, from) / s.rfind(needle, from), in time linear in the text searched
// whatever the needle (std::string's find is O(size * needle size) at worst).
size_t find_text(std::string_view s, std::string_view needle, size_t from = 0);
size_t rfind_text(std::string_view s, std::string_view needle, size_t from = std::string_view::npos);

// str.split(sep, maxsplit) and str.rsplit(...); no `sep` splits on runs of whitespace.
// With a budget, each piece is charged to it before it is made.
std::vector<std::string> python_split(std::string_view s, const std::optional<std::string_view>& sep,
                                      int64_t maxsplit, bool from_right, RenderBudget* budget = nullptr);
std::vector<std::string> python_splitlines(std::string_view s, bool keepends, RenderBudget* budget = nullptr);
// The length of python_replace(...)'s result, found without building it.
uint64_t python_replace_size(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
// str.replace(old, new, count); count < 0 replaces all.
std::string python_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);

}  // namespace glass::jinja
