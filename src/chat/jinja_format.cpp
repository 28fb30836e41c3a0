#include "chat/jinja_format.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "chat/jinja_builtins.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

namespace {

struct Spec {
  char fill = ' ';
  char align = '\0';  // < > ^ = or none
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int64_t width = 0;  // at most the string budget (checked as parsed)
  char grouping = '\0';
  // Any size (it only cuts a string); a number's is checked where it pads digits.
  int64_t precision = -1;
  char type = '\0';
};

// A width, refused past the string budget: the result is at least that long.
int64_t checked_width(uint64_t n, RenderBudget& budget) {
  budget.check_string_size(n);
  return static_cast<int64_t>(n);
}

int64_t saturated(uint64_t n) { return n > INT64_MAX ? INT64_MAX : static_cast<int64_t>(n); }

// The decimal digits at format[i...], saturated at UINT64_MAX.
uint64_t parse_digits(const std::string& format, size_t& i) {
  uint64_t n = 0;
  while (i < format.size() && format[i] >= '0' && format[i] <= '9') {
    const auto d = static_cast<uint64_t>(format[i++] - '0');
    if (n > (UINT64_MAX - d) / 10) n = UINT64_MAX;
    else n = n * 10 + d;
  }
  return n;
}

// chr(i), refusing what would not be a valid code point.
std::string character(int64_t i) {
  if (i < 0 || i > 0x10FFFF || (i >= 0xD800 && i <= 0xDFFF)) fail("%c arg not in range(0x110000)");
  std::string c;
  append_utf8(c, static_cast<char32_t>(i));
  return c;
}

std::string pad(std::string body, const Spec& s, char default_align) {
  const auto len = static_cast<int64_t>(code_point_count(body));
  if (len >= s.width) return body;
  const auto missing = static_cast<size_t>(s.width - len);
  char align = s.align != '\0' ? s.align : default_align;
  if (align == '<') return body + std::string(missing, s.fill);
  if (align == '^') return std::string(missing / 2, s.fill) + body + std::string(missing - missing / 2, s.fill);
  if (align == '=') {
    // Padding goes after the sign (and 0x prefix).
    size_t prefix = 0;
    if (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) prefix = 1;
    if (body.size() > prefix + 1 && body[prefix] == '0' && std::string("xXoObB").find(body[prefix + 1]) != std::string::npos)
      prefix += 2;
    return body.substr(0, prefix) + std::string(missing, s.fill) + body.substr(prefix);
  }
  return std::string(missing, s.fill) + body;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += sep;
    out += digits[i];
  }
  return out;
}

std::string int_digits(int64_t v, int base, bool upper) {
  if (v == 0) return "0";
  // Work on the magnitude as unsigned so INT64_MIN is fine.
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string out;
  while (m > 0) {
    const int d = static_cast<int>(m % static_cast<uint64_t>(base));
    out.insert(out.begin(), static_cast<char>(d < 10 ? '0' + d : (upper ? 'A' : 'a') + d - 10));
    m /= static_cast<uint64_t>(base);
  }
  return out;
}

// printf's %e, %f or %g of |d|. `precision` is within the string budget (checked when
// parsed), and the digits before the point are at most 309 (DBL_MAX), so the text is too
// when its length is checked before it is written.
std::string c_float(double d, char type, int64_t precision, bool alternate, RenderBudget& budget) {
  if (std::isinf(d) || std::isnan(d)) {
    std::string s = std::isnan(d) ? "nan" : "inf";
    if (type == 'E' || type == 'F' || type == 'G') s = std::isnan(d) ? "NAN" : "INF";
    return s;
  }
  budget.charge_string(static_cast<uint64_t>(precision) + 320);
  char fmt[16];
  std::snprintf(fmt, sizeof fmt, "%%%s.*%c", alternate ? "#" : "", type);
  const int n = std::snprintf(nullptr, 0, fmt, static_cast<int>(precision), std::fabs(d));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), fmt, static_cast<int>(precision), std::fabs(d));
  out.pop_back();
  return out;
}

