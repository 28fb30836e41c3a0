// Jinja2's built-in filters and tests (plus transformers' tojson), with the semantics of
// Jinja2 3.1 running under Python 3.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_json.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

namespace {

Value iterator(std::vector<Value> items, const char* type = "generator") {
  return Value::list(std::move(items), ListKind::Iterator, type);
}

// `a` * `b`, saturated (the budgets then refuse it).
uint64_t saturated_product(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

int64_t int_param(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.to_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(what, " must be an integer, not ", type_name(v));
}

// Jinja2's make_attrgetter: "a.b.0" looks up items (then attributes) part by part.
Value lookup_path(const Value& item, const std::string& path, RenderBudget& budget) {
  budget.charge_scan(path.size());
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = get_item(v, digits ? Value::integer(parse_index(part)) : Value::string(part), budget);
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// Jinja2's make_attrgetter; what each lookup costs is charged to `budget`, which must
// outlive the getter.
std::function<Value(const Value&)> attribute_getter(const Value& attribute, bool lower_case, const Value& fallback,
                                                    RenderBudget& budget) {
  const std::string path = attribute.is_none() || attribute.is_undefined() || attribute.is_int()
                               ? std::string()
                               : to_str(attribute, budget);
  return [attribute, path, lower_case, fallback, &budget](const Value& item) {
    Value v = item;
    if (!attribute.is_none() && !attribute.is_undefined()) {
      if (attribute.is_int()) v = get_item(item, attribute, budget);
      else v = lookup_path(item, path, budget);
    }
    if (v.is_undefined() && !fallback.is_none() && !fallback.is_undefined()) v = fallback;
    if (lower_case && v.is_string()) {
      budget.charge_scan(v.as_string().size());
      v = new_string(python_lower(v.as_string()), budget);
    }
    return v;
  };
}

// ---- filters --------------------------------------------------------------------

Value f_abs(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a("abs", args, {});
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.to_int();
    if (i == INT64_MIN) fail("integer overflow");
    return Value::integer(i < 0 ? -i : i);
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  fail("bad operand type for abs(): '", type_name(v), "'");
}

Value f_attr(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("attr", args, {"name"}, 1);
  if (v.is_undefined()) fail_undefined(v);
  return get_python_attribute(v, to_str(a.get(0), interp.budget()), interp.budget());
}

Value f_batch(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("batch", args, {"linecount", "fill_with"}, 1);
  const int64_t count = int_param(a.get(0), "linecount");
  if (count <= 0) fail("batch() linecount must be positive");
  const bool fill = a.has(1) && !a.get(1).is_none();
  std::vector<Value> items = iterate(v, budget);
  // Every batch is `count` long when filled, so the last one is charged as that.
  const uint64_t batches_count = (items.size() + static_cast<uint64_t>(count) - 1) / static_cast<uint64_t>(count);
  budget.charge_list(batches_count);
  if (fill && !items.empty()) budget.charge_list(static_cast<uint64_t>(count));
  std::vector<Value> batches, current;
  for (Value& item : items) {
    current.push_back(std::move(item));
    if (static_cast<int64_t>(current.size()) == count) {
      budget.charge_list(current.size());
      batches.push_back(Value::list(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (fill)
      while (static_cast<int64_t>(current.size()) < count) current.push_back(a.get(1));
    else
      budget.charge_list(current.size());
    batches.push_back(Value::list(std::move(current)));
  }
  return iterator(std::move(batches));
}

// str(v) of a filter's operand, read in full by the filter.
std::string text_of(const Value& v, RenderBudget& budget) {
  std::string s = to_str(v, budget);
  budget.charge_scan(s.size());
  return s;
}

Value f_capitalize(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("capitalize", args, {});
  return new_string(python_capitalize(text_of(v, interp.budget())), interp.budget());
}

Value f_center(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("center", args, {"width"});
  const std::string s = text_of(v, budget);
  const int64_t width = a.has(0) ? int_param(a.get(0), "width") : 80;
  const auto len = static_cast<int64_t>(code_point_count(s));
  if (width <= len) return Value::string(s);
  const int64_t marg = width - len;
  budget.charge_string(s.size() + static_cast<uint64_t>(marg));
  const int64_t left = marg / 2 + (marg & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

Value f_default(Interpreter&, const Value& v, const CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  const bool boolean = truthy(a.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return a.has(0) ? a.get(0) : Value::string("");
  return v;
}

Value f_dictsort(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("You can only sort by either \"key\" or \"value\"");
  const bool case_sensitive = truthy(a.get(0));
  const std::string by = a.has(1) ? to_str(a.get(1), budget) : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  const bool reverse = truthy(a.get(2));
  // Each entry with its sort key, computed once.
  const Dict& d = v.as_dict();
  budget.charge_list(3 * uint64_t{d.size()});
  std::vector<std::pair<Value, const std::pair<Value, Value>*>> keyed;
  keyed.reserve(d.size());
  for (const auto& e : d.entries()) {
    const Value& k = by == "key" ? e.first : e.second;
    keyed.emplace_back(!case_sensitive && k.is_string() ? new_string(python_lower(k.as_string()), budget) : k, &e);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first, "<", budget) == -1 : compare(x.first, y.first, "<", budget) == -1;
  });
  std::vector<Value> out;
  for (const auto& [k, e] : keyed) out.push_back(Value::tuple({e->first, e->second}));
  return Value::list(std::move(out));
}

std::string html_escape(const std::string& s, RenderBudget& budget) {
  uint64_t size = s.size();
  for (char c : s) size += c == '&' || c == '"' || c == '\'' ? 4 : c == '<' || c == '>' ? 3 : 0;
  budget.charge_string(size);
  std::string out;
  out.reserve(size);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value f_escape(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("escape", args, {});
  return Value::string(html_escape(text_of(v, interp.budget()), interp.budget()));
}

Value f_first(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("first", args, {});
  const std::vector<Value> items = iterate(v, interp.budget());
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("last", args, {});
  if (v.is_list() && v.as_list().kind == ListKind::Iterator) fail("'", type_name(v), "' object is not reversible");
  const std::vector<Value> items = iterate(v, interp.budget());
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python's float(str): surrounding whitespace, underscores between digits, inf and nan.
std::optional<double> parse_python_float(const std::string& text) {
  std::string s(python_strip(text, true, true));
  std::string lowered = python_lower(s);
  std::string body = lowered;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body = body.substr(1);
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double d = body == "nan" ? NAN : INFINITY;
    return lowered[0] == '-' ? -d : d;
  }
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(s[i])) && std::string("+-.eE").find(s[i]) == std::string::npos)
      return std::nullopt;
    clean += s[i];
  }
  if (clean.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

// Python's int(str, base).
std::optional<int64_t> parse_python_int(const std::string& text, int64_t base) {
  std::string s(python_strip(text, true, true));
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s = s.substr(1);
  }
  if (s.size() > 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 32);
    const int prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixed != 0 && (base == 0 || base == prefixed)) {
      base = prefixed;
      s = s.substr(2);
      if (!s.empty() && s[0] == '_') s = s.substr(1);
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || s.empty()) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || s[i + 1] == '_') return std::nullopt;
      continue;
    }
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (value > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
      fail("integer ", text, " does not fit in 64 bits");
    value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  const auto i = static_cast<int64_t>(value);
  return negative ? -i : i;
}

// What parsing a number from `s` costs: it is read and copied a few times.
void charge_number_parse(const std::string& s, RenderBudget& budget) {
  budget.charge_scan(s.size());
  budget.charge_memory(4 * uint64_t{s.size()});
}

Value f_float(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  const Value fallback = a.has(0) ? a.get(0) : Value::number(0.0);
  if (v.is_number()) return Value::number(v.to_double());
  if (v.is_string()) {
    charge_number_parse(v.as_string(), interp.budget());
    if (auto d = parse_python_float(v.as_string())) return Value::number(*d);
  }
  return fallback;
}

Value f_int(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  const Value fallback = a.has(0) ? a.get(0) : Value::integer(0);
  const int64_t base = a.has(1) ? int_param(a.get(1), "base") : 10;
  if (v.is_int() || v.is_bool()) return Value::integer(v.to_int());
  if (v.is_float()) {
    const double d = std::trunc(v.as_float());
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    charge_number_parse(v.as_string(), interp.budget());
    if (auto i = parse_python_int(v.as_string(), base)) return Value::integer(*i);
    if (auto d = parse_python_float(v.as_string())) {
      if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(static_cast<int64_t>(std::trunc(*d)));
    }
  }
  return fallback;
}

Value f_format(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  if (!args.positional.empty() && !args.keyword.empty())
    fail("can't handle positional and keyword arguments at the same time");
  if (!args.keyword.empty()) {
    budget.charge_dict(args.keyword.size());
    Dict d;
    for (const auto& [k, val] : args.keyword) d.set(std::string_view(k), val);
    return Value::string(python_percent_format(to_str(v, budget), Value::dict(std::move(d)), budget));
  }
  budget.charge_list(args.positional.size());
  return Value::string(python_percent_format(to_str(v, budget), Value::tuple(args.positional), budget));
}

Value f_groupby(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("groupby", args, {"attribute", "default", "case_sensitive"}, 1);
  const bool case_sensitive = truthy(a.get(2));
  auto key = attribute_getter(a.get(0), !case_sensitive, a.get_or(1, Value::none()), budget);
  const std::vector<Value> items = iterate(v, budget);
  // Each item with its key, computed once.
  budget.charge_list(2 * uint64_t{items.size()});
  std::vector<std::pair<Value, const Value*>> keyed;
  keyed.reserve(items.size());
  for (const Value& item : items) keyed.emplace_back(key(item), &item);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [&](const auto& x, const auto& y) { return compare(x.first, y.first, "<", budget) == -1; });
  auto shown_key = attribute_getter(a.get(0), false, a.get_or(1, Value::none()), budget);
  std::vector<Value> groups;
  size_t i = 0;
  while (i < keyed.size()) {
    const Value& k = keyed[i].first;
    std::vector<Value> members;
    while (i < keyed.size() && equals(keyed[i].first, k, budget)) members.push_back(*keyed[i++].second);
    // The group's key as the first item had it (before lower-casing), as Jinja2 shows it.
    Value shown = case_sensitive ? k : shown_key(members.front());
    budget.charge_list(members.size() + 2);
    groups.push_back(Value::tuple({shown, Value::list(std::move(members))}));
  }
  return Value::list(std::move(groups));
}

Value f_indent(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("indent", args, {"width", "first", "blank"});
  std::string indention = "    ";
  if (a.has(0)) {
    if (a.get(0).is_string()) {
      indention = a.get(0).as_string();
    } else {
      const int64_t width = std::max<int64_t>(0, int_param(a.get(0), "width"));
      budget.charge_string(static_cast<uint64_t>(width));
      indention = std::string(static_cast<size_t>(width), ' ');
    }
  }
  std::string s = text_of(v, budget);
  budget.charge_append(uint64_t{s.size()} + 1, 1);
  s += '\n';
  const std::vector<std::string> lines = python_splitlines(s, false, &budget);
  // Every line but the first may be indented, and the first too with `first`.
  budget.charge_string(s.size() + saturated_product(lines.size(), indention.size()));
  std::string out;
  if (truthy(a.get(2))) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) {
        out += '\n';
        out += indention;
      }
      out += lines[i];
    }
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      out += '\n';
      if (!lines[i].empty()) out += indention;
      out += lines[i];
    }
  }
  if (truthy(a.get(1))) out = indention + out;
  return Value::string(std::move(out));
}

