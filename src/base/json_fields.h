// JSON from input (files, flags, request bodies): parsed with bounds, and typed access to
// fields with errors that name the file and the field.
//
// Every JSON text glass reads goes through parse_json / parse_ordered_json, which refuse
// nesting deeper than kMaxJsonDepth while parsing (so no deep tree is ever built: copying,
// printing or comparing one recurses once per level), and build objects in time linear in
// their number of keys. Error messages never serialize a whole value: json_excerpt()
// describes one in bounded length and time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace glass {

using Json = nlohmann::json;
// Objects in the order their keys came (chat messages, tool schemas, template variables).
using OrderedJson = nlohmann::ordered_json;

// Containers (arrays and objects) nested inside one another: more is refused while
// parsing. Real inputs nest a handful of levels (a tool's JSON schema a few dozen).
inline constexpr int kMaxJsonDepth = 128;

// JSON input that was refused: what, where, and why.
class JsonInputError : public Error {
 public:
  enum class Kind {
    syntax,      // not valid JSON
    too_deep,    // nested more than kMaxJsonDepth levels
    out_of_range,  // a number past a double's range (1e999)
  };
  JsonInputError(const std::string& message, Kind kind, std::string path, std::string reason)
      : Error(message), kind_(kind), path_(std::move(path)), reason_(std::move(reason)) {}
  Kind kind() const { return kind_; }
  // Where in the document, from the top: "messages[0].content[2]" ("" for the top level;
  // long paths are cut, ending in "...").
  const std::string& path() const { return path_; }
  // Why, without the source or the path: "is nested more than 128 levels deep".
  const std::string& reason() const { return reason_; }

 private:
  Kind kind_;
  std::string path_;
  std::string reason_;
};

// Parses `text`; throws JsonInputError whose message names `source`, the byte offset or
// the path, and why. A repeated key keeps its first position and its last value (as
// Python's json.loads).
Json parse_json(std::string_view text, const std::string& source);
OrderedJson parse_ordered_json(std::string_view text, const std::string& source);

// Why a JSON text does not parse, in glass's words: "at line 3, column 14: expected ','
// or '}' after an object member, found \"content\"". `position` is what nlohmann's sax
// parse_error reports (the bytes read when it stopped); `library_message` its message,
// read only to tell which rule was broken.
std::string json_syntax_problem(std::string_view text, size_t position, std::string_view library_message);

// Reads (read_text_file: a regular file, at most kMaxJsonFileBytes) and parses a JSON file.
Json read_json_file(const std::string& path);
OrderedJson read_ordered_json_file(const std::string& path);

// Field readers. `source` names the file (or request) for the error message.
// The *_or variants accept a missing or null field and return the default.
int64_t json_int(const Json& obj, const char* field, const std::string& source);
std::optional<int64_t> json_int_opt(const Json& obj, const char* field, const std::string& source);
double json_number(const Json& obj, const char* field, const std::string& source);
std::optional<double> json_number_opt(const Json& obj, const char* field, const std::string& source);
bool json_bool_or(const Json& obj, const char* field, bool fallback, const std::string& source);
std::string json_string(const Json& obj, const char* field, const std::string& source);
std::optional<std::string> json_string_opt(const Json& obj, const char* field, const std::string& source);

// "string", "integer", ... for error messages.
const char* json_type_name(const Json& value);

// `value` for an error message, at most about 80 characters whatever it holds, in time
// bounded by that: scalars as JSON (long strings cut), containers by their first items
// and their size, e.g. `["a", "b", ...] (100001 items)`.
std::string json_excerpt(const Json& value);
std::string json_excerpt(const OrderedJson& value);

}  // namespace glass
