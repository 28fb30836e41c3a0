// JSON Schema -> GBNF (json_schema.h).
//
// GCC 12 reports a false -Wrestrict inside libstdc++ for `"literal" + std::string` once
// inlined (GCC bug 105329); this file builds GBNF text that way throughout.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace glass::grammar {
namespace {

// Shared rules; `space` bounds whitespace between tokens.
const char* const kCommonRules = R"(space ::= | " " | "\n" [ \t]{0,20}
json-hex ::= [0-9a-fA-F]
json-u4 ::= [0-9a-cA-CeEfF] json-hex json-hex json-hex | [dD] [0-7] json-hex json-hex | [dD] [89abAB] json-hex json-hex "\\u" [dD] [c-fC-F] json-hex json-hex
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" json-u4)
json-string ::= "\"" json-char* "\"" space
json-number ::= "-"? json-unsigned-number space
json-unsigned-number ::= ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,18}) space
json-boolean ::= ("true" | "false") space
json-null ::= "null" space
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" space (json-string ":" space json-value ("," space json-string ":" space json-value)*)? "}" space
json-array ::= "[" space (json-value ("," space json-value)*)? "]" space
json-date ::= [0-9] [0-9] [0-9] [0-9] "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])
json-time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]+)? ("Z" | "z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])
)";

constexpr int kMaxSchemaDepth = 64;
constexpr uint32_t kMaxCount = 100000;

// A GBNF string literal of raw text.
std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string cp_escape(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

// A set of code points, as they appear inside a JSON string (escaped where JSON needs it).
std::string json_chars_expr(std::vector<CodeRange> ranges) {
  ranges = normalize_ranges(std::move(ranges));
  auto has = [&](uint32_t cp) {
    return std::any_of(ranges.begin(), ranges.end(), [&](CodeRange r) { return cp >= r.lo && cp <= r.hi; });
  };
  std::vector<CodeRange> plain;
  for (CodeRange r : ranges) {
    std::vector<CodeRange> pieces{r};
    for (uint32_t cut_lo : {0u, uint32_t{'"'}, uint32_t{'\\'}}) {
      uint32_t cut_hi = cut_lo == 0 ? 0x1F : cut_lo;
      std::vector<CodeRange> next;
      for (CodeRange p : pieces) {
        if (p.hi < cut_lo || p.lo > cut_hi) {
          next.push_back(p);
          continue;
        }
        if (p.lo < cut_lo) next.push_back({p.lo, cut_lo - 1});
        if (p.hi > cut_hi) next.push_back({cut_hi + 1, p.hi});
      }
      pieces = std::move(next);
    }
    plain.insert(plain.end(), pieces.begin(), pieces.end());
  }
  std::vector<std::string> alts;
  if (!plain.empty()) {
    std::string cls = "[";
    for (CodeRange r : plain) {
      cls += cp_escape(r.lo);
      if (r.hi > r.lo) {
        cls.push_back('-');
        cls.append(cp_escape(r.hi));
      }
    }
    alts.push_back(cls + "]");
  }
  if (has('"')) alts.push_back(R"("\\\"")");
  if (has('\\')) alts.push_back(R"("\\\\")");
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!has(c)) continue;
    const char* short_form = c == '\n' ? "n" : c == '\t' ? "t" : c == '\r' ? "r" : c == '\b' ? "b" : c == '\f' ? "f" : nullptr;
    if (short_form) {
      alts.push_back(str_cat("\"\\\\", short_form, "\""));
    } else {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\"\\\\u%04X\"", c);
      alts.push_back(buf);
      std::snprintf(buf, sizeof buf, "\"\\\\u%04x\"", c);
      alts.push_back(buf);
    }
  }
  if (alts.empty()) return "[^\\U00000000-\\U0010FFFF]";  // matches nothing
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// ---- regex subset (ECMAScript) -> GBNF over JSON string contents ----

class RegexConverter {
 public:
  explicit RegexConverter(std::string_view re) : re_(re) {}

  std::string run() {
    bool anchored_start = false, anchored_end = false;
    if (!re_.empty() && re_[0] == '^') {
      anchored_start = true;
      pos_ = 1;
    }
    std::string body = parse_alt(0);
    if ((anchored_start || (pos_ < re_.size() && re_[pos_] == '$')) && top_level_alternation_)
      fail_here("an anchor with '|' at the top level (write ^(a|b)$)");
    if (pos_ < re_.size() && re_[pos_] == '$') {
      anchored_end = true;
      ++pos_;
    }
    if (pos_ < re_.size()) fail_here(re_[pos_] == ')' ? "unmatched ')'" : "'$' or '^' inside the pattern");
    std::string out;
    if (!anchored_start) out += "json-char* ";
    out += "(" + body + ")";
    if (!anchored_end) out += " json-char*";
    return out;
  }

 private:
  [[noreturn]] void fail_here(const std::string& what) const {
    throw GrammarError(str_cat("pattern /", text_excerpt(re_), "/: at offset ", pos_, ": ", what, " is not supported"));
  }
  bool eof() const { return pos_ >= re_.size(); }
  char peek() const { return eof() ? '\0' : re_[pos_]; }

