#include "base/json_fields.h"

#include "base/error.h"
#include "base/mapped_file.h"

namespace glass {

Json parse_json(const std::string& text, const std::string& source) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(source, ": not valid JSON (at byte ", e.byte, "): ", e.what());
  }
}

Json read_json_file(const std::string& path) { return parse_json(read_text_file(path), path); }

const char* json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    default: return "unknown";
  }
}

namespace {

const Json* find_field(const Json& obj, const char* field) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const std::string& source, const char* field, const char* expected,
                             const Json& got) {
  fail(source, ": field \"", field, "\" must be ", expected, ", got ", json_type_name(got), " ",
       got.dump());
}

}  // namespace

std::optional<int64_t> json_int_opt(const Json& obj, const char* field, const std::string& source) {
  const Json* v = find_field(obj, field);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  wrong_type(source, field, "an integer", *v);
}

int64_t json_int(const Json& obj, const char* field, const std::string& source) {
  auto v = json_int_opt(obj, field, source);
  if (!v) fail(source, ": missing required field \"", field, "\" (an integer)");
  return *v;
}

std::optional<double> json_number_opt(const Json& obj, const char* field, const std::string& source) {
  const Json* v = find_field(obj, field);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(source, field, "a number", *v);
  return v->get<double>();
}

double json_number(const Json& obj, const char* field, const std::string& source) {
  auto v = json_number_opt(obj, field, source);
  if (!v) fail(source, ": missing required field \"", field, "\" (a number)");
  return *v;
}

bool json_bool_or(const Json& obj, const char* field, bool fallback, const std::string& source) {
  const Json* v = find_field(obj, field);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) wrong_type(source, field, "true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> json_string_opt(const Json& obj, const char* field,
                                           const std::string& source) {
  const Json* v = find_field(obj, field);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(source, field, "a string", *v);
  return v->get<std::string>();
}

std::string json_string(const Json& obj, const char* field, const std::string& source) {
  auto v = json_string_opt(obj, field, source);
  if (!v) fail(source, ": missing required field \"", field, "\" (a string)");
  return *v;
}

}  // namespace glass
