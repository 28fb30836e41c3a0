// Reading the fields of a JSON request body (the completions endpoints, /tokenize,
// /detokenize): each reader checks type and range and throws ApiError 400 naming the
// field. A field that is null counts as absent, as OpenAI treats it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace glass::server {

// The body as a JSON object (nesting bounded while parsing). Throws ApiError 400:
// malformed JSON (`invalid_json`), too deep (`nested_too_deeply`), or not an object.
nlohmann::ordered_json parse_request_object(const std::string& body);

// "a string", "an integer", ... for messages.
std::string a_type(const nlohmann::ordered_json& v);

// 400 `invalid_type`: "'param' must be <expected>, got <a_type(got)>".
ApiError wrong_type(const std::string& param, const std::string& expected, const nlohmann::ordered_json& got);

// The field, or nullptr when it is absent or null.
const nlohmann::ordered_json* field(const nlohmann::ordered_json& body, const char* name);

std::optional<bool> bool_field(const nlohmann::ordered_json& body, const char* name);
// A number in [lo, hi]; `lo_open` excludes lo.
std::optional<double> number_field(const nlohmann::ordered_json& body, const char* name, double lo, double hi,
                                   bool lo_open = false);
std::optional<int64_t> int_field(const nlohmann::ordered_json& body, const char* name, int64_t lo, int64_t hi);

}  // namespace glass::server