  uint32_t next_cp() {
    unsigned char c = static_cast<unsigned char>(re_[pos_]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || pos_ + static_cast<size_t>(len) > re_.size()) fail_here("invalid UTF-8");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(re_[pos_ + static_cast<size_t>(i)]) & 0x3F);
    pos_ += static_cast<size_t>(len);
    return cp;
  }

  std::string parse_alt(int depth) {
    if (depth > 100) fail_here("nesting deeper than 100 groups");
    std::string out = parse_seq(depth);
    while (peek() == '|') {
      if (depth == 0) top_level_alternation_ = true;
      ++pos_;
      out += " | " + parse_seq(depth);
    }
    return out;
  }

  std::string parse_seq(int depth) {
    std::string out;
    while (!eof() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && pos_ + 1 == re_.size()) break;
      std::string atom = parse_atom(depth);
      atom = parse_quantifier(atom);
      out += (out.empty() ? "" : " ") + atom;
    }
    return out.empty() ? "\"\"" : out;
  }

  static std::vector<CodeRange> class_escape(char e) {
    static const std::vector<CodeRange> kSpace = {{9, 13}, {32, 32}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                                                  {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
    switch (e) {
      case 'd': return {{'0', '9'}};
      case 'D': return complement_ranges(normalize_ranges({{'0', '9'}}));
      case 'w': return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      case 'W': return complement_ranges(normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}));
      case 's': return kSpace;
      case 'S': return complement_ranges(normalize_ranges(kSpace));
      default: return {};
    }
  }

  // After a backslash: one code point (or throws for what is not supported).
  uint32_t escape_cp(bool in_class) {
    if (eof()) fail_here("a trailing backslash");
    char e = re_[pos_];
    switch (e) {
      case 't': ++pos_; return '\t';
      case 'n': ++pos_; return '\n';
      case 'r': ++pos_; return '\r';
      case 'f': ++pos_; return '\f';
      case 'v': ++pos_; return '\v';
      case '0': ++pos_; return 0;
      case 'b':
        if (in_class) {
          ++pos_;
          return '\b';
        }
        fail_here("the word boundary \\b");
      case 'x': case 'u': {
        int digits = e == 'x' ? 2 : 4;
        ++pos_;
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
          char h = peek();
          int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
          if (d < 0) fail_here("this escape");
          v = v * 16 + static_cast<uint32_t>(d);
          ++pos_;
        }
        return v;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9'))
          fail_here(str_cat("the escape \\", std::string(1, e)));
        return next_cp();  // an escaped punctuation character or other literal
    }
  }

  std::string parse_atom(int depth) {
    char c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (re_.substr(pos_, 2) == "?:") {
          pos_ += 2;
        } else if (re_.substr(pos_, 2) == "?<" && re_.substr(pos_, 3) != "?<=" && re_.substr(pos_, 3) != "?<!") {
          size_t close = re_.find('>', pos_);
          if (close == std::string_view::npos) fail_here("an unterminated group name");
          pos_ = close + 1;
        } else {
          fail_here("lookaround and group flags");
        }
      }
      std::string inner = parse_alt(depth + 1);
      if (peek() != ')') fail_here("a group without ')'");
      ++pos_;
      return "(" + inner + ")";
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return json_chars_expr(complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})));
    }
    if (c == '\\') {
      ++pos_;
      auto cls = class_escape(peek());
      if (!cls.empty()) {
        ++pos_;
        return json_chars_expr(cls);
      }
      uint32_t cp = escape_cp(false);
      return json_chars_expr({{cp, cp}});
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail_here("a quantifier with nothing to repeat");
    if (c == '^' || c == '$') fail_here("an anchor in the middle of the pattern");
    if (c == ']' || c == '}') fail_here(str_cat("an unescaped '", std::string(1, c), "'"));
    uint32_t cp = next_cp();
    return json_chars_expr({{cp, cp}});
  }

  std::string parse_class() {
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    bool first = true;
    while (true) {
      if (eof()) fail_here("a class without ']'");
      if (peek() == ']' && !first) break;
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        auto cls = class_escape(peek());
        if (!cls.empty()) {
          ++pos_;
          ranges.insert(ranges.end(), cls.begin(), cls.end());
          continue;
        }
        lo = escape_cp(true);
      } else {
        lo = next_cp();
      }
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < re_.size() && re_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          if (!class_escape(peek()).empty()) fail_here("a range ending in a class escape");
          hi = escape_cp(true);
        } else {
          hi = next_cp();
        }
        if (hi < lo) fail_here("a range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;  // ']'
    ranges = normalize_ranges(std::move(ranges));
    if (negated) ranges = complement_ranges(ranges);
    return json_chars_expr(ranges);
  }

  uint32_t parse_number() {
    if (!(peek() >= '0' && peek() <= '9')) fail_here("a malformed {m,n}");
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxCount) fail_here(str_cat("a repetition count over ", kMaxCount));
      ++pos_;
    }
    return static_cast<uint32_t>(v);
  }

  std::string parse_quantifier(const std::string& atom) {
    std::string q;
    char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, c);
    } else if (c == '{') {
      ++pos_;
      uint32_t m = parse_number();
      q = "{" + std::to_string(m);
      if (peek() == ',') {
        ++pos_;
        q += ",";
        if (peek() != '}') {
          uint32_t n = parse_number();
          if (n < m) fail_here("{m,n} with n < m");
          q += std::to_string(n);
        }
      }
      if (peek() != '}') fail_here("a malformed {m,n}");
      ++pos_;
      q += "}";
    } else {
      return atom;
    }
    if (peek() == '?') ++pos_;  // lazy: same language
    if (peek() == '*' || peek() == '+' || peek() == '{') fail_here("a possessive or repeated quantifier");
    return "(" + atom + ")" + q;
  }

  std::string_view re_;
  size_t pos_ = 0;
  bool top_level_alternation_ = false;
};

// ---- integer ranges ----