Value f_items(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("items", args, {});
  if (v.is_undefined()) return iterator({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  budget.charge_list(3 * uint64_t{v.as_dict().size()});
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_dict().entries()) pairs.push_back(Value::tuple({k, val}));
  return iterator(std::move(pairs));
}

Value f_join(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("join", args, {"d", "attribute"});
  const std::string sep = a.has(0) ? to_str(a.get(0), budget) : "";
  auto get = attribute_getter(a.get_or(1, Value::none()), false, Value::none(), budget);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v, budget)) {
    if (!first) {
      budget.charge_append(uint64_t{out.size()} + sep.size(), sep.size());
      out += sep;
    }
    first = false;
    append_str(out, get(item), budget);
  }
  return Value::string(std::move(out));
}

Value f_length(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("length", args, {});
  return Value::integer(length(v, interp.budget()));
}

Value f_list(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("list", args, {});
  return Value::list(iterate(v, interp.budget()));
}

Value f_lower(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("lower", args, {});
  return new_string(python_lower(text_of(v, interp.budget())), interp.budget());
}

Value f_upper(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("upper", args, {});
  return new_string(python_upper(text_of(v, interp.budget())), interp.budget());
}

Value call_filter(Interpreter& interp, const std::string& name, const Value& v, const CallArgs& args) {
  const FilterFunction f = find_filter(name);
  if (f == nullptr) fail("no filter named '", name, "'");
  return f(interp, v, args);
}

