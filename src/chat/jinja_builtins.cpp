// Attribute and item access with Python's methods, and the template globals.
#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> names,
                     size_t required)
    : values_(names.size(), nullptr) {
  const std::vector<std::string_view> params(names);
  if (args.positional.size() > params.size())
    fail(function, "() takes at most ", params.size(), " argument(s) (", args.positional.size(), " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    const auto it = std::find(params.begin(), params.end(), name);
    if (it == params.end()) fail(function, "() got an unexpected keyword argument '", name, "'");
    const auto i = static_cast<size_t>(it - params.begin());
    if (values_[i] != nullptr) fail(function, "() got multiple values for argument '", name, "'");
    values_[i] = &value;
  }
  for (size_t i = 0; i < required; ++i)
    if (values_[i] == nullptr) fail(function, "() missing required argument '", params[i], "'");
}

const Value& BoundArgs::get(size_t i) const {
  static const Value kUndefined;
  return values_[i] != nullptr ? *values_[i] : kUndefined;
}

Value new_string(std::string s, RenderBudget& budget) {
  budget.charge_string(s.size());
  return Value::string(std::move(s));
}

bool is_hashable(const Value& key) {
  if (key.is_dict() || (key.is_list() && key.as_list().kind == ListKind::List)) return false;
  if (key.is_list() && key.as_list().kind == ListKind::Tuple)
    for (const Value& item : key.as_list().items)
      if (!is_hashable(item)) return false;
  return true;
}

int64_t parse_index(std::string_view digits) {
  int64_t n = 0;
  for (const char c : digits)
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n)) return INT64_MAX;
  return n;
}

namespace {

// `a` * `b`, saturated (the budgets then refuse it).
uint64_t saturated_product(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// Jinja2's names for objects in "has no attribute" messages.
std::string object_description(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

Value missing_attribute(const Value& object, const std::string& name) {
  return Value::undefined(str_cat("'", object_description(object), "' has no attribute '", name, "'"));
}

Value unsafe_attribute(const Value& object, const std::string& name) {
  return Value::undefined(str_cat("access to attribute '", name, "' of '", type_name(object), "' object is unsafe."));
}

int64_t int_arg(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.to_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(what, " must be an integer, not ", type_name(v));
}

const std::string& string_arg(const Value& v, std::string_view what) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) fail_undefined(v);
  fail(what, " must be str, not ", type_name(v));
}

std::optional<std::string_view> optional_chars(const BoundArgs& a, size_t i, std::string_view what) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  return std::string_view(string_arg(a.get(i), what));
}

// Python's start/end arguments of find, count, startswith...: clamped code point
// offsets, as byte offsets into `s`.
std::pair<size_t, size_t> substring_bounds(const std::string& s, const BoundArgs& a, size_t start_i, size_t end_i,
                                           RenderBudget& budget) {
  const bool has_start = a.has(start_i) && !a.get(start_i).is_none();
  const bool has_end = a.has(end_i) && !a.get(end_i).is_none();
  if (!has_start && !has_end) return {0, s.size()};
  budget.charge_scan(s.size());
  const size_t count = code_point_count(s);
  const auto n = static_cast<int64_t>(count);
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  int64_t start = has_start ? clamp(int_arg(a.get(start_i), "start")) : 0;
  int64_t end = has_end ? clamp(int_arg(a.get(end_i), "end")) : n;
  if (end < start) end = start;
  return {code_point_offset(s, static_cast<size_t>(start), count), code_point_offset(s, static_cast<size_t>(end), count)};
}

std::vector<std::string_view> affixes(const Value& v, std::string_view method) {
  std::vector<std::string_view> out;
  if (v.is_string()) {
    out.push_back(v.as_string());
  } else if (v.is_list() && v.as_list().kind == ListKind::Tuple) {
    for (const Value& item : v.as_list().items) out.push_back(string_arg(item, method));
  } else {
    fail(method, " first arg must be str or a tuple of str, not ", type_name(v));
  }
  return out;
}

