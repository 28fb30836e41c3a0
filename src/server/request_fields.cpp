#include "server/request_fields.h"

#include <limits>

#include "base/json_fields.h"

namespace glass::server {

using OJson = nlohmann::ordered_json;

OJson parse_request_object(const std::string& text) {
  OJson body;
  try {
    // Bounded: nesting past kMaxJsonDepth is refused while parsing, before anything
    // copies, prints or destroys a deep tree; keys insert in constant time.
    body = parse_ordered_json(text, "request body");
  } catch (const JsonInputError& e) {
    switch (e.kind()) {
      case JsonInputError::Kind::too_deep:
      case JsonInputError::Kind::out_of_range: {
        const std::string where = e.path().empty() ? "The request body" : "'" + e.path() + "'";
        throw ApiError(400, str_cat(where, " ", e.reason()), "invalid_request_error",
                       e.path().empty() ? std::nullopt : std::optional<std::string>(e.path()),
                       e.kind() == JsonInputError::Kind::too_deep ? "nested_too_deeply" : "invalid_value");
      }
      case JsonInputError::Kind::syntax: break;
    }
    throw ApiError(400, str_cat("We could not parse the JSON body of your request: ", e.reason()), "invalid_request_error",
                   std::nullopt, "invalid_json");
  }
  if (!body.is_object())
    throw ApiError(400, str_cat("The request body must be a JSON object, got ", a_type(body)), "invalid_request_error",
                   std::nullopt, "invalid_json");
  return body;
}

std::string a_type(const OJson& v) {
  switch (v.type()) {
    case OJson::value_t::null: return "null";
    case OJson::value_t::object: return "an object";
    case OJson::value_t::array: return "an array";
    case OJson::value_t::string: return "a string";
    case OJson::value_t::boolean: return "a boolean";
    case OJson::value_t::number_integer:
    case OJson::value_t::number_unsigned: return "an integer";
    case OJson::value_t::number_float: return "a number";
    default: return "an unknown type";
  }
}

ApiError wrong_type(const std::string& param, const std::string& expected, const OJson& got) {
  return invalid_parameter(param, str_cat("'", param, "' must be ", expected, ", got ", a_type(got)), "invalid_type");
}

const OJson* field(const OJson& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> bool_field(const OJson& body, const char* name) {
  const OJson* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> number_field(const OJson& body, const char* name, double lo, double hi, bool lo_open) {
  const OJson* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, "a number", *v);
  const double x = v->get<double>();
  const bool low_ok = lo_open ? x > lo : x >= lo;
  if (!low_ok || !(x <= hi)) {
    const std::string range = hi == std::numeric_limits<double>::infinity()
                                  ? str_cat(lo_open ? "greater than " : "at least ", lo)
                                  : str_cat("between ", lo, " and ", hi);
    throw invalid_parameter(name, str_cat("'", name, "' must be ", range, ", got ", x));
  }
  return x;
}

std::optional<int64_t> int_field(const OJson& body, const char* name, int64_t lo, int64_t hi) {
  const OJson* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw invalid_parameter(name, str_cat("'", name, "' must be at most ", hi, ", got ", v->get<uint64_t>()));
  const auto x = v->get<int64_t>();
  if (x < lo || x > hi) {
    const std::string range = hi == std::numeric_limits<int64_t>::max() ? str_cat("at least ", lo)
                                                                         : str_cat("between ", lo, " and ", hi);
    throw invalid_parameter(name, str_cat("'", name, "' must be ", range, ", got ", x));
  }
  return x;
}

}  // namespace glass::server