bool call_test(Interpreter& interp, const std::string& name, const Value& v, const CallArgs& args) {
  const TestFunction t = find_test(name);
  if (t == nullptr) fail("no test named '", name, "'");
  return t(interp, v, args);
}

Value f_map(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  const std::vector<Value> items = iterate(v, budget);
  budget.charge_list(items.size());
  std::vector<Value> out;
  out.reserve(items.size());
  if (args.positional.empty()) {
    Value attribute, fallback = Value::none();
    bool have_attribute = false;
    for (const auto& [k, val] : args.keyword) {
      if (k == "attribute") attribute = val, have_attribute = true;
      else if (k == "default") fallback = val;
      else fail("Unexpected keyword argument '", k, "'");
    }
    if (!have_attribute) fail("map requires a filter argument");
    auto get = attribute_getter(attribute, false, fallback, budget);
    for (const Value& item : items) out.push_back(get(item));
    return iterator(std::move(out));
  }
  const std::string name = to_str(args.positional[0], budget);
  CallArgs rest;
  budget.charge_list(args.positional.size() + args.keyword.size());
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    budget.charge_work(1);
    out.push_back(call_filter(interp, name, item, rest));
  }
  return iterator(std::move(out));
}

Value min_or_max(RenderBudget& budget, const Value& v, const CallArgs& args, bool want_max) {
  BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  auto key = attribute_getter(a.get_or(1, Value::none()), !truthy(a.get(0)), Value::none(), budget);
  const std::vector<Value> items = iterate(v, budget);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    const int c = compare(k, best_key, want_max ? ">" : "<", budget);
    if (want_max ? c == 1 : c == -1) best = i, best_key = std::move(k);
  }
  return items[best];
}

