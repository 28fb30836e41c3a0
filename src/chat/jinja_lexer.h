// Splits template source into text and tag tokens exactly as Jinja2's lexer does,
// including `-`/`+` whitespace control, trim_blocks and lstrip_blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace glass::jinja {

// Template text after Jinja2's newline normalisation, with its name for error messages.
struct Source {
  std::string name;
  std::string text;

  // "line L, column C" (both from 1; columns count code points) of a byte offset.
  std::string location(size_t offset) const;
};

// `name: line L, column C: message`.
[[noreturn]] void fail_at(const Source& source, size_t offset, const std::string& message);

struct LexerOptions {
  bool trim_blocks = true;    // drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  // drop spaces and tabs before a block or comment tag on its own line
};

enum class TokenKind : uint8_t {
  Text,
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,
  Integer,
  Float,
  Operator,
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  size_t offset = 0;  // byte offset in Source::text
  std::string text;   // Text: the data; Name; String: the unescaped value; Operator: the symbol
  int64_t integer = 0;
  double number = 0;
};

// Jinja2 turns \r\n and \r into \n and drops one trailing newline before lexing.
std::string normalize_newlines(const std::string& text);

// The tokens of `source`, ending with an End token. Comments produce nothing.
std::vector<Token> tokenize(const Source& source, const LexerOptions& options = {});

}  // namespace glass::jinja
