// Parses tokens into statements with Jinja2's grammar and operator precedence.
#pragma once

#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace glass::jinja {

// Nesting beyond these is refused with an error, so that parsing and rendering never
// exhaust the stack (Python's Jinja2 gives up on far shallower nesting).
inline constexpr int kMaxNesting = 100;         // blocks inside blocks, brackets inside brackets
inline constexpr int kMaxExpressionHeight = 200;  // operators applied to operators

// Unknown filters and tests are errors here, except where Jinja2 defers them to when
// they run: inside `if` conditions and branches and conditional expressions.
Body parse_template(const Source& source, std::vector<Token> tokens);

}  // namespace glass::jinja