Value f_max(Interpreter& i, const Value& v, const CallArgs& args) { return min_or_max(i.budget(), v, args, true); }
Value f_min(Interpreter& i, const Value& v, const CallArgs& args) { return min_or_max(i.budget(), v, args, false); }

Value select_or_reject(Interpreter& interp, const Value& v, const CallArgs& args, bool select, bool by_attribute) {
  RenderBudget& budget = interp.budget();
  const size_t offset = by_attribute ? 1 : 0;
  if (by_attribute && args.positional.empty()) fail("Missing parameter for attribute name");
  auto get = by_attribute ? attribute_getter(args.positional[0], false, Value::none(), budget)
                          : std::function<Value(const Value&)>([](const Value& x) { return x; });
  std::optional<std::string> test;
  CallArgs rest;
  if (args.positional.size() > offset) {
    test = to_str(args.positional[offset], budget);
    budget.charge_list(args.positional.size() + args.keyword.size());
    rest.positional.assign(args.positional.begin() + static_cast<long>(offset) + 1, args.positional.end());
    rest.keyword = args.keyword;
  }
  const std::vector<Value> items = iterate(v, budget);
  budget.charge_list(items.size());
  std::vector<Value> out;
  for (const Value& item : items) {
    budget.charge_work(1);
    const Value x = get(item);
    const bool passed = test ? call_test(interp, *test, x, rest) : truthy(x);
    if (passed == select) out.push_back(item);
  }
  return iterator(std::move(out));
}

