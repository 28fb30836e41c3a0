#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja_text.h"

namespace glass::jinja {

namespace {

const std::string& empty_string() {
  static const std::string kEmpty;
  return kEmpty;
}

int depth_of(const std::vector<Value>& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, v.depth());
  return d + 1;
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth) fail("value nested more than ", kMaxValueDepth, " levels deep");
}

bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }

// Python compares ints and floats exactly, without rounding the int.
bool int_equals_float(int64_t i, double f) {
  if (!std::isfinite(f) || f != std::trunc(f)) return false;
  if (f < -9223372036854775808.0 || f >= 9223372036854775808.0) return false;
  return static_cast<int64_t>(f) == i;
}

int compare_int_float(int64_t i, double f) {
  if (std::isnan(f)) return 2;  // unordered: every comparison is false
  if (f >= 9223372036854775808.0) return -1;
  if (f < -9223372036854775808.0) return 1;
  const double t = std::trunc(f);
  const auto ti = static_cast<int64_t>(t);
  if (i != ti) return i < ti ? -1 : 1;
  if (f == t) return 0;
  return f > t ? -1 : 1;
}

}  // namespace

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries_)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries_) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

void Dict::append(Value key, Value value) { entries_.emplace_back(std::move(key), std::move(value)); }

void Dict::replace_at(size_t i, Value value) { entries_[i].second = std::move(value); }

Value Value::undefined(std::string hint) {
  Value v;
  v.data_ = UndefinedData{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::none() {
  Value v;
  v.data_ = NoneData{};
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.data_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.data_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(std::vector<Value> items, ListKind kind, std::string iterator_type) {
  Value v;
  v.depth_ = depth_of(items);
  check_depth(v.depth_);
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), kind, std::move(iterator_type)});
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  int depth = 0;
  for (const auto& [key, value] : d.entries()) depth = std::max({depth, key.depth(), value.depth()});
  v.depth_ = depth + 1;
  check_depth(v.depth_);
  v.data_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<ObjectData> o) {
  Value v;
  v.depth_ = 1;
  v.data_ = std::move(o);
  return v;
}

Value Value::callable(std::string name, std::string type_name, NativeFunction fn) {
  Value v;
  v.data_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(type_name), std::move(fn)});
  return v;
}

double Value::to_double() const {
  if (is_float()) return as_float();
  if (is_int()) return static_cast<double>(as_int());
  return as_bool() ? 1.0 : 0.0;
}

int64_t Value::to_int() const { return is_int() ? as_int() : (as_bool() ? 1 : 0); }

const std::string& Value::undefined_hint() const {
  const auto& hint = std::get<UndefinedData>(data_).hint;
  return hint ? *hint : empty_string();
}

int Value::depth() const {
  // Objects are mutable (namespace attributes), so their depth is measured when walked.
  return depth_;
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::String: return std::get<StringPtr>(data_).get();
    case Kind::List: return std::get<ListPtr>(data_).get();
    case Kind::Dict: return std::get<DictPtr>(data_).get();
    case Kind::Object: return std::get<ObjectPtr>(data_).get();
    case Kind::Callable: return std::get<CallablePtr>(data_).get();
    default: return nullptr;
  }
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List:
      switch (v.as_list().kind) {
        case ListKind::List: return "list";
        case ListKind::Tuple: return "tuple";
        case ListKind::Iterator:
        case ListKind::View: return v.as_list().iterator_type;
      }
      return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Object: return v.as_object().kind == ObjectKind::Namespace ? "Namespace" : "LoopContext";
    case Value::Kind::Callable: return v.as_callable().type_name;
  }
  return "object";
}

void fail_undefined(const Value& v) {
  const std::string& hint = v.undefined_hint();
  fail(hint.empty() ? "the value is undefined" : hint);
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_float() != 0.0;
    case Value::Kind::String: return !v.as_string().empty();
    case Value::Kind::List: return v.as_list().kind == ListKind::Iterator || !v.as_list().items.empty();
    case Value::Kind::Dict: return v.as_dict().size() != 0;
    case Value::Kind::Object:
    case Value::Kind::Callable: return true;
  }
  return false;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(result.ptr - buf));
  // sci is "[-]d[.ddd]e(+|-)XX": split into sign, digits and a decimal exponent.
  size_t i = 0;
  std::string out;
  if (sci[i] == '-') out += '-', ++i;
  std::string digits;
  while (sci[i] != 'e') {
    if (sci[i] != '.') digits += sci[i];
    ++i;
  }
  const int exponent = std::stoi(std::string(sci.substr(i + 1)));
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += '.', out.append(digits, 1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  } else if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out += digits;
  } else {
    const auto int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out += digits;
      out.append(int_digits - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, int_digits);
      out += '.';
      out.append(digits, int_digits);
    }
  }
  return out;
}