Value string_list(std::vector<std::string> parts, RenderBudget& budget) {
  budget.charge_list(parts.size());
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

std::string justify(const std::string& s, const BoundArgs& a, char how, RenderBudget& budget) {
  const int64_t width = int_arg(a.get(0), "width");
  std::string fill = " ";
  if (a.has(1)) {
    fill = string_arg(a.get(1), "fillchar");
    if (code_point_count(fill) != 1) fail("The fill character must be exactly one character long");
  }
  budget.charge_scan(s.size());
  const auto len = static_cast<int64_t>(code_point_count(s));
  if (width <= len) {
    budget.charge_string(s.size());
    return s;
  }
  const int64_t marg = width - len;
  budget.charge_string(s.size() + saturated_product(static_cast<uint64_t>(marg), fill.size()));
  int64_t left = how == '<' ? 0 : how == '>' ? marg : marg / 2 + (marg & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

bool all_chars(const std::string& s, bool (*pred)(char32_t), RenderBudget& budget) {
  budget.charge_scan(s.size());
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!pred(next_code_point(s, i))) return false;
  return true;
}

// One str method applied to `s`.
Value call_string_method(const std::string& name, const std::string& s, const CallArgs& args, RenderBudget& budget) {
  const std::string fn = "str." + name;
  if (name == "startswith" || name == "endswith") {
    BoundArgs a(fn, args, {"prefix", "start", "end"}, 1);
    const auto [b, e] = substring_bounds(s, a, 1, 2, budget);
    const std::string_view part = std::string_view(s).substr(b, e - b);
    for (std::string_view affix : affixes(a.get(0), fn)) {
      budget.charge_scan(affix.size());
      if (affix.size() > part.size()) continue;
      if (name == "startswith" ? part.substr(0, affix.size()) == affix
                               : part.substr(part.size() - affix.size()) == affix)
        return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(fn, args, {"chars"});
    const auto chars = optional_chars(a, 0, "chars");
    budget.charge_scan(s.size() + (chars ? chars->size() : 0));
    if (chars) budget.charge_memory(sizeof(char32_t) * uint64_t{chars->size()});
    return new_string(std::string(python_strip(s, name != "rstrip", name != "lstrip", chars)), budget);
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(fn, args, {"sep", "maxsplit"});
    const int64_t maxsplit = a.has(1) ? int_arg(a.get(1), "maxsplit") : -1;
    budget.charge_scan(s.size());
    return string_list(python_split(s, optional_chars(a, 0, "sep"), maxsplit, name == "rsplit", &budget), budget);
  }
  if (name == "splitlines") {
    BoundArgs a(fn, args, {"keepends"});
    budget.charge_scan(s.size());
    return string_list(python_splitlines(s, truthy(a.get(0)), &budget), budget);
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "swapcase" ||
      name == "casefold") {
    BoundArgs a(fn, args, {});
    budget.charge_scan(s.size());
    if (name == "upper") return new_string(python_upper(s), budget);
    if (name == "title") return new_string(python_title(s), budget);
    if (name == "capitalize") return new_string(python_capitalize(s), budget);
    if (name == "swapcase") return new_string(python_swapcase(s), budget);
    return new_string(python_lower(s), budget);
  }
  if (name == "replace") {
    BoundArgs a(fn, args, {"old", "new", "count"}, 2);
    const int64_t count = a.has(2) ? int_arg(a.get(2), "count") : -1;
    const std::string& old = string_arg(a.get(0), "old");
    const std::string& replacement = string_arg(a.get(1), "new");
    budget.charge_scan(s.size());
    budget.charge_string(python_replace_size(s, old, replacement, count));
    return Value::string(python_replace(s, old, replacement, count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    BoundArgs a(fn, args, {"sub", "start", "end"}, 1);
    const std::string& sub = string_arg(a.get(0), "sub");
    const auto [b, e] = substring_bounds(s, a, 1, 2, budget);
    const std::string_view part = std::string_view(s).substr(b, e - b);
    budget.charge_scan(part.size() + sub.size());
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(part) + 1));
      int64_t n = 0;
      for (size_t at = find_text(part, sub); at != std::string_view::npos; at = find_text(part, sub, at + sub.size()))
        ++n;
      return Value::integer(n);
    }
    const bool right = name == "rfind" || name == "rindex";
    const size_t at = right ? rfind_text(part, sub) : find_text(part, sub);
    if (at == std::string_view::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, b + at))));
  }
  if (name == "join") {
    BoundArgs a(fn, args, {"iterable"}, 1);
    const std::vector<Value> items = iterate(a.get(0), budget);
    uint64_t total = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        fail("sequence item ", i, ": expected str instance, ", type_name(items[i]), " found");
      total += items[i].as_string().size() + (i > 0 ? s.size() : 0);
    }
    budget.charge_string(total);
    std::string out;
    out.reserve(total);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += s;
      out += items[i].as_string();
    }
    return Value::string(std::move(out));
  }
  if (name == "isdigit" || name == "isdecimal") return Value::boolean(all_chars(s, is_python_decimal, budget));
  if (name == "isnumeric") return Value::boolean(all_chars(s, is_python_numeric, budget));
  if (name == "isalpha") return Value::boolean(all_chars(s, is_python_alpha, budget));
  if (name == "isalnum")
    return Value::boolean(
        all_chars(s, [](char32_t c) { return is_python_alpha(c) || is_python_numeric(c); }, budget));
  if (name == "isspace") return Value::boolean(all_chars(s, is_python_space, budget));
  if (name == "isupper" || name == "islower") {
    budget.charge_scan(s.size());
    return Value::boolean(name == "isupper" ? python_is_upper(s) : python_is_lower(s));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs a(fn, args, {"width", "fillchar"}, 1);
    return Value::string(justify(s, a, name == "center" ? '^' : name == "ljust" ? '<' : '>', budget));
  }
  if (name == "zfill") {
    BoundArgs a(fn, args, {"width"}, 1);
    const int64_t width = int_arg(a.get(0), "width");
    budget.charge_scan(s.size());
    const auto len = static_cast<int64_t>(code_point_count(s));
    if (width <= len) return new_string(s, budget);
    budget.charge_string(s.size() + static_cast<uint64_t>(width - len));
    const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return Value::string(s.substr(0, sign) + std::string(static_cast<size_t>(width - len), '0') + s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(fn, args, {"sep"}, 1);
    const std::string& sep = string_arg(a.get(0), "sep");
    if (sep.empty()) fail("empty separator");
    budget.charge_scan(s.size());
    budget.charge_list(3);
    budget.charge_string(s.size());
    const size_t at = name == "partition" ? find_text(s, sep) : rfind_text(s, sep);
    if (at == std::string::npos) {
      return name == "partition" ? Value::tuple({Value::string(s), Value::string(""), Value::string("")})
                                 : Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
    }
    return Value::tuple({Value::string(s.substr(0, at)), Value::string(sep), Value::string(s.substr(at + sep.size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(fn, args, {"affix"}, 1);
    const std::string& affix = string_arg(a.get(0), "affix");
    budget.charge_string(s.size());
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) return Value::string(s.substr(affix.size()));
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
      return Value::string(s.substr(0, s.size() - affix.size()));
    return Value::string(s);
  }
  if (name == "format") return Value::string(python_str_format(s, args, budget));
  fail("str has no method '", name, "'");
}

bool is_string_method(const std::string& name) {
  static constexpr const char* kNames[] = {
      "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "upper",
      "lower", "title", "capitalize", "swapcase", "casefold", "replace", "find", "rfind", "index",
      "rindex", "count", "join", "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace",
      "isupper", "islower", "center", "ljust", "rjust", "zfill", "partition", "rpartition", "removeprefix",
      "removesuffix", "format"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

Value dict_view(const Dict& d, const std::string& which, RenderBudget& budget) {
  budget.charge_list(d.size());
  std::vector<Value> items;
  items.reserve(d.size());
  for (const auto& [k, v] : d.entries()) {
    if (which == "items") {
      budget.charge_list(2);
      items.push_back(Value::tuple({k, v}));
    }
    else if (which == "keys") items.push_back(k);
    else items.push_back(v);
  }
  return Value::list(std::move(items), ListKind::View, "dict_" + which);
}

Value call_dict_method(const std::string& name, const Value& object, const CallArgs& args, RenderBudget& budget) {
  const Dict& d = object.as_dict();
  const std::string fn = "dict." + name;
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs a(fn, args, {});
    return dict_view(d, name, budget);
  }
  if (name == "get") {
    BoundArgs a(fn, args, {"key", "default"}, 1);
    if (const Value* v = d.find(a.get(0), hash_value(a.get(0), budget))) return *v;
    return a.get_or(1, Value::none());
  }
  BoundArgs a(fn, args, {});
  return object;  // copy(): values are immutable, so the same dict serves
}

Value call_list_method(const std::string& name, const Value& object, const CallArgs& args, RenderBudget& budget) {
  const auto& items = object.as_list().items;
  const std::string fn = type_name(object) + "." + name;
  if (name == "count") {
    BoundArgs a(fn, args, {"value"}, 1);
    return Value::integer(
        std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a.get(0), budget); }));
  }
  if (name == "index") {
    BoundArgs a(fn, args, {"value"}, 1);
    for (size_t i = 0; i < items.size(); ++i)
      if (equals(items[i], a.get(0), budget)) return Value::integer(static_cast<int64_t>(i));
    fail(repr_for_message(a.get(0)), " is not in ", type_name(object));
  }
  BoundArgs a(fn, args, {});
  return object;  // copy()
}

// A method bound to `object`: it holds the object, so it is one level deeper.
Value bound_method(const Value& object, const std::string& name,
                   Value (*method)(const std::string&, const Value&, const CallArgs&, RenderBudget&)) {
  return Value::callable(
      name, "builtin_function_or_method",
      [object, name, method](Interpreter& interp, CallArgs& args) { return method(name, object, args, interp.budget()); },
      object.depth() + 1);
}

Value string_method_trampoline(const std::string& name, const Value& object, const CallArgs& args,
                               RenderBudget& budget) {
  return call_string_method(name, object.as_string(), args, budget);
}

std::optional<Value> loop_attribute(const Value& object, const std::string& name) {
  const std::shared_ptr<LoopState>& loop = object.as_object().loop;
  const auto n = static_cast<int64_t>(loop->items.size());
  const auto i = static_cast<int64_t>(loop->index);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(loop->depth0 + 1);
  if (name == "depth0") return Value::integer(loop->depth0);
  if (name == "previtem")
    return i > 0 ? loop->items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? loop->items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
  if (name == "cycle") {
    return Value::callable("cycle", "method", [loop](Interpreter&, CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[loop->index % args.positional.size()];
    });
  }
  if (name == "changed") {
    return Value::callable("changed", "method", [loop](Interpreter& interp, CallArgs& args) {
      auto& last = loop->last_changed;
      interp.budget().charge_list(args.positional.size());
      const Value now = Value::list(args.positional);
      if (last && equals(Value::list(*last), now, interp.budget())) return Value::boolean(false);
      last = std::make_shared<std::vector<Value>>(args.positional);
      return Value::boolean(true);
    });
  }
  return std::nullopt;
}

// Python attributes only (no item fallback): what the `attr` filter sees.
std::optional<Value> python_attribute(const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Value::Kind::String:
      if (is_string_method(name)) return bound_method(object, name, string_method_trampoline);
      return std::nullopt;
    case Value::Kind::Dict:
      if (name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy")
        return bound_method(object, name, call_dict_method);
      if (name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
          name == "fromkeys")
        return unsafe_attribute(object, name);
      return std::nullopt;
    case Value::Kind::List: {
      const ListKind kind = object.as_list().kind;
      if (kind != ListKind::List && kind != ListKind::Tuple) return std::nullopt;
      if (name == "count" || name == "index" || (kind == ListKind::List && name == "copy"))
        return bound_method(object, name, call_list_method);
      if (kind == ListKind::List && (name == "append" || name == "clear" || name == "extend" || name == "insert" ||
                                     name == "pop" || name == "remove" || name == "reverse" || name == "sort"))
        return unsafe_attribute(object, name);
      return std::nullopt;
    }
    case Value::Kind::Object: {
      const ObjectData& o = object.as_object();
      if (o.kind == ObjectKind::Loop) return loop_attribute(object, name);
      if (const Value* v = o.attributes.find(std::string_view(name))) return *v;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name, RenderBudget& budget) {
  if (object.is_undefined()) fail_undefined(object);
  budget.charge_work(1);
  if (auto v = python_attribute(object, name)) return *v;
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(std::string_view(name))) return *v;
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key, RenderBudget& budget) {
  if (object.is_undefined()) fail_undefined(object);
  switch (object.kind()) {
    case Value::Kind::Dict:
      if (is_hashable(key)) {
        if (const Value* v = object.as_dict().find(key, hash_value(key, budget))) return *v;
      }
      break;
    case Value::Kind::List:
    case Value::Kind::String:
      if ((object.is_string() || object.is_sequence_list()) && (key.is_int() || key.is_bool())) {
        const bool str = object.is_string();
        if (str) budget.charge_scan(object.as_string().size());
        const size_t count = str ? code_point_count(object.as_string()) : object.as_list().items.size();
        const auto n = static_cast<int64_t>(count);
        int64_t i = key.to_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
          if (!str) return object.as_list().items[static_cast<size_t>(i)];
          const std::string& s = object.as_string();
          const size_t b = code_point_offset(s, static_cast<size_t>(i), count);
          size_t e = b;
          next_code_point(s, e);
          return new_string(s.substr(b, e - b), budget);
        }
      }
      break;
    default: break;
  }
  if (key.is_string()) return get_attribute(object, key.as_string(), budget);
  return Value::undefined(object_description(object) + " has no element " + repr_for_message(key));
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v,
                RenderBudget& budget) {
  const bool str = object.is_string();
  auto no_element = [&]() {
    return Value::undefined(object_description(object) + " has no element slice(" + repr_for_message(start_v) + ", " +
                            repr_for_message(stop_v) + ", " + repr_for_message(step_v) + ")");
  };
  if (!str && !object.is_sequence_list()) return no_element();
  auto index_of = [](const Value& v, bool& ok) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.to_int();
    ok = false;
    return std::nullopt;
  };
  bool ok = true;
  const auto start_o = index_of(start_v, ok), stop_o = index_of(stop_v, ok), step_o = index_of(step_v, ok);
  if (!ok) return no_element();
  const int64_t step = step_o.value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  if (str) budget.charge_scan(object.as_string().size());
  const size_t count = str ? code_point_count(object.as_string()) : object.as_list().items.size();
  const auto n = static_cast<int64_t>(count);
  auto adjust = [n, step](std::optional<int64_t> v, bool is_start) {
    if (!v) return step < 0 ? (is_start ? n - 1 : -1) : (is_start ? 0 : n);
    int64_t x = *v;
    if (x < 0) {
      x = x < -n ? -1 : x + n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t start = adjust(start_o, true), stop = adjust(stop_o, false);
  // How many indices start, start + step, ... come before stop (all within [-1, n]).
  const uint64_t picks = step > 0 ? (start < stop ? static_cast<uint64_t>(stop - start - 1) / static_cast<uint64_t>(step) + 1 : 0)
                                  : (start > stop ? static_cast<uint64_t>(start - stop - 1) / (0 - static_cast<uint64_t>(step)) + 1 : 0);
  auto for_each_pick = [&](auto&& visit) {
    int64_t i = start;
    for (uint64_t k = 0; k < picks; ++k) {
      visit(static_cast<size_t>(i));
      if (__builtin_add_overflow(i, step, &i)) break;
    }
  };
  if (str) {
    const std::string& s = object.as_string();
    if (picks == 0) return new_string("", budget);
    if (step == 1) {
      const size_t b = code_point_offset(s, static_cast<size_t>(start), count);
      const size_t e = code_point_offset(s, static_cast<size_t>(stop), count);
      return new_string(s.substr(b, e - b), budget);
    }
    budget.charge_memory((uint64_t{s.size()} + 1) * sizeof(size_t));
    const std::vector<size_t> offsets = code_point_offsets(s);
    std::string out;
    for_each_pick([&](size_t k) { out.append(s, offsets[k], offsets[k + 1] - offsets[k]); });
    return new_string(std::move(out), budget);
  }
  budget.charge_list(picks);
  std::vector<Value> items;
  items.reserve(picks);
  for_each_pick([&](size_t k) { items.push_back(object.as_list().items[k]); });
  return Value::list(std::move(items), object.as_list().kind);
}

Value get_python_attribute(const Value& object, const std::string& name, RenderBudget& budget) {
  budget.charge_work(1);
  if (auto v = python_attribute(object, name)) return *v;
  return missing_attribute(object, name);
}

namespace {

// dict(init, **kwargs) and namespace(init, **kwargs): `init` a dict or key-value pairs.
Dict dict_from_pairs(const CallArgs& args, RenderBudget& budget, std::string_view function) {
  Dict d;
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) {
      budget.charge_dict(init.as_dict().size());
      d = init.as_dict();
    } else {
      const std::vector<Value> pairs = iterate(init, budget);
      budget.charge_dict(pairs.size());
      for (const Value& pair : pairs) {
        const std::vector<Value> kv = iterate(pair, budget);
        if (kv.size() != 2) {
          if (function == "dict") fail("dictionary update sequence element has length ", kv.size(), "; 2 is required");
          fail(function, "() needs key-value pairs");
        }
        d.set(kv[0], hash_value(kv[0], budget), kv[1]);
      }
    }
  }
  budget.charge_dict(args.keyword.size());
  for (const auto& [k, v] : args.keyword) d.set(std::string_view(k), v);
  return d;
}

}  // namespace

