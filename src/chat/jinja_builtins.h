// Jinja2's built-in filters, tests and globals, and Python's attribute and item access
// (str, dict and list methods included) as the sandboxed environment allows them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace glass::jinja {

using FilterFunction = Value (*)(Interpreter&, const Value& operand, const CallArgs& args);
using TestFunction = bool (*)(Interpreter&, const Value& operand, const CallArgs& args);

// nullptr when there is no such filter / test.
FilterFunction find_filter(std::string_view name);
TestFunction find_test(std::string_view name);

// object.name: Python attributes (methods of str, dict, list) first, then items; a
// missing attribute is an undefined value that names what was missing. What it costs
// (a lookup, a copy) is charged to `budget`, as by every function here.
Value get_attribute(const Value& object, const std::string& name, RenderBudget& budget);
// Python attributes only, without the item fallback: the `attr` filter.
Value get_python_attribute(const Value& object, const std::string& name, RenderBudget& budget);
// object[key]: items first, then attributes for string keys.
Value get_item(const Value& object, const Value& key, RenderBudget& budget);
// object[start:stop:step] on strings, lists and tuples; undefined parts are omitted.
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step, RenderBudget& budget);

// A string built by a built-in, charged to `budget` (for results no longer than a small
// multiple of strings already charged; longer ones are charged before they are built).
Value new_string(std::string s, RenderBudget& budget);
// Whether `key` may be a dict key (hash_value() would not fail).
bool is_hashable(const Value& key);
// A decimal index as written in a template ("0", "12"), saturated at INT64_MAX.
int64_t parse_index(std::string_view digits);

// The globals of transformers' environment: namespace, range, dict, cycler, joiner,
// raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> builtin_globals();

// Binds call arguments to a Python signature: parameter names in order; the first
// `required` must be given. Errors name `function`.
class BoundArgs {
 public:
  BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> names,
            size_t required = 0);
  bool has(size_t i) const { return values_[i] != nullptr; }
  const Value& get(size_t i) const;  // undefined when not given
  Value get_or(size_t i, Value fallback) const { return has(i) ? *values_[i] : std::move(fallback); }

 private:
  std::vector<const Value*> values_;
};

}  // namespace glass::jinja