// Numbers of exactly a.size() digits between a and b (same length, a <= b, as digit strings).
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a.empty()) return "\"\"";
  if (a == b) return gbnf_literal(a);
  size_t n = a.size();
  if (a[0] == b[0]) return gbnf_literal(a.substr(0, 1)) + " (" + same_length_range(a.substr(1), b.substr(1)) + ")";
  std::string rest_zero(n - 1, '0'), rest_nine(n - 1, '9');
  bool lo_full = a.substr(1) == rest_zero, hi_full = b.substr(1) == rest_nine;
  std::vector<std::string> alts;
  char mid_lo = lo_full ? a[0] : static_cast<char>(a[0] + 1);
  char mid_hi = hi_full ? b[0] : static_cast<char>(b[0] - 1);
  if (!lo_full) alts.push_back(gbnf_literal(a.substr(0, 1)) + " (" + same_length_range(a.substr(1), rest_nine) + ")");
  if (mid_lo <= mid_hi) {
    std::string cls = str_cat("[", std::string(1, mid_lo), "-", std::string(1, mid_hi), "]");
    if (n > 1) cls += str_cat(" [0-9]{", n - 1, "}");
    alts.push_back(cls);
  }
  if (!hi_full) alts.push_back(gbnf_literal(b.substr(0, 1)) + " (" + same_length_range(rest_zero, b.substr(1)) + ")");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

// Unsigned decimal numbers (no leading zeros) in [lo, hi]; hi unbounded when !has_hi.
std::string uint_range(uint64_t lo, bool has_hi, uint64_t hi) {
  std::string a = std::to_string(lo);
  std::vector<std::string> alts;
  size_t last = has_hi ? std::to_string(hi).size() : a.size();
  for (size_t n = a.size(); n <= last; ++n) {
    std::string from = a;
    if (n != a.size()) {
      from.assign(n, '0');
      from[0] = '1';
    }
    std::string to = has_hi && n == last ? std::to_string(hi) : std::string(n, '9');
    alts.push_back(str_cat("(", same_length_range(from, to), ")"));
  }
  if (!has_hi) alts.push_back(str_cat("[1-9] [0-9]{", a.size(), ",}"));
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

// ---- number ranges ----
//
// Bounds on non-integer numbers, exactly: the instances are written as plain decimals
// ("-"? integer ("." digits)?) compared digit by digit with the bounds' decimal digits.
// Exponents are written only where no bound limits them (a half-line from 0).

// A bound's decimal expansion: integer digits (no leading zeros, "0" for none) and
// fraction digits (no trailing zeros).
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;
  bool is_zero() const { return integer == "0" && fraction.empty(); }
};

