// A Jinja template, parsed once and rendered many times: the interpreter's public face.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_interpreter.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"

namespace glass::jinja {

using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  // Parses `text` as transformers configures Jinja2: trim_blocks, lstrip_blocks and the
  // loop controls ({% break %}, {% continue %}). Syntax errors, unknown tags, filters and
  // tests throw glass::Error naming `name`, the line and the column.
  static Template parse(const std::string& text, const std::string& name = "template",
                        const LexerOptions& options = {});

  // Renders with `variables` over the globals (namespace, range, raise_exception,
  // strftime_now...). Runtime errors name the line and column of the expression at fault.
  std::string render(const Variables& variables, const RenderOptions& options = {}) const;

  const std::string& name() const;

 private:
  struct Parsed;
  explicit Template(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace glass::jinja
