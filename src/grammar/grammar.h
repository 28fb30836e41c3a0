// Grammars for constrained decoding: llama.cpp's GBNF format, compiled to a byte-level
// grammar that GrammarMatcher (matcher.h) runs incrementally over token bytes.
//
// GBNF as accepted here (llama.cpp's format; see tests/grammar/data for examples):
//   rule      ::= name "::=" alternatives       (rules may span lines; a rule ends where
//                                                the next `name ::=` begins)
//   alternatives: sequence ("|" sequence)*      (an empty sequence matches "")
//   item      : "literal"  [a-z0-9_]  [^"\\]  .  name  ( alternatives )
//               each optionally followed by * + ? {m} {m,} {m,n}
//   escapes   : \n \t \r \\ \" \' \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH (code points)
//   comments  : # to the end of the line.  Names: letters, digits, '-' and '_'.
// The start rule is `root`. Literals and classes denote Unicode code points; they are
// compiled into UTF-8 byte sequences, so the matcher is purely byte-level and a token
// may end in the middle of a character.
//
// Compilation checks: syntax (errors say line, column and what was expected), rules used
// but not defined, a missing root, a grammar that accepts nothing (no derivation of root
// terminates), and left recursion (refused: rewrite it with repetition). Alternatives that
// can never finish (they use a rule with no terminating derivation) are dropped, so every
// prefix the matcher accepts can be completed. Inputs are bounded by GrammarLimits;
// hostile input gives a GrammarError, never a crash or a deep recursion.
//
// A Grammar is an immutable, cheap-to-copy handle (copies share the compiled form and a
// cache of matcher states, which is internally locked); it may be shared between threads
// and between many matchers. No global state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"

namespace glass::grammar {

// Bad grammar text (or a bad JSON schema, json_schema.h). line/column are 1-based where
// the error has a place in the text, 0 otherwise.
class GrammarError : public Error {
 public:
  GrammarError(const std::string& message, int line = 0, int column = 0)
      : Error(message), line_(line), column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

struct GrammarLimits {
  size_t max_text_bytes = size_t{4} << 20;  // grammar text
  int max_nesting = 200;                    // nested parentheses
  uint32_t max_repetition = 100000;         // m and n in {m,n}
  size_t max_elements = size_t{1} << 21;    // compiled size (elements of all rules)
  // Matcher states a grammar's shared cache holds before new matchers start a fresh one.
  size_t retire_states = size_t{1} << 20;
};

namespace detail {
struct CompiledGrammar;
}

class Grammar {
 public:
  // Parses and compiles GBNF text; the start rule is `root`. Throws GrammarError.
  static Grammar from_gbnf(std::string_view text, const GrammarLimits& limits = {});

  // Number of rules after compilation (helper rules for groups, repetitions and
  // character classes included) and of compiled elements: for diagnostics.
  size_t rule_count() const;
  size_t element_count() const;
  // A readable listing of the compiled byte-level rules, for debugging.
  std::string dump() const;

  const detail::CompiledGrammar& compiled() const { return *impl_; }

 private:
  explicit Grammar(std::shared_ptr<const detail::CompiledGrammar> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::CompiledGrammar> impl_;
  friend class GrammarMatcher;
};

}  // namespace glass::grammar