// `text` as nlohmann writes a number (shortest round trip: "0.1", "-2.5", "1e-05").
std::optional<Decimal> parse_decimal(std::string_view text) {
  Decimal d;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') d.negative = true, ++i;
  std::string digits;
  int64_t point = -1;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') point = static_cast<int64_t>(digits.size());
    else digits += text[i];
  }
  if (point < 0) point = static_cast<int64_t>(digits.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    int64_t exp = 0;
    try {
      exp = std::stoll(std::string(text.substr(i + 1)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (exp > 40 || exp < -40) return std::nullopt;
    point += exp;
  }
  // Shift the point into the digits.
  while (point < 0) digits.insert(digits.begin(), '0'), ++point;
  while (static_cast<size_t>(point) > digits.size()) digits += '0';
  d.integer = digits.substr(0, static_cast<size_t>(point));
  d.fraction = digits.substr(static_cast<size_t>(point));
  d.integer.erase(0, std::min(d.integer.find_first_not_of('0'), d.integer.size()));
  if (d.integer.empty()) d.integer = "0";
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.integer.size() > 18 || d.fraction.size() > 40) return std::nullopt;
  if (d.is_zero()) d.negative = false;
  return d;
}

// A bound on the digits of a fraction still to come: the rest of the bound's fraction
// digits, strict or not; inactive when every continuation satisfies it.
struct FractionBound {
  bool active = false;
  std::string rest;
  bool strict = false;
};

// Fraction digit strings t (possibly empty: the number has no fraction) with 0.t above
// `lo` and below `hi`, as an optional GBNF expression (nullopt: none).
class FractionRange {
 public:
  // Strings of at least one digit; then with the empty string when it satisfies both.
  std::optional<std::string> digits(const FractionBound& lo, const FractionBound& hi) {
    // The states that step to themselves on '0' (an exhausted bound's rest is zeros).
    const bool lo_free = !lo.active, hi_free = !hi.active;
    const bool lo_positive = lo.active && lo.rest.empty();  // strict 0: a nonzero digit must come
    const bool hi_zero = hi.active && hi.rest.empty();      // only zeros may come (strict: nothing)
    if (hi_zero && (hi.strict || lo_positive)) return std::nullopt;
    if (hi_zero && lo_free) return "\"0\"{1,16}";
    if (lo_positive && hi_free) return "\"0\"{0,15} [1-9] [0-9]{0,15}";
    if (lo_free && hi_free) return "[0-9]{1,16}";
    // Otherwise a bound with digits left: each step shortens one.
    std::vector<std::string> alts;
    for (int d = 0; d <= 9;) {
      const auto next_lo = step_lo(lo, static_cast<char>('0' + d));
      const auto next_hi = step_hi(hi, static_cast<char>('0' + d));
      int e = d;  // digits d..e lead to the same states
      while (e < 9 && same(step_lo(lo, static_cast<char>('0' + e + 1)), next_lo) &&
             same(step_hi(hi, static_cast<char>('0' + e + 1)), next_hi))
        ++e;
      if (next_lo && next_hi) {
        const std::string cls = d == e ? str_cat("\"", static_cast<char>('0' + d), "\"")
                                       : str_cat("[", static_cast<char>('0' + d), "-", static_cast<char>('0' + e), "]");
        if (const auto tail = any(*next_lo, *next_hi)) alts.push_back(*tail == "\"\"" ? cls : cls + " (" + *tail + ")");
      }
      d = e + 1;
    }
    if (alts.empty()) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out;
  }

  // Strings of any length (the empty one included when allowed).
  std::optional<std::string> any(const FractionBound& lo, const FractionBound& hi) {
    const bool empty_ok = allows_end(lo, hi);
    const auto more = digits(lo, hi);
    if (!more) return empty_ok ? std::optional<std::string>("\"\"") : std::nullopt;
    return empty_ok ? "(" + *more + ")?" : *more;
  }

  // The fraction part of a number: nothing, or "." and digits.
  std::optional<std::string> part(const FractionBound& lo, const FractionBound& hi) {
    const bool empty_ok = allows_end(lo, hi);
    const auto more = digits(lo, hi);
    if (!more) return empty_ok ? std::optional<std::string>("\"\"") : std::nullopt;
    return "(\".\" (" + *more + "))" + (empty_ok ? "?" : "");
  }

 private:
  // The digits so far end the fraction: the rest is 0.
  static bool allows_end(const FractionBound& lo, const FractionBound& hi) {
    const bool lo_ok = !lo.active;  // an active lower bound has digits left or is strict 0
    const bool hi_ok = !hi.active || !hi.rest.empty() || !hi.strict;
    return lo_ok && hi_ok;
  }
  static std::optional<FractionBound> step_lo(const FractionBound& lo, char d) {
    if (!lo.active) return lo;
    const char b = lo.rest.empty() ? '0' : lo.rest[0];
    if (d < b) return std::nullopt;
    if (d > b) return FractionBound{};
    FractionBound next{true, lo.rest.empty() ? "" : lo.rest.substr(1), lo.strict};
    if (next.rest.empty() && !next.strict) next.active = false;
    return next;
  }
  static std::optional<FractionBound> step_hi(const FractionBound& hi, char d) {
    if (!hi.active) return hi;
    const char b = hi.rest.empty() ? '0' : hi.rest[0];
    if (d > b) return std::nullopt;
    if (d < b) return FractionBound{};
    return FractionBound{true, hi.rest.empty() ? "" : hi.rest.substr(1), hi.strict};
  }
  static bool same(const std::optional<FractionBound>& a, const std::optional<FractionBound>& b) {
    if (!a || !b) return !a && !b;
    return a->active == b->active && (!a->active || (a->rest == b->rest && a->strict == b->strict));
  }
};

// One end of a range of magnitudes: the decimal and whether it is excluded.
struct MagnitudeBound {
  Decimal value;
  bool strict = false;
};

// Unsigned plain decimals in [lo, hi] (each end optional: from 0, unbounded above).
std::optional<std::string> magnitude_range(const std::optional<MagnitudeBound>& lo, const std::optional<MagnitudeBound>& hi) {
  FractionRange fr;
  // A lower bound with no fraction digits left and not strict allows any; an upper one
  // allows only zeros.
  const auto lower = [](const MagnitudeBound& b) {
    return FractionBound{!b.value.fraction.empty() || b.strict, b.value.fraction, b.strict};
  };
  const auto upper = [](const MagnitudeBound& b) { return FractionBound{true, b.value.fraction, b.strict}; };
  const FractionBound free;
  std::vector<std::string> alts;
  const auto add = [&](const std::string& integer, const std::optional<std::string>& fraction) {
    if (fraction) alts.push_back(*fraction == "\"\"" ? integer : integer + " " + *fraction);
  };
  const uint64_t ilo = lo ? std::stoull(lo->value.integer) : 0;
  if (lo && hi && lo->value.integer == hi->value.integer) {
    add(gbnf_literal(lo->value.integer), fr.part(lower(*lo), upper(*hi)));
  } else {
    const uint64_t ihi = hi ? std::stoull(hi->value.integer) : 0;
    if (hi && ihi < ilo) return std::nullopt;
    if (lo) add(gbnf_literal(lo->value.integer), fr.part(lower(*lo), free));
    const uint64_t from = lo ? ilo + 1 : 0;
    if (!hi) add("(" + uint_range(from, false, 0) + ")", fr.part(free, free));
    else if (ihi >= 1 && from <= ihi - 1) add("(" + uint_range(from, true, ihi - 1) + ")", fr.part(free, free));
    if (hi) add(gbnf_literal(hi->value.integer), fr.part(free, upper(*hi)));
  }
  if (alts.empty()) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + ("(" + alts[i] + ")");
  return out;
}

// ---- the converter ----

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> kKnown = {"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
                                      "enum", "const", "pattern", "minLength", "maxLength", "format", "minimum", "maximum",
                                      "exclusiveMinimum", "exclusiveMaximum", "anyOf", "$ref", "$defs", "definitions"};

std::string child_path(const std::string& path, const std::string& key) {
  std::string k;
  for (char c : key) {
    if (c == '~') k += "~0";
    else if (c == '/') k += "~1";
    else k.push_back(c);
  }
  return path + "/" + k;
}

class SchemaConverter {
 public:
  // `start`: the start rule's name ("root" for a whole grammar); other rules are named
  // after it when it is not root.
  SchemaConverter(const OrderedJson& root, std::string start) : root_(root), start_(std::move(start)) {
    names_.insert(start_);
  }

  // The rules (without the shared json-* and space rules).
  std::string run() {
    std::string root_expr = expr(root_, "#", start_ == "root" ? "root" : "v", 0);
    return start_ + " ::= " + root_expr + "\n" + rules_;
  }
  const std::map<std::string, std::string>& ref_names() const { return ref_by_rule_; }

 private:
  [[noreturn]] void error(const std::string& path, const std::string& what) const {
    throw GrammarError(str_cat("json schema: at ", path, ": ", what));
  }

  std::string new_rule_name(const std::string& hint) {
    std::string base;
    for (char c : hint) base.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-');
    if (base.empty() || base.size() > 40) base = base.substr(0, 40) + "x";
    if (start_ != "root") base = start_ + "-" + base;
    std::string name = base;
    for (int i = 2; !names_.insert(name).second; ++i) name = base + "-" + std::to_string(i);
    return name;
  }
  std::string define(const std::string& hint, const std::string& body) {
    std::string name = new_rule_name(hint);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  static bool is_int_value(const OrderedJson& v) { return v.is_number_integer() || v.is_number_unsigned(); }

  uint32_t count(const OrderedJson& s, const char* key, const std::string& path) {
    const OrderedJson& v = s.at(key);
    if (!is_int_value(v) || (v.is_number_integer() && v.get<int64_t>() < 0))
      error(child_path(path, key), str_cat("'", key, "' must be a non-negative integer"));
    uint64_t n = v.get<uint64_t>();
    if (n > kMaxCount) error(child_path(path, key), str_cat("'", key, "' is more than the supported ", kMaxCount));
    return static_cast<uint32_t>(n);
  }

  const OrderedJson& resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#')
      error(path, str_cat("'$ref' \"", text_excerpt(ref), "\" is not supported: only local references ('#/$defs/name') are"));
    const OrderedJson* cur = &root_;
    size_t i = 1;
    if (i < ref.size() && ref[i] != '/') error(path, str_cat("'$ref' \"", text_excerpt(ref), "\" is not a JSON pointer"));
    while (i < ref.size()) {
      size_t next = ref.find('/', i + 1);
      std::string token = ref.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
      std::string key;
      for (size_t k = 0; k < token.size(); ++k) {
        if (token[k] == '~' && k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
          key.push_back(token[k + 1] == '0' ? '~' : '/');
          ++k;
        } else {
          key.push_back(token[k]);
        }
      }
      if (cur->is_object() && cur->contains(key)) {
        cur = &(*cur)[key];
      } else if (cur->is_array() && !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit) && key.size() < 9 &&
                 std::stoul(key) < cur->size()) {
        cur = &(*cur)[std::stoul(key)];
      } else {
        error(path, str_cat("'$ref' \"", text_excerpt(ref), "\" points to nothing"));
      }
      i = next == std::string::npos ? ref.size() : next;
    }
    return *cur;
  }

  std::string ref_rule(const std::string& ref, const std::string& path, int depth) {
    auto it = rule_by_ref_.find(ref);
    if (it != rule_by_ref_.end()) return it->second;
    const OrderedJson& target = resolve(ref, path);
    size_t slash = ref.rfind('/');
    std::string name = new_rule_name("ref-" + (ref == "#" ? std::string("root") : ref.substr(slash + 1)));
    rule_by_ref_[ref] = name;
    ref_by_rule_[name] = ref;
    std::string body = expr(target, ref, name, depth + 1);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  // Exactly the JSON value `v` (its strings and numbers as nlohmann writes them), with
  // the usual whitespace between tokens.
  std::string value_expr(const OrderedJson& v, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth) error(path, str_cat("values nested more than ", kMaxSchemaDepth, " levels deep"));
    if (v.is_object() || v.is_array()) {
      bool obj = v.is_object();
      std::string out = obj ? "\"{\" space" : "\"[\" space";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += " \",\" space";
        first = false;
        if (obj) out += " " + gbnf_literal(OrderedJson(it.key()).dump()) + " space \":\" space";
        out += " " + value_expr(it.value(), path, depth + 1);
      }
      return out + (obj ? " \"}\" space" : " \"]\" space");
    }
    return gbnf_literal(v.dump()) + " space";
  }

  // A GBNF expression for instances of `s` (followed by `space`).
  std::string expr(const OrderedJson& s, const std::string& path, const std::string& hint, int depth) {
    if (depth > kMaxSchemaDepth) error(path, str_cat("schemas nested more than ", kMaxSchemaDepth, " levels deep"));
    if (s.is_boolean()) {
      if (s.get<bool>()) return "json-value";
      error(path, "the schema 'false' accepts no value");
    }
    if (!s.is_object()) error(path, str_cat("expected a schema (an object or a boolean), found ", json_excerpt(s)));
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kKnown.count(it.key()) && !kAnnotations.count(it.key()))
        error(child_path(path, it.key()), str_cat("unsupported keyword '", it.key(), "'"));

    for (const char* defs : {"$defs", "definitions"})
      if (s.contains(defs) && !s[defs].is_object()) error(child_path(path, defs), str_cat("'", defs, "' must be an object"));

    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) error(child_path(path, "$ref"), "'$ref' must be a string");
      for (auto it = s.begin(); it != s.end(); ++it)
        if (kKnown.count(it.key()) && it.key() != "$ref" && it.key() != "$defs" && it.key() != "definitions")
          error(child_path(path, it.key()), str_cat("'", it.key(), "' beside '$ref' is not supported"));
      return ref_rule(s["$ref"].get<std::string>(), child_path(path, "$ref"), depth);
    }
    if (s.contains("anyOf")) {
      const OrderedJson& any = s["anyOf"];
      if (!any.is_array() || any.empty()) error(child_path(path, "anyOf"), "'anyOf' must be a non-empty array of schemas");
      std::string out = "(";
      for (size_t i = 0; i < any.size(); ++i) {
        std::string p = child_path(child_path(path, "anyOf"), std::to_string(i));
        out += (i ? " | " : "") + expr(any[i], p, hint + "-" + std::to_string(i), depth + 1);
      }
      return out + ")";
    }
    if (s.contains("const")) return value_expr(s["const"], child_path(path, "const"), 0);
    if (s.contains("enum")) {
      const OrderedJson& e = s["enum"];
      if (!e.is_array() || e.empty()) error(child_path(path, "enum"), "'enum' must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < e.size(); ++i) out += (i ? " | " : "") + value_expr(e[i], child_path(path, "enum"), 0);
      return out + ")";
    }

    std::vector<std::string> types;
    if (s.contains("type")) {
      const OrderedJson& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const auto& x : t) {
          if (!x.is_string()) error(child_path(path, "type"), "'type' must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        error(child_path(path, "type"), str_cat("'type' must be a string or an array of strings, found ", json_excerpt(t)));
      }
    } else if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
      types.push_back("array");
    } else if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
      types.push_back("string");
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) {
      types.push_back("number");
    } else {
      return "json-value";
    }
    std::string out;
    for (size_t i = 0; i < types.size(); ++i) out += (i ? " | " : "") + type_expr(types[i], s, path, hint, depth);
    return types.size() > 1 ? "(" + out + ")" : out;
  }

  std::string type_expr(const std::string& type, const OrderedJson& s, const std::string& path, const std::string& hint, int depth) {
    if (type == "null") return "json-null";
    if (type == "boolean") return "json-boolean";
    if (type == "string") return string_expr(s, path);
    if (type == "integer") return integer_expr(s, path);
    if (type == "number") return number_expr(s, path);
    if (type == "array") return array_expr(s, path, hint, depth);
    if (type == "object") return object_expr(s, path, hint, depth);
    error(child_path(path, "type"), str_cat("unknown type \"", text_excerpt(type), "\""));
  }

  std::string string_expr(const OrderedJson& s, const std::string& path) {
    bool has_len = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format")) {
      if (!s["format"].is_string()) error(child_path(path, "format"), "'format' must be a string");
      std::string f = s["format"].get<std::string>();
      if (has_len || s.contains("pattern")) error(path, "'format' together with 'pattern' or a length is not supported");
      if (f == "date") return "\"\\\"\" json-date \"\\\"\" space";
      if (f == "time") return "\"\\\"\" json-time \"\\\"\" space";
      if (f == "date-time") return "\"\\\"\" json-date [Tt] json-time \"\\\"\" space";
      if (f == "uuid")
        return "\"\\\"\" json-hex{8} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{12} \"\\\"\" space";
      error(child_path(path, "format"), str_cat("unsupported format \"", text_excerpt(f), "\" (supported: date, time, date-time, uuid)"));
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) error(child_path(path, "pattern"), "'pattern' must be a string");
      if (has_len) error(path, "'pattern' together with 'minLength' or 'maxLength' is not supported");
      try {
        return "\"\\\"\" " + RegexConverter(s["pattern"].get<std::string>()).run() + " \"\\\"\" space";
      } catch (const GrammarError& e) {
        error(child_path(path, "pattern"), e.what());
      }
    }
    if (has_len) {
      uint32_t min = s.contains("minLength") ? count(s, "minLength", path) : 0;
      if (s.contains("maxLength")) {
        uint32_t max = count(s, "maxLength", path);
        if (max < min) error(path, "'maxLength' is less than 'minLength'");
        return str_cat("\"\\\"\" json-char{", min, ",", max, "} \"\\\"\" space");
      }
      return str_cat("\"\\\"\" json-char{", min, ",} \"\\\"\" space");
    }
    return "json-string";
  }

  std::string integer_expr(const OrderedJson& s, const std::string& path) {
    // Bounds as integers: [lo, hi], each optional.
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;
    auto bound = [&](const char* key, bool lower, bool exclusive) {
      if (!s.contains(key)) return;
      const OrderedJson& v = s[key];
      if (!v.is_number()) error(child_path(path, key), str_cat("'", key, "' must be a number"));
      int64_t b;
      if (is_int_value(v)) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          error(child_path(path, key), str_cat("'", key, "' is out of the supported range (int64)"));
        b = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
        if (exclusive) {
          if (b == (lower ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min()))
            error(path, "no integer satisfies the bounds");
          b += lower ? 1 : -1;
        }
      } else {
        double d = v.get<double>();
        if (!(std::fabs(d) < 9.2e18)) error(child_path(path, key), str_cat("'", key, "' is out of the supported range (int64)"));
        if (lower) {
          b = static_cast<int64_t>(exclusive ? std::floor(d) + 1 : std::ceil(d));
        } else {
          b = static_cast<int64_t>(exclusive ? std::ceil(d) - 1 : std::floor(d));
        }
      }
      if (lower) {
        lo = has_lo ? std::max(lo, b) : b;
        has_lo = true;
      } else {
        hi = has_hi ? std::min(hi, b) : b;
        has_hi = true;
      }
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (!has_lo && !has_hi) return "json-integer";
    if (has_lo && has_hi && lo > hi) error(path, "no integer satisfies the bounds");
    std::vector<std::string> alts;
    // Non-negative part: [max(lo,0), hi].
    if (!has_hi || hi >= 0) {
      uint64_t from = has_lo && lo > 0 ? static_cast<uint64_t>(lo) : 0;
      alts.push_back(str_cat("(", uint_range(from, has_hi, has_hi ? static_cast<uint64_t>(hi) : 0), ")"));
    }
    // Negative part: magnitudes [max(-hi,1), -lo].
    if (!has_lo || lo < 0) {
      uint64_t from = has_hi && hi < 0 ? static_cast<uint64_t>(-(hi + 1)) + 1 : 1;
      uint64_t to = has_lo ? static_cast<uint64_t>(-(lo + 1)) + 1 : 0;
      alts.push_back("\"-\" (" + uint_range(from, has_lo, to) + ")");
    }
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ") space";
  }

  std::string number_expr(const OrderedJson& s, const std::string& path) {
    // The tightest bound at each end, as exact decimals.
    struct End {
      Decimal value;
      bool strict = false;
    };
    std::optional<End> lo, hi;
    const auto compare = [](const Decimal& a, const Decimal& b) {  // -1, 0, 1
      if (a.negative != b.negative) return a.negative ? -1 : 1;
      const int sign = a.negative ? -1 : 1;
      if (a.integer.size() != b.integer.size()) return a.integer.size() < b.integer.size() ? -sign : sign;
      if (const int c = a.integer.compare(b.integer); c != 0) return c < 0 ? -sign : sign;
      if (const int c = a.fraction.compare(b.fraction); c != 0) return c < 0 ? -sign : sign;
      return 0;
    };
    const auto bound = [&](const char* key, bool lower, bool strict) {
      if (!s.contains(key)) return;
      const OrderedJson& v = s[key];
      if (!v.is_number()) error(child_path(path, key), str_cat("'", key, "' must be a number"));
      const std::optional<Decimal> d = parse_decimal(v.dump());
      if (!d) error(child_path(path, key), str_cat("'", key, "' is out of the supported range (below 1e18, at most 40 decimals)"));
      std::optional<End>& end = lower ? lo : hi;
      const int c = end ? compare(*d, end->value) : 0;
      if (!end || (lower ? c > 0 : c < 0) || (c == 0 && strict)) end = End{*d, strict};
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (!lo && !hi) return "json-number";
    if (lo && hi) {
      const int c = compare(lo->value, hi->value);
      if (c > 0 || (c == 0 && (lo->strict || hi->strict))) error(path, "no number satisfies the bounds");
    }
    const Decimal zero;
    std::vector<std::string> alts;
    // Non-negative numbers: [max(lo, 0), hi].
    if (!hi || !hi->value.negative) {
      const bool from_zero = !lo || lo->value.negative || (lo->value.is_zero() && !lo->strict);
      if (from_zero && !hi) {
        alts.push_back("json-unsigned-number");
      } else if (!(hi && hi->value.is_zero() && hi->strict)) {
        std::optional<MagnitudeBound> a, b;
        if (!from_zero) a = MagnitudeBound{lo->value, lo->strict};
        if (hi) b = MagnitudeBound{hi->value, hi->strict};
        if (auto r = magnitude_range(a, b)) alts.push_back("(" + *r + ")");
      }
    }
    // Negative numbers: magnitudes in [max(-hi, 0), -lo], above 0 (0 is written "0").
    if (!lo || lo->value.negative) {
      if (!lo && (!hi || !hi->value.negative)) {
        alts.push_back("\"-\" json-unsigned-number");
      } else {
        std::optional<MagnitudeBound> a = MagnitudeBound{zero, true}, b;
        if (hi && hi->value.negative) a = MagnitudeBound{Decimal{false, hi->value.integer, hi->value.fraction}, hi->strict};
        if (lo) b = MagnitudeBound{Decimal{false, lo->value.integer, lo->value.fraction}, lo->strict};
        if (auto r = magnitude_range(a, b)) alts.push_back("\"-\" (" + *r + ")");
      }
    }
    if (alts.empty()) error(path, "no number satisfies the bounds");
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ") space";
  }

  std::string array_expr(const OrderedJson& s, const std::string& path, const std::string& hint, int depth) {
    std::string item = "json-value";
    if (s.contains("items")) {
      if (s["items"].is_array()) error(child_path(path, "items"), "'items' as an array (tuple validation) is not supported");
      item = expr(s["items"], child_path(path, "items"), hint + "-item", depth + 1);
      if (item.find(' ') != std::string::npos) item = define(hint + "-item", item);
    }
    uint32_t min = s.contains("minItems") ? count(s, "minItems", path) : 0;
    bool has_max = s.contains("maxItems");
    uint32_t max = has_max ? count(s, "maxItems", path) : 0;
    if (has_max && max < min) error(path, "'maxItems' is less than 'minItems'");
    if (has_max && max == 0) return "\"[\" space \"]\" space";
    std::string more = "(\",\" space " + item + ")";
    std::string rep = has_max ? str_cat("{", min > 0 ? min - 1 : 0, ",", max - 1, "}") : str_cat("{", min > 0 ? min - 1 : 0, ",}");
    std::string list = item + " " + more + rep;
    if (min == 0) list = "(" + list + ")?";
    return "\"[\" space " + list + " \"]\" space";
  }

  std::string object_expr(const OrderedJson& s, const std::string& path, const std::string& hint, int depth) {
    std::set<std::string> required;
    if (s.contains("required")) {
      const OrderedJson& r = s["required"];
      if (!r.is_array()) error(child_path(path, "required"), "'required' must be an array of strings");
      for (const auto& x : r) {
        if (!x.is_string()) error(child_path(path, "required"), "'required' must be an array of strings");
        required.insert(x.get<std::string>());
      }
    }
    const OrderedJson* props = nullptr;
    if (s.contains("properties")) {
      props = &s["properties"];
      if (!props->is_object()) error(child_path(path, "properties"), "'properties' must be an object");
    }
    for (const auto& name : required)
      if (!props || !props->contains(name))
        error(child_path(path, "required"), str_cat("required property \"", text_excerpt(name), "\" is not in 'properties'"));
    const OrderedJson* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (extra && !extra->is_boolean() && !extra->is_object())
      error(child_path(path, "additionalProperties"), "'additionalProperties' must be a boolean or a schema");
    if (!props || props->empty()) {
      if (extra && extra->is_boolean() && !extra->get<bool>()) return "\"{\" space \"}\" space";
      if (!extra || extra->is_boolean()) return "json-object";
      std::string v = expr(*extra, child_path(path, "additionalProperties"), hint + "-value", depth + 1);
      if (v.find(' ') != std::string::npos) v = define(hint + "-value", v);
      return "\"{\" space (json-string \":\" space " + v + " (\",\" space json-string \":\" space " + v + ")*)? \"}\" space";
    }
    // Members in order; rest_i: members i.. after one was written; first_i: none yet.
    std::vector<std::string> kv;
    std::vector<bool> req;
    std::string props_path = child_path(path, "properties");
    for (auto it = props->begin(); it != props->end(); ++it) {
      std::string v = expr(it.value(), child_path(props_path, it.key()), hint + "-" + it.key(), depth + 1);
      kv.push_back(gbnf_literal(OrderedJson(it.key()).dump()) + " space \":\" space " + v);
      req.push_back(required.count(it.key()) > 0);
    }
    size_t n = kv.size();
    std::string rest = "", first = "";  // "" = empty expression
    for (size_t k = n; k-- > 0;) {
      std::string kv_rule = define(hint + "-kv", kv[k]);
      std::string rest_k = req[k] ? "\",\" space " + kv_rule + (rest.empty() ? "" : " " + rest)
                                  : "(\",\" space " + kv_rule + ")?" + (rest.empty() ? "" : " " + rest);
      std::string first_k = req[k] ? kv_rule + (rest.empty() ? "" : " " + rest)
                                   : kv_rule + (rest.empty() ? "" : " " + rest) + " | " + (first.empty() ? "\"\"" : first);
      rest = k > 0 ? define(hint + "-rest", rest_k) : "";
      first = define(hint + "-first", first_k);
    }
    return "\"{\" space " + first + " \"}\" space";
  }

  const OrderedJson& root_;
  std::string start_;
  std::string rules_;
  std::set<std::string> names_ = {"root", "space", "json-hex", "json-u4", "json-char", "json-string", "json-number",
                                  "json-nonneg-number", "json-unsigned-number", "json-integer", "json-boolean", "json-null", "json-value",
                                  "json-object", "json-array", "json-date", "json-time"};
  std::map<std::string, std::string> rule_by_ref_;
  std::map<std::string, std::string> ref_by_rule_;
};

}  // namespace

