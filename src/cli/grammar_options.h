// Constrained decoding from the command line, with llama.cpp's flags: --grammar (GBNF
// text, or a file holding it), --grammar-file, and -j/--json-schema (JSON text or a file).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "grammar/grammar.h"

namespace glass::cli {

struct GrammarOptions {
  std::string grammar, grammar_file, json_schema;

  void add_to(CLI::App* sub);
  // The grammar the flags give, compiled; nullopt when none was given. Errors name the
  // flag (and the file, line and column).
  std::optional<grammar::Grammar> resolve() const;
};

}  // namespace glass::cli
