#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "chat/jinja_text.h"

namespace glass::jinja {

namespace {

Value from_json_at(const OrderedJson& json, int depth) {
  if (depth > kMaxValueDepth) fail("JSON nested more than ", kMaxValueDepth, " levels deep");
  switch (json.type()) {
    case OrderedJson::value_t::null: return Value::none();
    case OrderedJson::value_t::boolean: return Value::boolean(json.get<bool>());
    case OrderedJson::value_t::number_integer: return Value::integer(json.get<int64_t>());
    case OrderedJson::value_t::number_unsigned: {
      const auto u = json.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case OrderedJson::value_t::number_float: return Value::number(json.get<double>());
    case OrderedJson::value_t::string: {
      const auto& s = json.get_ref<const std::string&>();
      if (!is_valid_utf8(s)) fail("JSON string is not valid UTF-8");
      return Value::string(s);
    }
    case OrderedJson::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case OrderedJson::value_t::object: {
      // Keys are looked up in a hash index, not by Dict::set's scan (linear per key):
      // a request may send 100,000 keys. A repeated key keeps its first position.
      Dict d;
      std::unordered_map<std::string_view, size_t> position;
      position.reserve(json.size());
      for (auto member = json.begin(); member != json.end(); ++member) {
        const std::string& key = member.key();  // in `json`, which outlives the index
        if (!is_valid_utf8(key)) fail("JSON key is not valid UTF-8");
        Value v = from_json_at(member.value(), depth + 1);
        auto [it, inserted] = position.try_emplace(key, d.size());
        if (inserted) d.append(Value::string(key), std::move(v));
        else d.replace_at(it->second, std::move(v));
      }
      return Value::dict(std::move(d));
    }
    default: fail("JSON value of type ", json.type_name(), " has no template equivalent");
  }
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t c = next_code_point(s, i);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(d);
}

class JsonWriter {
 public:
  JsonWriter(std::string& out, const JsonDumpOptions& o) : out_(out), o_(o) {
    item_separator_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  void write(const Value& v, int level) {
    if (level > kMaxValueDepth + 2) fail("value nested too deeply for tojson");
    switch (v.kind()) {
      case Value::Kind::None: out_ += "null"; return;
      case Value::Kind::Bool: out_ += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out_ += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out_ += float_json(v.as_float()); return;
      case Value::Kind::String: append_json_string(out_, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::List:
        if (v.is_sequence_list()) {
          write_list(v.as_list().items, level);
          return;
        }
        break;
      case Value::Kind::Dict: write_dict(v.as_dict(), level); return;
      default: break;
    }
    fail("Object of type ", type_name(v), " is not JSON serializable");
  }

 private:
  void newline(int level) {
    if (!o_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *o_.indent;
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(level + 1);
      write(items[i], level + 1);
    }
    newline(level);
    out_ += ']';
  }

  static std::string key_text(const Value& key) {
    switch (key.kind()) {
      case Value::Kind::String: return key.as_string();
      case Value::Kind::Float: return float_json(key.as_float());
      case Value::Kind::Bool: return key.as_bool() ? "true" : "false";
      case Value::Kind::None: return "null";
      case Value::Kind::Int: return std::to_string(key.as_int());
      default: fail("keys must be str, int, float, bool or None, not ", type_name(key));
    }
  }

  void write_dict(const Dict& d, int level) {
    if (d.size() == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries()) entries.push_back(&e);
    if (o_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return compare(a->first, b->first, "<") < 0; });
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(level + 1);
      append_json_string(out_, key_text(entries[i]->first), o_.ensure_ascii);
      out_ += o_.key_separator;
      write(entries[i]->second, level + 1);
    }
    newline(level);
    out_ += '}';
  }

  std::string& out_;
  const JsonDumpOptions& o_;
  std::string item_separator_;
};

}  // namespace

Value value_from_json(const OrderedJson& json) { return from_json_at(json, 0); }

std::string python_json_dumps(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  JsonWriter(out, options).write(value, 0);
  return out;
}

}  // namespace glass::jinja
