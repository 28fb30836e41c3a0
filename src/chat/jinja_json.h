// JSON in and out of templates: message and tool JSON become template values, and
// `tojson` writes values back exactly as Python's json.dumps does.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja_value.h"

namespace glass::jinja {

// Chat messages and tool schemas keep their key order (Python dicts do, and tojson
// prints keys in that order), so they travel as ordered_json.
using OrderedJson = nlohmann::ordered_json;

// Objects become dicts in key order, arrays lists; integers past int64 become floats.
Value value_from_json(const OrderedJson& json);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // none: one line
  std::optional<std::string> item_separator;  // default ", " (or "," when indenting)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// json.dumps(value, ...) with Python's formatting of floats, escapes and separators. The
// text is checked against the string budget as it grows and charged to `budget`.
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options, RenderBudget& budget);

}  // namespace glass::jinja
