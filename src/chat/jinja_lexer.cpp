#include "chat/jinja_lexer.h"

#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

std::string Source::location(size_t offset) const {
  if (offset > text.size()) offset = text.size();
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  const size_t column = code_point_count(std::string_view(text).substr(line_start, offset - line_start)) + 1;
  return str_cat("line ", line, ", column ", column);
}

void fail_at(const Source& source, size_t offset, const std::string& message) {
  fail(source.name, ": ", source.location(offset), ": ", message);
}

std::string normalize_newlines(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr std::string_view kTwoCharOperators[] = {"**", "//", "==", "!=", ">=", "<="};
constexpr std::string_view kOneCharOperators = "+-/*%~[](){}><=.:|,;";

class Lexer {
 public:
  Lexer(const Source& source, const LexerOptions& options) : src_(source), s_(source.text), o_(options) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      const size_t tag = find_tag_start(pos_);
      if (tag == std::string::npos) {
        emit_text(std::string_view(s_).substr(pos_), pos_);
        pos_ = s_.size();
        break;
      }
      const char kind = s_[tag + 1];
      const size_t after = tag + 2;
      const char sign = after < s_.size() && (s_[after] == '-' || s_[after] == '+') ? s_[after] : '\0';
      const size_t body = after + (sign != '\0' ? 1 : 0);
      size_t raw_body = 0;
      const bool raw = kind == '%' && match_raw_begin(body, raw_body);
      emit_text(strip_before(std::string_view(s_).substr(pos_, tag - pos_), sign, kind != '{', pos_), pos_);
      if (raw) lex_raw(tag, raw_body);
      else if (kind == '#') lex_comment(tag, body);
      else lex_tag(kind, tag, body);
    }
    Token end;
    end.kind = TokenKind::End;
    end.offset = s_.size();
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(size_t offset, const std::string& message) const { fail_at(src_, offset, message); }

  bool starts(size_t p, std::string_view what) const { return s_.compare(p, what.size(), what) == 0; }

  size_t find_tag_start(size_t from) const {
    for (size_t at = s_.find('{', from); at != std::string::npos; at = s_.find('{', at + 1)) {
      if (at + 1 < s_.size() && (s_[at + 1] == '{' || s_[at + 1] == '%' || s_[at + 1] == '#')) return at;
    }
    return std::string::npos;
  }

  size_t skip_space(size_t p) const {
    while (size_t n = python_space_length(s_, p)) p += n;
    return p;
  }

  // Jinja2's OptionalLStrip: `-` strips all whitespace before the tag; otherwise, with
  // lstrip_blocks, a block or comment tag alone on its line takes the line's indent.
  std::string_view strip_before(std::string_view text, char sign, bool block_or_comment, size_t text_start) const {
    if (sign == '-') return python_strip(text, false, true);
    if (sign == '+' || !o_.lstrip_blocks || !block_or_comment) return text;
    const size_t last_newline = text.rfind('\n');
    const size_t line_start = last_newline == std::string_view::npos ? 0 : last_newline + 1;
    const bool line_starting = text_start == 0 || s_[text_start - 1] == '\n';
    if (line_start == 0 && !line_starting) return text;
    const std::string_view indent = text.substr(line_start);
    if (indent.empty() || !python_strip(indent, true, false).empty()) return text;
    return text.substr(0, line_start);
  }

  void emit_text(std::string_view text, size_t offset) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::Text;
    t.offset = offset;
    t.text = std::string(text);
    tokens_.push_back(std::move(t));
  }

  void emit(TokenKind kind, size_t offset, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.offset = offset;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  // `{% raw %}` (with optional whitespace control) starting after `{%` and its sign.
  bool match_raw_begin(size_t p, size_t& body) const {
    p = skip_space(p);
    if (!starts(p, "raw")) return false;
    p = skip_space(p + 3);
    if (starts(p, "-%}")) {
      body = skip_space(p + 3);
      return true;
    }
    if (starts(p, "%}")) {
      body = p + 2;
      return true;
    }
    return false;
  }

  void lex_raw(size_t tag, size_t body) {
    for (size_t at = s_.find("{%", body); at != std::string::npos; at = s_.find("{%", at + 1)) {
      size_t p = at + 2;
      const char sign = p < s_.size() && (s_[p] == '-' || s_[p] == '+') ? s_[p] : '\0';
      if (sign != '\0') ++p;
      p = skip_space(p);
      if (!starts(p, "endraw")) continue;
      p = skip_space(p + 6);
      size_t end;
      if (starts(p, "+%}")) end = p + 3;
      else if (starts(p, "-%}")) end = skip_space(p + 3);
      else if (starts(p, "%}")) end = p + 2 + (o_.trim_blocks && p + 2 < s_.size() && s_[p + 2] == '\n' ? 1 : 0);
      else continue;
      emit_text(strip_before(std::string_view(s_).substr(body, at - body), sign, true, body), body);
      pos_ = end;
      return;
    }
    error(tag, "'{% raw %}' is never closed with '{% endraw %}'");
  }

  void lex_comment(size_t tag, size_t body) {
    const size_t close = s_.find("#}", body);
    if (close == std::string::npos) error(tag, "comment '{#' is never closed with '#}'");
    const char sign = close > body && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : '\0';
    size_t p = close + 2;
    if (sign == '-') p = skip_space(p);
    else if (sign == '\0' && o_.trim_blocks && p < s_.size() && s_[p] == '\n') ++p;
    pos_ = p;
  }

  void lex_tag(char kind, size_t tag, size_t body) {
    const bool block = kind == '%';
    emit(block ? TokenKind::BlockBegin : TokenKind::VariableBegin, tag);
    std::vector<std::pair<char, size_t>> open;  // brackets awaiting their closer
    size_t p = body;
    while (true) {
      if (p >= s_.size())
        error(tag, block ? "'{%' is never closed with '%}'" : "'{{' is never closed with '}}'");
      if (open.empty()) {
        size_t end = 0;
        if (block) {
          if (starts(p, "+%}")) end = p + 3;
          else if (starts(p, "-%}")) end = skip_space(p + 3);
          else if (starts(p, "%}")) end = p + 2 + (o_.trim_blocks && p + 2 < s_.size() && s_[p + 2] == '\n' ? 1 : 0);
        } else {
          if (starts(p, "-}}")) end = skip_space(p + 3);
          else if (starts(p, "}}")) end = p + 2;
        }
        if (end != 0) {
          emit(block ? TokenKind::BlockEnd : TokenKind::VariableEnd, p);
          pos_ = end;
          return;
        }
      }
      if (const size_t ws = python_space_length(s_, p)) {
        p += ws;
        continue;
      }
      if (size_t end = match_float(p)) {
        lex_float(p, end);
        p = end;
      } else if (size_t iend = match_integer(p)) {
        lex_integer(p, iend);
        p = iend;
      } else if (is_name_start(s_[p])) {
        size_t q = p + 1;
        while (q < s_.size() && is_name_char(s_[q])) ++q;
        emit(TokenKind::Name, p, s_.substr(p, q - p));
        p = q;
      } else if (s_[p] == '\'' || s_[p] == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, open);
      }
    }
  }

  // (\d+_)*\d+ : digits with single underscores between them; returns the end or 0.
  size_t match_digit_run(size_t p) const {
    if (p >= s_.size() || !is_digit(s_[p])) return 0;
    while (true) {
      while (p < s_.size() && is_digit(s_[p])) ++p;
      if (p + 1 < s_.size() && s_[p] == '_' && is_digit(s_[p + 1])) {
        ++p;
        continue;
      }
      return p;
    }
  }

  size_t match_float(size_t p) const {
    if (p > 0 && s_[p - 1] == '.') return 0;
    const size_t whole = match_digit_run(p);
    if (whole == 0) return 0;
    size_t q = whole;
    if (q < s_.size() && s_[q] == '.') {
      if (const size_t frac = match_digit_run(q + 1)) q = frac;
    }
    if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E')) {
      size_t e = q + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (const size_t exp = match_digit_run(e)) return exp;
    }
    return q > whole ? q : 0;
  }

  size_t match_integer(size_t p) const {
    if (!is_digit(s_[p])) return 0;
    if (s_[p] == '0' && p + 1 < s_.size()) {
      const char b = static_cast<char>(s_[p + 1] | 32);
      const int base = b == 'b' ? 2 : b == 'o' ? 8 : b == 'x' ? 16 : 0;
      if (base != 0) {
        auto valid = [base](char c) {
          const int v = hex_value(c);
          return v >= 0 && v < base;
        };
        size_t q = p + 2;
        while (q < s_.size()) {
          if (s_[q] == '_' && q + 1 < s_.size() && valid(s_[q + 1])) q += 2;
          else if (valid(s_[q])) ++q;
          else break;
        }
        if (q > p + 2) return q;
      }
    }
    const bool zero = s_[p] == '0';
    size_t q = p + 1;
    auto valid = [zero](char c) { return zero ? c == '0' : is_digit(c); };
    while (q < s_.size()) {
      if (s_[q] == '_' && q + 1 < s_.size() && valid(s_[q + 1])) q += 2;
      else if (valid(s_[q])) ++q;
      else break;
    }
    return q;
  }

  void lex_float(size_t p, size_t end) {
    std::string digits;
    for (size_t i = p; i < end; ++i)
      if (s_[i] != '_') digits += s_[i];
    Token t;
    t.kind = TokenKind::Float;
    t.offset = p;
    t.text = s_.substr(p, end - p);
    t.number = std::strtod(digits.c_str(), nullptr);
    tokens_.push_back(std::move(t));
  }

  void lex_integer(size_t p, size_t end) {
    int base = 10;
    size_t i = p;
    if (end - p > 2 && s_[p] == '0' && !is_digit(s_[p + 1]) && s_[p + 1] != '_') {
      const char b = static_cast<char>(s_[p + 1] | 32);
      base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
      i = p + 2;
    }
    uint64_t value = 0;
    for (; i < end; ++i) {
      if (s_[i] == '_') continue;
      const auto digit = static_cast<uint64_t>(hex_value(s_[i]));
      if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / static_cast<uint64_t>(base))
        error(p, "integer literal " + s_.substr(p, end - p) + " is too large");
      value = value * static_cast<uint64_t>(base) + digit;
    }
    Token t;
    t.kind = TokenKind::Integer;
    t.offset = p;
    t.text = s_.substr(p, end - p);
    t.integer = static_cast<int64_t>(value);
    tokens_.push_back(std::move(t));
  }

  size_t lex_string(size_t p) {
    const char quote = s_[p];
    size_t q = p + 1;
    while (q < s_.size() && s_[q] != quote) q += s_[q] == '\\' ? 2 : 1;
    if (q >= s_.size()) error(p, "unterminated string literal");
    Token t;
    t.kind = TokenKind::String;
    t.offset = p;
    t.text = unescape(p + 1, q);
    tokens_.push_back(std::move(t));
    return q + 1;
  }

  // Python's unicode-escape decoding, as Jinja2 applies it to string literals.
  std::string unescape(size_t begin, size_t end) const {
    std::string out;
    size_t i = begin;
    auto read_hex = [&](size_t count, size_t escape_at) {
      char32_t c = 0;
      for (size_t k = 0; k < count; ++k) {
        const int v = i < end ? hex_value(s_[i]) : -1;
        if (v < 0) error(escape_at, "truncated \\" + std::string(1, s_[escape_at + 1]) + " escape in string literal");
        c = c * 16 + static_cast<char32_t>(v);
        ++i;
      }
      if (c > 0x10FFFF) error(escape_at, "illegal Unicode character in string literal");
      if (c >= 0xD800 && c <= 0xDFFF) error(escape_at, "surrogate code point in string literal");
      return c;
    };
    while (i < end) {
      if (s_[i] != '\\') {
        out += s_[i++];
        continue;
      }
      const size_t escape_at = i;
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': append_utf8(out, read_hex(2, escape_at)); break;
        case 'u': append_utf8(out, read_hex(4, escape_at)); break;
        case 'U': append_utf8(out, read_hex(8, escape_at)); break;
        case 'N': error(escape_at, "\\N{...} escapes are not supported in string literals");
        default:
          if (e >= '0' && e <= '7') {
            char32_t c = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && i < end && s_[i] >= '0' && s_[i] <= '7'; ++k) c = c * 8 + static_cast<char32_t>(s_[i++] - '0');
            append_utf8(out, c);
          } else {
            // Unknown escapes stay as written.
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  size_t lex_operator(size_t p, std::vector<std::pair<char, size_t>>& open) {
    for (std::string_view op : kTwoCharOperators) {
      if (starts(p, op)) {
        emit(TokenKind::Operator, p, std::string(op));
        return p + 2;
      }
    }
    const char c = s_[p];
    if (kOneCharOperators.find(c) == std::string_view::npos) {
      size_t next = p;
      const char32_t cp = next_code_point(s_, next);
      std::string shown;
      append_utf8(shown, cp);
      error(p, "unexpected character '" + shown + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      open.emplace_back(c, p);
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty()) error(p, std::string("unexpected '") + c + "'");
      const char opener = open.back().first;
      const char expected = opener == '(' ? ')' : opener == '[' ? ']' : '}';
      if (c != expected) error(p, std::string("unexpected '") + c + "', expected '" + expected + "'");
      open.pop_back();
    }
    emit(TokenKind::Operator, p, std::string(1, c));
    return p + 1;
  }

  const Source& src_;
  const std::string& s_;
  LexerOptions o_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Token> tokenize(const Source& source, const LexerOptions& options) { return Lexer(source, options).run(); }

}  // namespace glass::jinja
