// Typed access to JSON fields with errors that name the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace glass {

using Json = nlohmann::json;

// Parses `text`; on failure the error names `source` and the byte offset.
Json parse_json(const std::string& text, const std::string& source);

// Reads and parses a JSON file.
Json read_json_file(const std::string& path);

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

}  // namespace glass