std::vector<std::pair<std::string, Value>> builtin_globals() {
  std::vector<std::pair<std::string, Value>> g;
  auto add = [&g](const char* name, NativeFunction fn) {
    g.emplace_back(name, Value::callable(name, "builtin_function_or_method", std::move(fn)));
  };
  add("raise_exception", [](Interpreter& interp, CallArgs& args) -> Value {
    BoundArgs a("raise_exception", args, {"message"}, 1);
    fail(to_str(a.get(0), interp.budget()));
  });
  add("strftime_now", [](Interpreter& interp, CallArgs& args) {
    BoundArgs a("strftime_now", args, {"format"}, 1);
    const std::string& format = string_arg(a.get(0), "format");
    const std::tm now = interp.now();
    // strftime cannot say "empty result" apart from "too small"; grow until it fits.
    for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
      interp.budget().charge_scan(format.size());
      interp.budget().charge_memory(size);
      std::string buf(size, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &now);
      if (n > 0 || format.empty()) return new_string(buf.substr(0, n), interp.budget());
    }
    return Value::string("");
  });
  add("namespace", [](Interpreter& interp, CallArgs& args) {
    if (args.positional.size() > 1) fail("namespace() takes at most 1 positional argument");
    Dict attributes = dict_from_pairs(args, interp.budget(), "namespace");
    return interp.make_namespace(std::move(attributes));
  });
  add("dict", [](Interpreter& interp, CallArgs& args) {
    if (args.positional.size() > 1) fail("dict expected at most 1 argument, got ", args.positional.size());
    return Value::dict(dict_from_pairs(args, interp.budget(), "dict"));
  });
  add("range", [](Interpreter& interp, CallArgs& args) {
    if (!args.keyword.empty()) fail("range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments, got ", p.size());
    int64_t start = 0, stop, step = 1;
    if (p.size() == 1) {
      stop = int_arg(p[0], "range() argument");
    } else {
      start = int_arg(p[0], "range() argument");
      stop = int_arg(p[1], "range() argument");
      if (p.size() == 3) step = int_arg(p[2], "range() argument");
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    // The sandbox's limit, as in Jinja2.
    constexpr uint64_t kMaxRange = 100000;
    const auto span = [](int64_t from, int64_t to) { return static_cast<uint64_t>(to) - static_cast<uint64_t>(from); };
    const uint64_t count = step > 0 ? (start < stop ? (span(start, stop) - 1) / static_cast<uint64_t>(step) + 1 : 0)
                                    : (start > stop ? (span(stop, start) - 1) / (0 - static_cast<uint64_t>(step)) + 1 : 0);
    if (count > kMaxRange) fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
    interp.budget().charge_list(count);
    std::vector<Value> items;
    items.reserve(count);
    for (uint64_t k = 0; k < count; ++k)
      items.push_back(Value::integer(static_cast<int64_t>(static_cast<uint64_t>(start) + k * static_cast<uint64_t>(step))));
    return Value::list(std::move(items));
  });
  add("joiner", [](Interpreter& interp, CallArgs& args) {
    BoundArgs a("joiner", args, {"sep"});
    const Value sep = a.has(0) ? Value::string(to_str(a.get(0), interp.budget())) : Value::string(", ");
    auto used = std::make_shared<bool>(false);
    return Value::callable("joiner", "Joiner", [sep, used](Interpreter&, CallArgs&) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return sep;
    });
  });
  return g;
}

}  // namespace glass::jinja