std::string regex_to_gbnf(std::string_view regex) { return RegexConverter(regex).run(); }

namespace {
// The GBNF of a schema and its compiled grammar (compiling also checks that some finite
// value satisfies the schema: a $ref cycle with no base case leaves none).
struct Compiled {
  std::string rules;  // the schema's rules, without the shared ones
  std::string gbnf;   // a whole grammar
  Grammar grammar;
};

Compiled compile_schema(const OrderedJson& schema, const std::string& start = "root") {
  SchemaConverter conv(schema, start);
  std::string rules;
  try {
    rules = conv.run();
  } catch (const nlohmann::json::exception& e) {
    // e.g. a string that is not UTF-8 in a value built in code (parsed JSON is checked)
    throw GrammarError(str_cat("json schema: ", e.what()));
  }
  std::string gbnf = (start == "root" ? std::string() : "root ::= " + start + "\n") + rules + kCommonRules;
  try {
    Grammar g = Grammar::from_gbnf(gbnf);
    return {std::move(rules), std::move(gbnf), std::move(g)};
  } catch (const GrammarError& e) {
    std::string msg = e.what();
    if (msg.find("accepts nothing") != std::string::npos) {
      std::string refs;
      for (const auto& [rule, ref] : conv.ref_names())
        if (msg.find("'" + rule + "'") != std::string::npos) refs += (refs.empty() ? "" : ", ") + ref;
      throw GrammarError(str_cat("json schema: no finite JSON value satisfies the schema",
                                 refs.empty() ? std::string() : str_cat(": the $ref cycle through ", refs, " has no base case")));
    }
    throw GrammarError(str_cat("json schema: the schema's grammar does not compile: ", msg));
  }
}

OrderedJson parse_schema(std::string_view schema_text) {
  try {
    return parse_ordered_json(schema_text, "json schema");
  } catch (const Error& e) {
    throw GrammarError(str_cat("json schema: not valid JSON: ", e.what()));
  }
}
}  // namespace