void append_string_repr(std::string& out, std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t c = next_code_point(s, i);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (is_python_printable(c)) {
      out.append(s.substr(start, i - start));
    } else {
      if (c <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += quote;
}

namespace {

void append_value(std::string& out, const Value& v, bool as_repr, int depth) {
  if (depth > kMaxValueDepth + 2) fail("value nested too deeply to print");
  switch (v.kind()) {
    case Value::Kind::Undefined:
      if (as_repr) out += "Undefined";
      return;
    case Value::Kind::None: out += "None"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += python_float_repr(v.as_float()); return;
    case Value::Kind::String:
      if (as_repr) append_string_repr(out, v.as_string());
      else out += v.as_string();
      return;
    case Value::Kind::List: {
      const ListData& l = v.as_list();
      if (l.kind == ListKind::Iterator) {
        out += "<" + l.iterator_type + " object>";
        return;
      }
      if (l.kind == ListKind::View) {
        // dict_items([('a', 1)])
        out += l.iterator_type + "([";
        for (size_t i = 0; i < l.items.size(); ++i) {
          if (i > 0) out += ", ";
          append_value(out, l.items[i], true, depth + 1);
        }
        out += "])";
        return;
      }
      const bool tuple = l.kind == ListKind::Tuple;
      out += tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_value(out, l.items[i], true, depth + 1);
      }
      if (tuple && l.items.size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case Value::Kind::Dict: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.as_dict().entries()) {
        if (!first) out += ", ";
        first = false;
        append_value(out, key, true, depth + 1);
        out += ": ";
        append_value(out, value, true, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Kind::Object: {
      const ObjectData& o = v.as_object();
      if (o.kind == ObjectKind::Loop) {
        out += "<LoopContext>";
        return;
      }
      out += "<Namespace ";
      append_value(out, Value::dict(o.attributes), true, depth + 1);
      out += '>';
      return;
    }
    case Value::Kind::Callable: {
      const Callable& c = v.as_callable();
      if (c.type_name == "Macro") {
        out += "<Macro ";
        append_string_repr(out, c.name);
        out += '>';
      } else {
        out += "<built-in method " + c.name + ">";
      }
      return;
    }
  }
}

bool list_equals(const ListData& a, const ListData& b, int depth);

bool equals_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth + 2) fail("values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) return a.to_int() == b.to_int();
    if (a.is_float() && b.is_float()) return a.as_float() == b.as_float();
    if (a.is_float()) return int_equals_float(b.to_int(), a.as_float());
    return int_equals_float(a.to_int(), b.as_float());
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const ListData& la = a.as_list();
      const ListData& lb = b.as_list();
      if (la.kind != lb.kind) return false;
      if (la.kind == ListKind::Iterator || la.kind == ListKind::View) return &la == &lb;
      return list_equals(la, lb, depth);
    }
    case Value::Kind::Dict: {
      const Dict& da = a.as_dict();
      const Dict& db = b.as_dict();
      if (da.size() != db.size()) return false;
      for (const auto& [key, value] : da.entries()) {
        const Value* other = db.find(key);
        if (other == nullptr || !equals_at(value, *other, depth + 1)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool list_equals(const ListData& a, const ListData& b, int depth) {
  if (a.items.size() != b.items.size()) return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!equals_at(a.items[i], b.items[i], depth + 1)) return false;
  return true;
}

// 2 means unordered (a NaN is involved): every ordering comparison is false.
int compare_at(const Value& a, const Value& b, std::string_view op, int depth) {
  if (depth > kMaxValueDepth + 2) fail("values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) {
      const int64_t x = a.to_int(), y = b.to_int();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_float() && b.is_float()) {
      const double x = a.as_float(), y = b.as_float();
      if (std::isnan(x) || std::isnan(y)) return 2;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_float()) {
      const int r = compare_int_float(b.to_int(), a.as_float());
      return r == 2 ? 2 : -r;
    }
    return compare_int_float(a.to_int(), b.as_float());
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order.
    const int r = a.as_string().compare(b.as_string());
    return r < 0 ? -1 : r > 0 ? 1 : 0;
  }
  if (a.is_sequence_list() && b.is_sequence_list() && a.as_list().kind == b.as_list().kind) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals_at(x[i], y[i], depth + 1)) return compare_at(x[i], y[i], op, depth + 1);
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("'", op, "' not supported between instances of '", type_name(a), "' and '", type_name(b), "'");
}

}  // namespace

void append_str(std::string& out, const Value& v) { append_value(out, v, false, 0); }

std::string to_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  std::string out;
  append_value(out, v, false, 0);
  return out;
}

void append_repr(std::string& out, const Value& v) { append_value(out, v, true, 0); }

std::string repr(const Value& v) {
  std::string out;
  append_value(out, v, true, 0);
  return out;
}

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

int compare(const Value& a, const Value& b, std::string_view op) { return compare_at(a, b, op, 0); }

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Kind::List:
      if (v.as_list().kind == ListKind::Iterator) break;
      return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().size());
    default: break;
  }
  fail("object of type '", type_name(v), "' has no len()");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.as_list().items;
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        next_code_point(s, i);
        chars.push_back(Value::string(s.substr(start, i - start)));
      }
      return chars;
    }
    default: break;
  }
  fail("'", type_name(v), "' object is not iterable");
}

void require_hashable(const Value& key) {
  if (key.is_dict() || (key.is_list() && key.as_list().kind == ListKind::List))
    fail("unhashable type: '", type_name(key), "'");
  if (key.is_list() && key.as_list().kind == ListKind::Tuple)
    for (const Value& item : key.as_list().items) require_hashable(item);
}

}  // namespace glass::jinja
