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

namespace {

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

// Python's start/end arguments of find, count, startswith...: clamped code point offsets.
std::pair<size_t, size_t> substring_bounds(const BoundArgs& a, size_t start_i, size_t end_i,
                                           const std::vector<size_t>& offsets) {
  const auto n = static_cast<int64_t>(offsets.size() - 1);
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  int64_t start = a.has(start_i) && !a.get(start_i).is_none() ? clamp(int_arg(a.get(start_i), "start")) : 0;
  int64_t end = a.has(end_i) && !a.get(end_i).is_none() ? clamp(int_arg(a.get(end_i), "end")) : n;
  if (end < start) end = start;
  return {offsets[static_cast<size_t>(start)], offsets[static_cast<size_t>(end)]};
}

size_t code_point_index(const std::vector<size_t>& offsets, size_t byte) {
  return static_cast<size_t>(std::lower_bound(offsets.begin(), offsets.end(), byte) - offsets.begin());
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

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

std::string justify(const std::string& s, const BoundArgs& a, char how) {
  const int64_t width = int_arg(a.get(0), "width");
  std::string fill = " ";
  if (a.has(1)) {
    fill = string_arg(a.get(1), "fillchar");
    if (code_point_count(fill) != 1) fail("The fill character must be exactly one character long");
  }
  const auto len = static_cast<int64_t>(code_point_count(s));
  if (width <= len) return s;
  const int64_t marg = width - len;
  int64_t left = how == '<' ? 0 : how == '>' ? marg : marg / 2 + (marg & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!pred(next_code_point(s, i))) return false;
  return true;
}

// One str method applied to `s`.
Value call_string_method(const std::string& name, const std::string& s, const CallArgs& args) {
  const std::string fn = "str." + name;
  if (name == "startswith" || name == "endswith") {
    BoundArgs a(fn, args, {"prefix", "start", "end"}, 1);
    const auto offsets = code_point_offsets(s);
    const auto [b, e] = substring_bounds(a, 1, 2, offsets);
    const std::string_view part = std::string_view(s).substr(b, e - b);
    for (std::string_view affix : affixes(a.get(0), fn)) {
      if (affix.size() > part.size()) continue;
      if (name == "startswith" ? part.substr(0, affix.size()) == affix
                               : part.substr(part.size() - affix.size()) == affix)
        return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(fn, args, {"chars"});
    return Value::string(std::string(
        python_strip(s, name != "rstrip", name != "lstrip", optional_chars(a, 0, "chars"))));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(fn, args, {"sep", "maxsplit"});
    const int64_t maxsplit = a.has(1) ? int_arg(a.get(1), "maxsplit") : -1;
    return string_list(python_split(s, optional_chars(a, 0, "sep"), maxsplit, name == "rsplit"));
  }
  if (name == "splitlines") {
    BoundArgs a(fn, args, {"keepends"});
    return string_list(python_splitlines(s, truthy(a.get(0))));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "swapcase" ||
      name == "casefold") {
    BoundArgs a(fn, args, {});
    if (name == "upper") return Value::string(python_upper(s));
    if (name == "title") return Value::string(python_title(s));
    if (name == "capitalize") return Value::string(python_capitalize(s));
    if (name == "swapcase") return Value::string(python_swapcase(s));
    return Value::string(python_lower(s));
  }
  if (name == "replace") {
    BoundArgs a(fn, args, {"old", "new", "count"}, 2);
    const int64_t count = a.has(2) ? int_arg(a.get(2), "count") : -1;
    return Value::string(python_replace(s, string_arg(a.get(0), "old"), string_arg(a.get(1), "new"), count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    BoundArgs a(fn, args, {"sub", "start", "end"}, 1);
    const std::string& sub = string_arg(a.get(0), "sub");
    const auto offsets = code_point_offsets(s);
    const auto [b, e] = substring_bounds(a, 1, 2, offsets);
    const std::string_view part = std::string_view(s).substr(b, e - b);
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(part) + 1));
      int64_t n = 0;
      for (size_t at = part.find(sub); at != std::string_view::npos; at = part.find(sub, at + sub.size())) ++n;
      return Value::integer(n);
    }
    const bool right = name == "rfind" || name == "rindex";
    const size_t at = right ? part.rfind(sub) : part.find(sub);
    if (at == std::string_view::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(code_point_index(offsets, b + at)));
  }
  if (name == "join") {
    BoundArgs a(fn, args, {"iterable"}, 1);
    std::string out;
    const std::vector<Value> items = iterate(a.get(0));
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        fail("sequence item ", i, ": expected str instance, ", type_name(items[i]), " found");
      if (i > 0) out += s;
      out += items[i].as_string();
    }
    return Value::string(std::move(out));
  }
  if (name == "isdigit" || name == "isdecimal") return Value::boolean(all_chars(s, is_python_decimal));
  if (name == "isnumeric") return Value::boolean(all_chars(s, is_python_numeric));
  if (name == "isalpha") return Value::boolean(all_chars(s, is_python_alpha));
  if (name == "isalnum")
    return Value::boolean(all_chars(s, [](char32_t c) { return is_python_alpha(c) || is_python_numeric(c); }));
  if (name == "isspace") return Value::boolean(all_chars(s, is_python_space));
  if (name == "isupper") return Value::boolean(python_is_upper(s));
  if (name == "islower") return Value::boolean(python_is_lower(s));
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs a(fn, args, {"width", "fillchar"}, 1);
    return Value::string(justify(s, a, name == "center" ? '^' : name == "ljust" ? '<' : '>'));
  }
  if (name == "zfill") {
    BoundArgs a(fn, args, {"width"}, 1);
    const int64_t width = int_arg(a.get(0), "width");
    const auto len = static_cast<int64_t>(code_point_count(s));
    if (width <= len) return Value::string(s);
    const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return Value::string(s.substr(0, sign) + std::string(static_cast<size_t>(width - len), '0') + s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(fn, args, {"sep"}, 1);
    const std::string& sep = string_arg(a.get(0), "sep");
    if (sep.empty()) fail("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) {
      return name == "partition" ? Value::tuple({Value::string(s), Value::string(""), Value::string("")})
                                 : Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
    }
    return Value::tuple({Value::string(s.substr(0, at)), Value::string(sep), Value::string(s.substr(at + sep.size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(fn, args, {"affix"}, 1);
    const std::string& affix = string_arg(a.get(0), "affix");
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) return Value::string(s.substr(affix.size()));
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
      return Value::string(s.substr(0, s.size() - affix.size()));
    return Value::string(s);
  }
  if (name == "format") return Value::string(python_str_format(s, args));
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

Value dict_view(const Dict& d, const std::string& which) {
  std::vector<Value> items;
  items.reserve(d.size());
  for (const auto& [k, v] : d.entries()) {
    if (which == "items") items.push_back(Value::tuple({k, v}));
    else if (which == "keys") items.push_back(k);
    else items.push_back(v);
  }
  return Value::list(std::move(items), ListKind::View, "dict_" + which);
}

Value call_dict_method(const std::string& name, const Value& object, const CallArgs& args) {
  const Dict& d = object.as_dict();
  const std::string fn = "dict." + name;
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs a(fn, args, {});
    return dict_view(d, name);
  }
  if (name == "get") {
    BoundArgs a(fn, args, {"key", "default"}, 1);
    require_hashable(a.get(0));
    if (const Value* v = d.find(a.get(0))) return *v;
    return a.get_or(1, Value::none());
  }
  BoundArgs a(fn, args, {});
  return object;  // copy(): values are immutable, so the same dict serves
}

Value call_list_method(const std::string& name, const Value& object, const CallArgs& args) {
  const auto& items = object.as_list().items;
  const std::string fn = type_name(object) + "." + name;
  if (name == "count") {
    BoundArgs a(fn, args, {"value"}, 1);
    return Value::integer(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a.get(0)); }));
  }
  if (name == "index") {
    BoundArgs a(fn, args, {"value"}, 1);
    for (size_t i = 0; i < items.size(); ++i)
      if (equals(items[i], a.get(0))) return Value::integer(static_cast<int64_t>(i));
    fail(repr(a.get(0)), " is not in ", type_name(object));
  }
  BoundArgs a(fn, args, {});
  return object;  // copy()
}

Value bound_method(const Value& object, const std::string& name,
                   Value (*method)(const std::string&, const Value&, const CallArgs&)) {
  return Value::callable(name, "builtin_function_or_method",
                         [object, name, method](Interpreter&, CallArgs& args) { return method(name, object, args); });
}

Value string_method_trampoline(const std::string& name, const Value& object, const CallArgs& args) {
  return call_string_method(name, object.as_string(), args);
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
    return Value::callable("changed", "method", [loop](Interpreter&, CallArgs& args) {
      auto& last = loop->last_changed;
      const Value now = Value::list(args.positional);
      if (last && equals(Value::list(*last), now)) return Value::boolean(false);
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

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) fail_undefined(object);
  if (auto v = python_attribute(object, name)) return *v;
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(std::string_view(name))) return *v;
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  switch (object.kind()) {
    case Value::Kind::Dict:
      if (!key.is_dict() && !(key.is_list() && key.as_list().kind == ListKind::List)) {
        if (const Value* v = object.as_dict().find(key)) return *v;
      }
      break;
    case Value::Kind::List:
    case Value::Kind::String:
      if ((object.is_string() || object.is_sequence_list()) && (key.is_int() || key.is_bool())) {
        const bool str = object.is_string();
        const std::vector<size_t> offsets = str ? code_point_offsets(object.as_string()) : std::vector<size_t>{};
        const int64_t n = str ? static_cast<int64_t>(offsets.size()) - 1
                              : static_cast<int64_t>(object.as_list().items.size());
        int64_t i = key.to_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
          if (!str) return object.as_list().items[static_cast<size_t>(i)];
          const size_t b = offsets[static_cast<size_t>(i)], e = offsets[static_cast<size_t>(i) + 1];
          return Value::string(object.as_string().substr(b, e - b));
        }
      }
      break;
    default: break;
  }
  if (key.is_string()) return get_attribute(object, key.as_string());
  return Value::undefined(object_description(object) + " has no element " + repr(key));
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  const bool str = object.is_string();
  auto no_element = [&]() {
    return Value::undefined(object_description(object) + " has no element slice(" + repr(start_v) + ", " +
                            repr(stop_v) + ", " + repr(step_v) + ")");
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
  const std::vector<size_t> offsets = str ? code_point_offsets(object.as_string()) : std::vector<size_t>{};
  const int64_t n = str ? static_cast<int64_t>(offsets.size()) - 1 : static_cast<int64_t>(object.as_list().items.size());
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
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    picks.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  if (str) {
    const std::string& s = object.as_string();
    std::string out;
    if (step == 1 && !picks.empty()) {
      out = s.substr(offsets[static_cast<size_t>(start)], offsets[static_cast<size_t>(stop)] - offsets[static_cast<size_t>(start)]);
    } else {
      for (int64_t i : picks) {
        const auto k = static_cast<size_t>(i);
        out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
      }
    }
    return Value::string(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(picks.size());
  for (int64_t i : picks) items.push_back(object.as_list().items[static_cast<size_t>(i)]);
  return Value::list(std::move(items), object.as_list().kind);
}

Value get_python_attribute(const Value& object, const std::string& name) {
  if (auto v = python_attribute(object, name)) return *v;
  return missing_attribute(object, name);
}

std::vector<std::pair<std::string, Value>> builtin_globals() {
  std::vector<std::pair<std::string, Value>> g;
  auto add = [&g](const char* name, NativeFunction fn) {
    g.emplace_back(name, Value::callable(name, "builtin_function_or_method", std::move(fn)));
  };
  add("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
    BoundArgs a("raise_exception", args, {"message"}, 1);
    fail(to_str(a.get(0)));
  });
  add("strftime_now", [](Interpreter& interp, CallArgs& args) {
    BoundArgs a("strftime_now", args, {"format"}, 1);
    const std::string& format = string_arg(a.get(0), "format");
    const std::tm now = interp.now();
    // strftime cannot say "empty result" apart from "too small"; grow until it fits.
    for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
      std::string buf(size, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &now);
      if (n > 0 || format.empty()) return Value::string(buf.substr(0, n));
    }
    return Value::string("");
  });
  add("namespace", [](Interpreter& interp, CallArgs& args) {
    Dict attributes;
    if (args.positional.size() > 1) fail("namespace() takes at most 1 positional argument");
    if (!args.positional.empty()) {
      const Value& init = args.positional[0];
      if (init.is_dict()) {
        for (const auto& [k, v] : init.as_dict().entries()) attributes.set(k, v);
      } else {
        for (const Value& pair : iterate(init)) {
          const std::vector<Value> kv = iterate(pair);
          if (kv.size() != 2) fail("namespace() needs key-value pairs");
          attributes.set(kv[0], kv[1]);
        }
      }
    }
    for (auto& [k, v] : args.keyword) attributes.set(Value::string(k), v);
    return interp.make_namespace(std::move(attributes));
  });
  add("dict", [](Interpreter&, CallArgs& args) {
    Dict d;
    if (args.positional.size() > 1) fail("dict expected at most 1 argument, got ", args.positional.size());
    if (!args.positional.empty()) {
      const Value& init = args.positional[0];
      if (init.is_dict()) {
        d = init.as_dict();
      } else {
        for (const Value& pair : iterate(init)) {
          const std::vector<Value> kv = iterate(pair);
          if (kv.size() != 2) fail("dictionary update sequence element has length ", kv.size(), "; 2 is required");
          require_hashable(kv[0]);
          d.set(kv[0], kv[1]);
        }
      }
    }
    for (auto& [k, v] : args.keyword) d.set(Value::string(k), v);
    return Value::dict(std::move(d));
  });
  add("range", [](Interpreter&, CallArgs& args) {
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
    constexpr int64_t kMaxRange = 100000;
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      if (static_cast<int64_t>(items.size()) >= kMaxRange)
        fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
      items.push_back(Value::integer(i));
      if (__builtin_add_overflow(i, step, &i)) break;
    }
    return Value::list(std::move(items));
  });
  add("joiner", [](Interpreter&, CallArgs& args) {
    BoundArgs a("joiner", args, {"sep"});
    const std::string sep = a.has(0) ? to_str(a.get(0)) : ", ";
    auto used = std::make_shared<bool>(false);
    return Value::callable("joiner", "Joiner", [sep, used](Interpreter&, CallArgs&) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return Value::string(sep);
    });
  });
  return g;
}

}  // namespace glass::jinja