std::string json_schema_to_gbnf(const OrderedJson& schema) { return compile_schema(schema).gbnf; }
std::string json_schema_to_gbnf(std::string_view schema_text) { return compile_schema(parse_schema(schema_text)).gbnf; }
Grammar json_schema_grammar(const OrderedJson& schema) { return compile_schema(schema).grammar; }
Grammar json_schema_grammar(std::string_view schema_text) { return compile_schema(parse_schema(schema_text)).grammar; }

std::string json_schema_rules(const OrderedJson& schema, const std::string& rule_name) {
  bool ok = !rule_name.empty() && rule_name.size() <= 64 && rule_name != "root" &&
            std::all_of(rule_name.begin(), rule_name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }) &&
            rule_name.rfind("json-", 0) != 0 && rule_name != "space";
  if (!ok)
    throw GrammarError(str_cat("json schema: the rule name \"", text_excerpt(rule_name),
                               "\" must be 1-64 letters, digits or '-', and not root, space or json-*"));
  return compile_schema(schema, rule_name).rules;
}

const std::string& json_common_gbnf() {
  static const std::string text = kCommonRules;
  return text;
}

std::string gbnf_quote(std::string_view text) { return gbnf_literal(text); }

const std::string& json_object_gbnf() {
  static const std::string text = std::string("root ::= json-object\n") + kCommonRules;
  return text;
}

Grammar json_object_grammar() { return Grammar::from_gbnf(json_object_gbnf()); }

}  // namespace glass::grammar