Value f_select(Interpreter& i, const Value& v, const CallArgs& a) { return select_or_reject(i, v, a, true, false); }
Value f_reject(Interpreter& i, const Value& v, const CallArgs& a) { return select_or_reject(i, v, a, false, false); }
Value f_selectattr(Interpreter& i, const Value& v, const CallArgs& a) { return select_or_reject(i, v, a, true, true); }
Value f_rejectattr(Interpreter& i, const Value& v, const CallArgs& a) { return select_or_reject(i, v, a, false, true); }

Value f_replace(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  const int64_t count = a.has(2) && !a.get(2).is_none() ? int_param(a.get(2), "count") : -1;
  const std::string s = text_of(v, budget);
  const std::string old = to_str(a.get(0), budget), replacement = to_str(a.get(1), budget);
  budget.charge_string(python_replace_size(s, old, replacement, count));
  return Value::string(python_replace(s, old, replacement, count));
}

Value f_reverse(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("reverse", args, {});
  if (v.is_string()) {
    const std::string& s = v.as_string();
    budget.charge_scan(s.size());
    budget.charge_memory((uint64_t{s.size()} + 1) * sizeof(size_t));
    budget.charge_string(s.size());
    const auto offsets = code_point_offsets(s);
    std::string out;
    for (size_t k = offsets.size() - 1; k > 0; --k) out.append(s, offsets[k - 1], offsets[k] - offsets[k - 1]);
    return Value::string(std::move(out));
  }
  std::vector<Value> items = iterate(v, budget);
  std::reverse(items.begin(), items.end());
  if (v.is_list() && v.as_list().kind == ListKind::Iterator) return Value::list(std::move(items));
  return iterator(std::move(items), v.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator");
}

Value f_round(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  const int64_t precision = a.has(0) ? int_param(a.get(0), "precision") : 0;
  const std::string method = a.has(1) ? to_str(a.get(1), interp.budget()) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    fail("method must be common, ceil or floor");
  if (!v.is_number()) fail("type ", type_name(v), " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_int() || v.is_bool()) {
      if (precision >= 0) return Value::integer(v.to_int());
      // Python rounds an int exactly, half to even, to a multiple of 10^-precision.
      const __int128 x = v.to_int();
      if (precision < -19) return Value::integer(0);  // 10^20 / 2 exceeds any int64
      __int128 q = 1;
      for (int64_t k = 0; k < -precision; ++k) q *= 10;
      __int128 r = x % q;
      if (r < 0) r += q;  // Python's modulo: 0 <= r < q
      __int128 rounded = x - r;
      if (2 * r > q || (2 * r == q && ((rounded / q) % 2 != 0))) rounded += q;
      if (rounded > INT64_MAX || rounded < INT64_MIN)
        fail("round(", v.to_int(), ", ", precision, ") does not fit in 64 bits");
      return Value::integer(static_cast<int64_t>(rounded));
    }
    const double d = v.as_float();
    if (!std::isfinite(d)) return v;
    if (precision == 0) return Value::number(std::nearbyint(d));
    // As CPython's float round: past 323 digits every double is exact, and below -308 every
    // double rounds to (signed) zero.
    if (precision > 323) return v;
    if (precision < -308) return Value::number(0.0 * d);
    if (precision > 0) {
      // printf rounds the exact binary value, ties to even, as Python's round() does.
      char buf[1100];  // up to 309 digits, the point and 323 decimals
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), d);
      return Value::number(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::number(std::nearbyint(d / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.to_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("safe", args, {});
  return Value::string(to_str(v, interp.budget()));
}

Value f_slice(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("slice", args, {"slices", "fill_with"}, 1);
  const int64_t slices = int_param(a.get(0), "slices");
  if (slices <= 0) fail("slice() slices must be positive");
  const std::vector<Value> seq = iterate(v, budget);
  // The slices, and their items (each item once, and a fill per slice).
  budget.charge_list(static_cast<uint64_t>(slices));
  budget.charge_list(seq.size() + static_cast<uint64_t>(slices));
  const auto length = static_cast<int64_t>(seq.size());
  const int64_t per = length / slices, extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> part(seq.begin() + start, seq.begin() + end);
    if (a.has(1) && !a.get(1).is_none() && k >= extra) part.push_back(a.get(1));
    out.push_back(Value::list(std::move(part)));
  }
  return iterator(std::move(out));
}

Value f_sort(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = truthy(a.get(0));
  // Jinja2 sorts by a list of keys, one per comma-separated attribute ("age,name").
  std::vector<std::function<Value(const Value&)>> getters;
  const Value attribute = a.get_or(2, Value::none());
  if (attribute.is_string()) {
    for (const std::string& part : python_split(attribute.as_string(), std::string_view(","), -1, false, &budget))
      getters.push_back(attribute_getter(Value::string(part), !truthy(a.get(1)), Value::none(), budget));
  } else {
    getters.push_back(attribute_getter(attribute, !truthy(a.get(1)), Value::none(), budget));
  }
  auto key = [&getters, &budget](const Value& item) {
    budget.charge_list(getters.size());
    std::vector<Value> keys;
    for (const auto& get : getters) keys.push_back(get(item));
    return Value::list(std::move(keys));
  };
  std::vector<Value> items = iterate(v, budget);
  budget.charge_list(2 * uint64_t{items.size()});
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (Value& item : items) keyed.emplace_back(key(item), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [reverse, &budget](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first, "<", budget) == -1 : compare(x.first, y.first, "<", budget) == -1;
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_string(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("string", args, {});
  return Value::string(to_str(v, interp.budget()));
}

Value f_sum(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("sum", args, {"attribute", "start"});
  auto get = attribute_getter(a.get_or(0, Value::none()), false, Value::none(), budget);
  Value total = a.has(1) ? a.get(1) : Value::integer(0);
  for (const Value& item : iterate(v, budget)) total = binary_operation(BinaryOp::Add, total, get(item), budget);
  return total;
}

Value f_title(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("title", args, {});
  // Jinja2 splits before runs of -, whitespace and opening brackets; each piece then
  // starts upper-cased and continues lower-cased.
  const std::string s = text_of(v, interp.budget());
  auto is_break = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(c); };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    size_t probe = i;
    const bool breaks = is_break(next_code_point(s, probe));
    while (i < s.size()) {
      size_t next = i;
      if (is_break(next_code_point(s, next)) != breaks) break;
      i = next;
    }
    const std::string piece = s.substr(start, i - start);
    size_t first_end = 0;
    next_code_point(piece, first_end);
    out += python_upper(piece.substr(0, first_end)) + python_lower(piece.substr(first_end));
  }
  return new_string(std::move(out), interp.budget());
}

Value f_tojson(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  // transformers' tojson: json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = truthy(a.get(0));
  o.sort_keys = truthy(a.get(3));
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& indent = a.get(1);
    o.indent = indent.is_string() ? indent.as_string()
                                  : std::string(static_cast<size_t>(std::clamp<int64_t>(int_param(indent, "indent"), 0, 1024)), ' ');
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const std::vector<Value> seps = iterate(a.get(2), budget);
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
      fail("tojson separators must be a pair of strings");
    o.item_separator = seps[0].as_string();
    o.key_separator = seps[1].as_string();
  }
  return Value::string(python_json_dumps(v, o, budget));
}

Value f_trim(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("trim", args, {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0).is_none()) chars = to_str(a.get(0), budget);
  const std::string s = text_of(v, budget);
  if (chars) {
    budget.charge_scan(chars->size());
    budget.charge_memory(sizeof(char32_t) * uint64_t{chars->size()});
  }
  return new_string(
      std::string(python_strip(s, true, true, chars ? std::optional<std::string_view>(*chars) : std::nullopt)), budget);
}

Value f_truncate(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("truncate", args, {"length", "killwords", "end", "leeway"});
  const std::string s = text_of(v, budget);
  const int64_t length = a.has(0) ? int_param(a.get(0), "length") : 255;
  const bool killwords = truthy(a.get(1));
  const std::string end = a.has(2) ? to_str(a.get(2), budget) : "...";
  const int64_t leeway = a.has(3) && !a.get(3).is_none() ? int_param(a.get(3), "leeway") : 5;
  const auto end_len = static_cast<int64_t>(code_point_count(end));
  if (length < end_len) fail("expected length >= ", end_len, ", got ", length);
  if (leeway < 0) fail("expected leeway >= 0, got ", leeway);
  const size_t count = code_point_count(s);
  const auto n = static_cast<int64_t>(count);
  if (leeway > INT64_MAX - length || n <= length + leeway) return Value::string(s);
  budget.charge_string(s.size() + end.size());
  std::string head = s.substr(0, code_point_offset(s, static_cast<size_t>(length - end_len), count));
  if (killwords) return Value::string(head + end);
  const size_t space = head.rfind(' ');
  if (space != std::string::npos) head = head.substr(0, space);
  return Value::string(head + end);
}

// Items in order, without those whose key was seen before: the keys go in a hashed dict,
// so n items cost O(n), as Python's set does.
Value f_unique(Interpreter& interp, const Value& v, const CallArgs& args) {
  RenderBudget& budget = interp.budget();
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  auto key = attribute_getter(a.get_or(1, Value::none()), !truthy(a.get(0)), Value::none(), budget);
  const std::vector<Value> items = iterate(v, budget);
  budget.charge_dict(items.size());
  budget.charge_list(items.size());
  Dict seen;
  std::vector<Value> out;
  for (const Value& item : items) {
    Value k = key(item);
    const uint64_t hash = hash_value(k, budget);
    if (seen.find(k, hash) != nullptr) continue;
    seen.set(std::move(k), hash, Value::none());
    out.push_back(item);
  }
  return iterator(std::move(out));
}

Value f_wordcount(Interpreter& interp, const Value& v, const CallArgs& args) {
  BoundArgs a("wordcount", args, {});
  const std::string s = text_of(v, interp.budget());
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const bool w = is_python_word(next_code_point(s, i));
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value::integer(words);
}

// ---- tests ----------------------------------------------------------------------

const Value& test_arg(const CallArgs& args, const char* test) {
  if (args.positional.size() != 1 || !args.keyword.empty()) fail("test '", test, "' takes one argument");
  return args.positional[0];
}

void no_args(const CallArgs& args, const char* test) {
  if (!args.positional.empty() || !args.keyword.empty()) fail("test '", test, "' takes no arguments");
}

bool t_boolean(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "boolean"), v.is_bool(); }
bool t_callable(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "callable");
  return v.is_callable() || v.is_undefined() || (v.is_object() && v.as_object().kind == ObjectKind::Loop);
}
bool t_defined(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "defined"), !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "undefined"), v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "none"), v.is_none(); }
bool t_true(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "true"), v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "false"), v.is_bool() && !v.as_bool(); }
bool t_string(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "string"), v.is_string(); }
bool t_number(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "number"), v.is_number(); }
bool t_integer(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "integer"), v.is_int(); }
bool t_float(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "float"), v.is_float(); }
bool t_mapping(Interpreter&, const Value& v, const CallArgs& a) { return no_args(a, "mapping"), v.is_dict(); }
bool t_escaped(Interpreter&, const Value&, const CallArgs& a) { return no_args(a, "escaped"), false; }
bool t_iterable(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "iterable");
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() ||
         (v.is_object() && v.as_object().kind == ObjectKind::Loop);
}
bool t_sequence(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "sequence");
  return v.is_undefined() || v.is_string() || v.is_sequence_list() || v.is_dict();
}
bool t_lower(Interpreter& i, const Value& v, const CallArgs& a) {
  no_args(a, "lower");
  return python_is_lower(text_of(v, i.budget()));
}
bool t_upper(Interpreter& i, const Value& v, const CallArgs& a) {
  no_args(a, "upper");
  return python_is_upper(text_of(v, i.budget()));
}
bool number_mod(RenderBudget& budget, const Value& v, const Value& n, int64_t want) {
  const Value r = binary_operation(BinaryOp::Modulo, v, n, budget);
  return equals(r, Value::integer(want), budget);
}
bool t_even(Interpreter& i, const Value& v, const CallArgs& a) {
  return no_args(a, "even"), number_mod(i.budget(), v, Value::integer(2), 0);
}
bool t_odd(Interpreter& i, const Value& v, const CallArgs& a) {
  return no_args(a, "odd"), number_mod(i.budget(), v, Value::integer(2), 1);
}
bool t_divisibleby(Interpreter& i, const Value& v, const CallArgs& a) {
  return number_mod(i.budget(), v, test_arg(a, "divisibleby"), 0);
}
bool t_eq(Interpreter& i, const Value& v, const CallArgs& a) { return equals(v, test_arg(a, "eq"), i.budget()); }
bool t_ne(Interpreter& i, const Value& v, const CallArgs& a) { return !equals(v, test_arg(a, "ne"), i.budget()); }
bool t_lt(Interpreter& i, const Value& v, const CallArgs& a) {
  return compare(v, test_arg(a, "lt"), "<", i.budget()) == -1;
}
bool t_le(Interpreter& i, const Value& v, const CallArgs& a) {
  const int c = compare(v, test_arg(a, "le"), "<=", i.budget());
  return c == -1 || c == 0;
}
bool t_gt(Interpreter& i, const Value& v, const CallArgs& a) {
  return compare(v, test_arg(a, "gt"), ">", i.budget()) == 1;
}
bool t_ge(Interpreter& i, const Value& v, const CallArgs& a) {
  const int c = compare(v, test_arg(a, "ge"), ">=", i.budget());
  return c == 1 || c == 0;
}
bool t_in(Interpreter& i, const Value& v, const CallArgs& a) { return contains(test_arg(a, "in"), v, i.budget()); }
bool t_sameas(Interpreter& i, const Value& v, const CallArgs& a) {
  const Value& other = test_arg(a, "sameas");
  if (v.kind() != other.kind()) return false;
  if (v.identity() != nullptr) return v.identity() == other.identity();
  return equals(v, other, i.budget());
}
bool t_filter(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "filter");
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "test");
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

}  // namespace