std::string format_number(const Value& v, Spec s, RenderBudget& budget) {
  const bool is_float = v.is_float() || std::string("eEfFgG%").find(s.type) != std::string::npos;
  std::string body;
  bool negative;
  if (!is_float) {
    const int64_t i = v.to_int();
    negative = i < 0;
    switch (s.type) {
      case 'b': body = int_digits(i, 2, false); break;
      case 'o': body = int_digits(i, 8, false); break;
      case 'x': body = int_digits(i, 16, false); break;
      case 'X': body = int_digits(i, 16, true); break;
      case 'c': return pad(character(i), s, '<');
      case 'd':
      case 'n':
      case '\0': body = int_digits(i, 10, false); break;
      default: fail("unknown format code '", s.type, "' for object of type 'int'");
    }
    if (s.grouping != '\0') body = group_digits(body, s.grouping);
    if (s.alternate && (s.type == 'b' || s.type == 'o' || s.type == 'x' || s.type == 'X'))
      body = std::string("0") + s.type + body;
  } else {
    const double d = v.to_double();
    negative = std::signbit(d) && !std::isnan(d);
    char type = s.type;
    int64_t precision = s.precision;
    if (type == '\0') {
      if (precision < 0) {
        body = python_float_repr(std::fabs(d));
      } else {
        body = c_float(d, 'g', precision == 0 ? 1 : precision, s.alternate, budget);
        if (body.find_first_of(".en") == std::string::npos) body += ".0";
      }
    } else if (type == '%') {
      body = c_float(d * 100, 'f', precision < 0 ? 6 : precision, s.alternate, budget) + "%";
    } else {
      if (type == 'n') type = 'g';
      if (std::string("eEfFgG").find(type) == std::string::npos)
        fail("unknown format code '", type, "' for object of type 'float'");
      body = c_float(d, type, precision < 0 ? 6 : precision, s.alternate, budget);
    }
    if (s.grouping != '\0') {
      const size_t end = body.find_first_not_of("0123456789");
      body = group_digits(body.substr(0, end), s.grouping) + (end == std::string::npos ? "" : body.substr(end));
    }
  }
  const std::string sign = negative ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
  body = sign + body;
  if (s.zero && s.align == '\0') {
    s.fill = '0';
    s.align = '=';
  }
  return pad(body, s, '>');
}

Spec parse_spec(const std::string& spec, RenderBudget& budget) {
  Spec s;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (spec.size() >= 2 && is_align(spec[1]) && (static_cast<unsigned char>(spec[0]) < 0x80)) {
    s.fill = spec[0];
    s.align = spec[1];
    i = 2;
  } else if (!spec.empty() && is_align(spec[0])) {
    s.align = spec[0];
    i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) s.sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') s.alternate = true, ++i;
  if (i < spec.size() && spec[i] == '0') s.zero = true, ++i;
  s.width = checked_width(parse_digits(spec, i), budget);
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) s.grouping = spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    if (i >= spec.size() || spec[i] < '0' || spec[i] > '9') fail("format specifier missing precision");
    s.precision = saturated(parse_digits(spec, i));
  }
  if (i < spec.size()) s.type = spec[i++];
  if (i < spec.size()) fail("invalid format specifier '", spec, "'");
  return s;
}

// The first `precision` code points of `s` (all of it when precision < 0).
std::string cut(const std::string& s, int64_t precision, RenderBudget& budget) {
  if (precision < 0) return s;
  budget.charge_scan(s.size());
  const size_t count = code_point_count(s);
  if (static_cast<uint64_t>(precision) >= count) return s;
  return s.substr(0, code_point_offset(s, static_cast<size_t>(precision), count));
}

std::string format_value(const Value& value, const std::string& spec, RenderBudget& budget) {
  if (spec.empty()) return to_str(value, budget);
  const Spec s = parse_spec(spec, budget);
  if (value.is_string()) {
    if (s.type != '\0' && s.type != 's') fail("unknown format code '", s.type, "' for object of type 'str'");
    return pad(cut(value.as_string(), s.precision, budget), s, '<');
  }
  if (value.is_number()) return format_number(value, s, budget);
  fail("unsupported format string passed to ", type_name(value), ".__format__");
}

}  // namespace

std::string python_format_value(const Value& value, const std::string& spec, RenderBudget& budget) {
  std::string out = format_value(value, spec, budget);
  budget.charge_string(out.size());
  return out;
}

