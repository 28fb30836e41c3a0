#include "base/json_fields.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"

namespace glass {

namespace {

// Paths and excerpts in messages are cut near these lengths.
constexpr size_t kMaxPathChars = 80;
constexpr size_t kMaxKeyChars = 32;
constexpr size_t kMaxExcerptChars = 72;
constexpr size_t kMaxStringChars = 40;
// An ordered object looks a key up by scanning its keys up to this size, by a hash index past it.
constexpr size_t kIndexAfterKeys = 16;

// `s` cut to at most `n` bytes, not inside a UTF-8 sequence.
std::string_view cut_utf8(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// One level of the path to where the parser is: a key in an object, an index in an array.
struct PathStep {
  bool in_array = false;
  size_t index = 0;
  std::string key;
};

std::string path_text(const std::vector<PathStep>& steps) {
  std::string p;
  for (const PathStep& s : steps) {
    if (p.size() > kMaxPathChars) {
      p += "...";
      break;
    }
    if (s.in_array) {
      p += str_cat("[", s.index, "]");
    } else {
      if (!p.empty()) p += '.';
      const std::string_view k = cut_utf8(s.key, kMaxKeyChars);
      p += k;
      if (k.size() < s.key.size()) p += "...";
    }
  }
  return p;
}

// A SAX handler that builds the tree as nlohmann's own DOM parser does, but stops at
// kMaxJsonDepth, keeps the path for messages, and inserts into ordered objects in
// constant time per key (nlohmann's ordered_map compares each key with all before it).
template <class J>
class BoundedBuilder {
 public:
  using number_integer_t = typename J::number_integer_t;
  using number_unsigned_t = typename J::number_unsigned_t;
  using number_float_t = typename J::number_float_t;
  using string_t = typename J::string_t;
  using binary_t = typename J::binary_t;
  static constexpr bool kOrdered = std::is_same_v<J, OrderedJson>;

  BoundedBuilder(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  J root;

  bool null() { return put(J(nullptr)); }
  bool boolean(bool v) { return put(J(v)); }
  bool number_integer(number_integer_t v) { return put(J(v)); }
  bool number_unsigned(number_unsigned_t v) { return put(J(v)); }
  bool number_float(number_float_t v, const string_t&) { return put(J(v)); }
  bool string(string_t& v) { return put(J(std::move(v))); }
  bool binary(binary_t&) { return refuse(JsonInputError::Kind::syntax, "is binary data, which JSON text cannot hold"); }

  bool start_object(std::size_t) { return open(J::object()); }
  bool start_array(std::size_t) { return open(J::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    open_.back().key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range.406: "number overflow parsing '1e999'"
      return refuse(JsonInputError::Kind::out_of_range,
                    "is a number outside the range of a double (about -1.8e308 to 1.8e308)");
    }
    const std::string what = json_syntax_problem(text_, position, e.what());
    error_ = std::make_unique<JsonInputError>(str_cat(source_, ": not valid JSON ", what), JsonInputError::Kind::syntax,
                                              "", what);
    return false;
  }

  // The error that stopped the parse (when sax_parse returned false).
  [[noreturn]] void throw_error() const {
    if (error_) throw *error_;
    throw JsonInputError(str_cat(source_, ": not valid JSON"), JsonInputError::Kind::syntax, "", "is not valid JSON");
  }

 private:
  struct Open {
    J* value;
    std::string key;   // objects: the key of the value that comes next
    size_t count = 0;  // arrays: items so far
    std::unique_ptr<std::unordered_map<string_t, size_t>> index;  // ordered objects past kIndexAfterKeys
  };

  // The path to where the next value goes: the open containers' items being read
  // (an array's last item), then the next value's key or index.
  std::vector<PathStep> steps() const {
    std::vector<PathStep> s;
    for (size_t i = 0; i < open_.size(); ++i) {
      const Open& o = open_[i];
      const bool innermost = i + 1 == open_.size();
      if (o.value->is_array()) s.push_back({true, innermost ? o.count : o.count - 1, {}});
      else s.push_back({false, 0, o.key});
    }
    return s;
  }

  bool refuse(JsonInputError::Kind kind, const std::string& reason) {
    const std::string path = path_text(steps());
    error_ = std::make_unique<JsonInputError>(
        str_cat(source_, ": JSON value ", path.empty() ? "" : "at " + path + " ", reason), kind, path, reason);
    return false;
  }

  // Where the next value goes (a new array item, an object's slot for the last key).
  J* slot() {
    if (open_.empty()) return &root;
    Open& top = open_.back();
    if (top.value->is_array()) {
      auto& items = top.value->template get_ref<typename J::array_t&>();
      items.emplace_back();
      ++top.count;
      return &items.back();
    }
    auto& members = top.value->template get_ref<typename J::object_t&>();
    if constexpr (kOrdered) {
      // A repeated key keeps its first position and takes the new value.
      auto& list = static_cast<typename J::object_t::Container&>(members);
      if (top.index) {
        auto [it, inserted] = top.index->try_emplace(top.key, list.size());
        if (!inserted) return &(list[it->second].second = J());
      } else {
        for (auto& [k, v] : list)
          if (k == top.key) return &(v = J());
        if (list.size() + 1 > kIndexAfterKeys) {
          top.index = std::make_unique<std::unordered_map<string_t, size_t>>();
          top.index->reserve(list.size() * 2 + 1);
          for (size_t i = 0; i < list.size(); ++i) top.index->emplace(list[i].first, i);
          top.index->emplace(top.key, list.size());
        }
      }
      list.emplace_back(top.key, J());  // the key stays for the path in messages
      return &list.back().second;
    } else {
      auto [it, inserted] = members.try_emplace(top.key);
      if (!inserted) it->second = J();
      return &it->second;
    }
  }

  bool put(J v) {
    *slot() = std::move(v);
    return true;
  }

  bool open(J container) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
      return refuse(JsonInputError::Kind::too_deep, str_cat("is nested more than ", kMaxJsonDepth, " levels deep"));
    J* s = slot();
    *s = std::move(container);
    open_.push_back({s, {}, 0, nullptr});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::string& source_;
  std::vector<Open> open_;
  std::unique_ptr<JsonInputError> error_;
};

template <class J>
J parse_bounded(std::string_view text, const std::string& source) {
  BoundedBuilder<J> builder(text, source);
  if (!J::sax_parse(text.data(), text.data() + text.size(), &builder, J::input_format_t::json, /*strict=*/true,
                    /*ignore_comments=*/false))
    builder.throw_error();
  return std::move(builder.root);
}

template <class J>
void excerpt_into(const J& v, std::string& out, int depth) {
  if (out.size() > kMaxExcerptChars) return;
  if (v.is_string()) {
    const auto& s = v.template get_ref<const std::string&>();
    const std::string_view head = cut_utf8(s, kMaxStringChars);
    out += J(std::string(head)).dump(-1, ' ', false, J::error_handler_t::replace);
    if (head.size() < s.size()) out += "...";
    return;
  }
  if (!v.is_array() && !v.is_object()) {
    out += v.dump();  // numbers, booleans, null: short
    return;
  }
  if (v.empty()) {
    out += v.is_array() ? "[]" : "{}";
    return;
  }
  if (depth >= 3) {
    out += v.is_array() ? "[...]" : "{...}";
    return;
  }
  out += v.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (out.size() > kMaxExcerptChars) {
      out += "...";
      break;
    }
    if (v.is_object()) {
      const std::string_view k = cut_utf8(it.key(), kMaxStringChars);
      out += J(std::string(k)).dump(-1, ' ', false, J::error_handler_t::replace);
      out += ": ";
    }
    excerpt_into(*it, out, depth + 1);
  }
  out += v.is_array() ? ']' : '}';
}

template <class J>
std::string excerpt(const J& v) {
  std::string out;
  excerpt_into(v, out, 0);
  if (v.is_array() || v.is_object())
    if (v.size() > 8 || out.size() > kMaxExcerptChars) out += str_cat(" (", v.size(), v.is_array() ? " items)" : " keys)");
  return out;
}

}  // namespace

std::string json_syntax_problem(std::string_view text, size_t position, std::string_view library_message) {
  // Which rule broke, from the parser's message; the words are glass's own.
  auto says = [&](std::string_view phrase) { return library_message.find(phrase) != std::string_view::npos; };
  const bool at_end = position > text.size() || says("unexpected end of input");
  const bool in_string = says("invalid string");
  std::string why;
  if (says("control character")) why = "a control character inside a string must be escaped (\\n, \\t, \\u0000)";
  else if (says("missing closing quote")) why = "a string has no closing quote";
  else if (says("ill-formed UTF-8")) why = "a string holds bytes that are not UTF-8";
  else if (says("\\u")) why = "a \\u escape needs four hex digits (and a surrogate pair for characters past U+FFFF)";
  else if (says("forbidden character after backslash")) why = "a backslash in a string must start an escape such as \\n";
  else if (says("invalid number")) why = "a number is malformed";
  else if (at_end) why = "the text ends before the JSON value is complete";
  else if (says("; expected end of input")) why = "more text follows the JSON value";
  else if (says("; expected ':'")) why = "expected ':' after an object key";
  else if (says("; expected string literal")) why = "expected an object key (a string in double quotes)";
  else if (says("; expected '}'")) why = "expected ',' or '}' after an object member";
  else if (says("; expected ']'")) why = "expected ',' or ']' after an array item";
  else why = "expected a value (an object, array, string, number, true, false or null)";

  // Where: inside a string, the byte that broke it (the last one read); elsewhere, the
  // whole token that did not fit (a string, a word or number, or one character).
  const size_t last = std::min(position > 0 ? position - 1 : 0, text.size());
  size_t at = last;
  if (!in_string && !at_end && last < text.size()) {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.'; };
    if (text[last] == '"') {
      at = last > 0 ? last - 1 : 0;
      while (at > 0 && !(text[at] == '"' && text[at - 1] != '\\')) --at;
    } else if (word(text[last])) {
      while (at > 0 && word(text[at - 1])) --at;
    }
  }
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  std::string found;
  if (!at_end && at < text.size()) {
    const std::string_view token = text.substr(at, last + 1 - at);
    const auto ch = static_cast<unsigned char>(text[at]);
    char buf[8];
    if (token.size() > 1) {
      found = str_cat(", found ", std::string(cut_utf8(token, 24)), token.size() > 24 ? "..." : "");
    } else if (ch >= 0x20 && ch < 0x7f) {
      found = str_cat(", found '", static_cast<char>(ch), "'");
    } else if (ch == '\n') {
      found = ", found a line break";
    } else {
      std::snprintf(buf, sizeof buf, "0x%02x", ch);
      found = str_cat(", found byte ", buf);
    }
  }
  return str_cat("at line ", line, ", column ", at - line_start + 1, ": ", why, found);
}

Json parse_json(std::string_view text, const std::string& source) { return parse_bounded<Json>(text, source); }

OrderedJson parse_ordered_json(std::string_view text, const std::string& source) {
  return parse_bounded<OrderedJson>(text, source);
}

Json read_json_file(const std::string& path) { return parse_json(read_text_file(path, kMaxJsonFileBytes), path); }

OrderedJson read_ordered_json_file(const std::string& path) {
  return parse_ordered_json(read_text_file(path, kMaxJsonFileBytes), path);
}

std::string json_excerpt(const Json& value) { return excerpt(value); }
std::string json_excerpt(const OrderedJson& value) { return excerpt(value); }

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
  fail(source, ": field \"", field, "\" must be ", expected, ", got ", json_type_name(got), " ", json_excerpt(got));
}

}  // namespace

std::optional<int64_t> json_int_opt(const Json& obj, const char* field, const std::string& source) {
  const Json* v = find_field(obj, field);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(source, ": field \"", field, "\" must be at most ", INT64_MAX, ", got ", v->get<uint64_t>());
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    // Only floats that are exactly an int64 (4.0); the range check comes first, since
    // converting a double past int64 is undefined.
    const double d = v->get<double>();
    if (d >= -9.223372036854775808e18 && d < 9.223372036854775808e18 && d == static_cast<double>(static_cast<int64_t>(d)))
      return static_cast<int64_t>(d);
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
