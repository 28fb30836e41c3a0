#include "chat/jinja_template.h"

#include "chat/jinja_ast.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

struct Template::Parsed {
  Source source;
  Body body;
};

Template Template::parse(const std::string& text, const std::string& name, const LexerOptions& options) {
  if (!is_valid_utf8(text)) fail(name, ": the template is not valid UTF-8");
  auto parsed = std::make_shared<Parsed>();
  parsed->source.name = name;
  parsed->source.text = normalize_newlines(text);
  parsed->body = parse_template(parsed->source, tokenize(parsed->source, options));
  return Template(std::move(parsed));
}

std::string Template::render(const Variables& variables, const RenderOptions& options) const {
  auto globals = std::make_shared<Scope>(nullptr);
  for (auto& [name, value] : builtin_globals()) globals->set(name, std::move(value));
  // Template-level `set` writes here, over the caller's variables.
  auto scope = std::make_shared<Scope>(globals);
  for (const auto& [name, value] : variables) scope->set(name, value);
  Interpreter interpreter(parsed_->source, options);
  return interpreter.render(parsed_->body, scope);
}

const std::string& Template::name() const { return parsed_->source.name; }

}  // namespace glass::jinja