std::string python_percent_format(const std::string& format, const Value& args, RenderBudget& budget) {
  std::vector<Value> values;
  const Dict* mapping = nullptr;
  const bool tuple = args.is_list() && args.as_list().kind == ListKind::Tuple;
  budget.charge_scan(format.size());
  if (tuple) {
    budget.charge_list(args.as_list().items.size());
    values = args.as_list().items;
  } else {
    values.push_back(args);
  }
  if (args.is_dict()) mapping = &args.as_dict();
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> const Value& {
    if (next >= values.size()) fail("not enough arguments for format string");
    return values[next++];
  };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) fail("incomplete format");
    std::optional<Value> keyed;
    if (format[i] == '(') {
      if (mapping == nullptr) fail("format requires a mapping");
      int depth = 1;
      const size_t start = ++i;
      while (i < format.size() && depth > 0) {
        if (format[i] == '(') ++depth;
        else if (format[i] == ')') --depth;
        ++i;
      }
      if (depth > 0) fail("incomplete format key");
      const std::string key = format.substr(start, i - start - 1);
      const Value* v = mapping->find(std::string_view(key));
      if (v == nullptr) fail("KeyError: ", repr_for_message(Value::string(key)));
      keyed = *v;
      used_mapping = true;
    }
    Spec s;
    s.sign = '\0';
    bool left = false;
    for (; i < format.size(); ++i) {
      const char f = format[i];
      if (f == '-') left = true;
      else if (f == '+') s.sign = '+';
      else if (f == ' ') {
        if (s.sign != '+') s.sign = ' ';
      } else if (f == '#') s.alternate = true;
      else if (f == '0') s.zero = true;
      else break;
    }
    // `*` takes the width (a negative one left-aligns) or the precision (a negative one
    // is 0) from the arguments.
    auto star_argument = [&]() {
      const Value& n = take();
      if (!n.is_int() && !n.is_bool()) fail("* wants int");
      ++i;
      return n.to_int();
    };
    if (i < format.size() && format[i] == '*') {
      const int64_t width = star_argument();
      if (width < 0) left = true;
      s.width = checked_width(width < 0 ? 0 - static_cast<uint64_t>(width) : static_cast<uint64_t>(width), budget);
    } else {
      s.width = checked_width(parse_digits(format, i), budget);
    }
    if (i < format.size() && format[i] == '.') {
      ++i;
      if (i < format.size() && format[i] == '*') s.precision = std::max<int64_t>(0, star_argument());
      else s.precision = saturated(parse_digits(format, i));
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
    if (i >= format.size()) fail("incomplete format");
    const char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    const Value& v = keyed ? *keyed : take();
    if (left) s.align = '<';
    else s.align = '>';
    std::string piece;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        piece = cut(conv == 's' ? to_str(v, budget) : repr(v, budget), s.precision, budget);
        piece = pad(piece, s, '>');
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number()) {
          const char* need = (conv == 'x' || conv == 'X' || conv == 'o') ? "an integer" : "a real number";
          fail("%", conv, " format: ", need, " is required, not ", type_name(v));
        }
        if (v.is_float() && (conv == 'x' || conv == 'X' || conv == 'o'))
          fail("%", conv, " format: an integer is required, not float");
        const double d = v.to_double();
        if (v.is_float() && !std::isfinite(d)) fail("cannot convert float ", python_float_repr(d), " to integer");
        // A float past int64's range (Python's int has none) is an integer already; its digits
        // are its exact decimal expansion, as %.0f prints it.
        const bool wide = v.is_float() && !(d >= -0x1p63 && d < 0x1p63);
        const int64_t n = wide ? 0 : v.is_float() ? static_cast<int64_t>(d) : v.to_int();
        const int base = conv == 'x' || conv == 'X' ? 16 : conv == 'o' ? 8 : 10;
        std::string digits;
        if (wide) {
          char buf[400];  // DBL_MAX has 309 digits
          std::snprintf(buf, sizeof buf, "%.0f", std::fabs(d));
          digits = buf;
        } else {
          digits = int_digits(n, base, conv == 'X');
        }
        if (s.precision >= 0) budget.check_string_size(static_cast<uint64_t>(s.precision));
        if (s.precision >= 0 && digits.size() < static_cast<size_t>(s.precision))
          digits.insert(0, static_cast<size_t>(s.precision) - digits.size(), '0');
        if (s.alternate && base != 10) digits = std::string("0") + (conv == 'o' ? 'o' : conv) + digits;
        const std::string sign = (wide ? d < 0 : n < 0) ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
        piece = sign + digits;
        if (s.zero && !left) {
          s.fill = '0';
          s.align = '=';
        }
        piece = pad(piece, s, '>');
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!v.is_number()) fail("must be real number, not ", type_name(v));
        const double d = v.to_double();
        piece = c_float(d, conv, s.precision < 0 ? 6 : s.precision, s.alternate, budget);
        const bool negative = std::signbit(d) && !std::isnan(d);
        piece = (negative ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "") + piece;
        if (s.zero && !left && std::isfinite(d)) {
          s.fill = '0';
          s.align = '=';
        }
        piece = pad(piece, s, '>');
        break;
      }
      case 'c': {
        if (v.is_string() && code_point_count(v.as_string()) == 1) piece = v.as_string();
        else if (v.is_int() || v.is_bool()) piece = character(v.to_int());
        else fail("%c requires an int or a unicode character");
        piece = pad(piece, s, '>');
        break;
      }
      default: fail("unsupported format character '", conv, "'");
    }
    budget.charge_append(uint64_t{out.size()} + piece.size(), piece.size());
    out += piece;
  }
  if (!mapping && next < values.size()) fail("not all arguments converted during string formatting");
  if (mapping && !used_mapping && tuple && next < values.size())
    fail("not all arguments converted during string formatting");
  budget.charge_string(out.size());
  return out;
}

