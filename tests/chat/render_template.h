// The tests' one-line render: parse `source` and render it.
#pragma once

#include <string>

#include "chat/jinja_template.h"

namespace glass::test {

inline std::string render(const std::string& source, const jinja::Variables& vars = {},
                          const jinja::RenderOptions& options = {}) {
  return jinja::Template::parse(source).render(vars, options);
}

}  // namespace glass::test