FilterFunction find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFunction> kFilters = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"groupby", f_groupby},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"slice", f_slice},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  const auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : it->second;
}

TestFunction find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFunction> kTests = {
      {"boolean", t_boolean},   {"callable", t_callable}, {"defined", t_defined},   {"divisibleby", t_divisibleby},
      {"eq", t_eq},             {"equalto", t_eq},        {"==", t_eq},             {"escaped", t_escaped},
      {"even", t_even},         {"false", t_false},       {"filter", t_filter},     {"float", t_float},
      {"ge", t_ge},             {">=", t_ge},             {"gt", t_gt},             {"greaterthan", t_gt},
      {">", t_gt},              {"in", t_in},             {"integer", t_integer},   {"iterable", t_iterable},
      {"le", t_le},             {"<=", t_le},             {"lower", t_lower},       {"lt", t_lt},
      {"lessthan", t_lt},       {"<", t_lt},              {"mapping", t_mapping},   {"ne", t_ne},
      {"!=", t_ne},             {"none", t_none},         {"number", t_number},     {"odd", t_odd},
      {"sameas", t_sameas},     {"sequence", t_sequence}, {"string", t_string},     {"test", t_test},
      {"true", t_true},         {"undefined", t_undefined}, {"upper", t_upper},
  };
  const auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : it->second;
}

}  // namespace glass::jinja