std::string python_str_format(const std::string& format, const CallArgs& args, RenderBudget& budget) {
  budget.charge_scan(format.size());
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) fail("Single '{' encountered in format string");
    const std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    // field_name[!conversion][:spec]
    std::string name = field, spec;
    char conversion = '\0';
    if (const size_t colon = name.find(':'); colon != std::string::npos) {
      spec = name.substr(colon + 1);
      name = name.substr(0, colon);
    }
    if (const size_t bang = name.find('!'); bang != std::string::npos) {
      if (bang + 2 != name.size()) fail("expected ':' after conversion specifier");
      conversion = name[bang + 1];
      name = name.substr(0, bang);
    }
    size_t head_end = name.find_first_of(".[");
    const std::string head = name.substr(0, head_end);
    Value v;
    if (head.empty() || (head.find_first_not_of("0123456789") == std::string::npos)) {
      const size_t index = head.empty() ? auto_index++ : static_cast<size_t>(parse_index(head));
      if (index >= args.positional.size())
        fail("Replacement index ", index, " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      const Value* found = nullptr;
      for (const auto& [k, kv] : args.keyword)
        if (k == head) found = &kv;
      if (found == nullptr) fail("KeyError: '", head, "'");
      v = *found;
    }
    while (head_end != std::string::npos && head_end < name.size()) {
      if (name[head_end] == '.') {
        const size_t next = name.find_first_of(".[", head_end + 1);
        v = get_attribute(v, name.substr(head_end + 1, next == std::string::npos ? std::string::npos : next - head_end - 1),
                          budget);
        head_end = next;
      } else {
        const size_t end = name.find(']', head_end);
        if (end == std::string::npos) fail("Missing ']' in format string");
        const std::string key = name.substr(head_end + 1, end - head_end - 1);
        v = key.find_first_not_of("0123456789") == std::string::npos && !key.empty()
                ? get_item(v, Value::integer(parse_index(key)), budget)
                : get_item(v, Value::string(key), budget);
        head_end = end + 1;
      }
      if (v.is_undefined()) fail_undefined(v);
    }
    if (conversion == 'r' || conversion == 'a') v = Value::string(repr(v, budget));
    else if (conversion == 's') v = Value::string(to_str(v, budget));
    else if (conversion != '\0') fail("Unknown conversion specifier ", conversion);
    const std::string piece = format_value(v, spec, budget);
    budget.charge_append(uint64_t{out.size()} + piece.size(), piece.size());
    out += piece;
  }
  budget.charge_string(out.size());
  return out;
}

}  // namespace glass::jinja
