// Python's string formatting as templates use it: `"%s: %d" % (a, b)` and str.format().
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace glass::jinja {

// format % args: a tuple supplies positional values, a dict named `%(key)s` values.
// Widths and precisions are checked against the string budget before anything is padded,
// and the result is charged to `budget`, as by the functions below.
std::string python_percent_format(const std::string& format, const Value& args, RenderBudget& budget);

// format.format(*positional, **keyword) with `{}`, `{0}`, `{name}`, attribute/index
// lookups, `!r`/`!s` and format specs ([[fill]align][sign][#][0][width][,][.precision][type]).
std::string python_str_format(const std::string& format, const CallArgs& args, RenderBudget& budget);

// format(value, spec) for one value, as str.format applies a spec.
std::string python_format_value(const Value& value, const std::string& spec, RenderBudget& budget);

}  // namespace glass::jinja
