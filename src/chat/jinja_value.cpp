#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

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

namespace {

// Dicts this small are scanned; larger ones keep an index.
constexpr size_t kDictScanLimit = 16;

// Compares a key found by its hash with the one looked up. The cost is what hashing the
// looked-up key cost (it walked the same items), which its caller charged.
bool same_key(const Value& a, const Value& b);

}  // namespace

std::optional<size_t> Dict::position(const Value& key, uint64_t hash) const {
  if (index_.empty()) {
    for (size_t i = 0; i < entries_.size(); ++i)
      if (hashes_[i] == hash && same_key(entries_[i].first, key)) return i;
    return std::nullopt;
  }
  const auto [begin, end] = index_.equal_range(hash);
  for (auto it = begin; it != end; ++it)
    if (same_key(entries_[it->second].first, key)) return it->second;
  return std::nullopt;
}

std::optional<size_t> Dict::position(std::string_view key, uint64_t hash) const {
  auto matches = [&](size_t i) { return entries_[i].first.is_string() && entries_[i].first.as_string() == key; };
  if (index_.empty()) {
    for (size_t i = 0; i < entries_.size(); ++i)
      if (hashes_[i] == hash && matches(i)) return i;
    return std::nullopt;
  }
  const auto [begin, end] = index_.equal_range(hash);
  for (auto it = begin; it != end; ++it)
    if (matches(it->second)) return it->second;
  return std::nullopt;
}

const Value* Dict::find(const Value& key, uint64_t hash) const {
  const auto i = position(key, hash);
  return i ? &entries_[*i].second : nullptr;
}

const Value* Dict::find(std::string_view key) const {
  const auto i = position(key, hash_string(key));
  return i ? &entries_[*i].second : nullptr;
}

void Dict::set(Value key, uint64_t hash, Value value) {
  if (const auto i = position(key, hash)) {
    entries_[*i].second = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  hashes_.push_back(hash);
  if (!index_.empty()) {
    index_.emplace(hash, entries_.size() - 1);
  } else if (entries_.size() > kDictScanLimit) {
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(hashes_[i], i);
  }
}

void Dict::set(std::string_view key, Value value) {
  const uint64_t hash = hash_string(key);
  if (const auto i = position(key, hash)) {
    entries_[*i].second = std::move(value);
    return;
  }
  set(Value::string(std::string(key)), hash, std::move(value));
}

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

Value Value::callable(std::string name, std::string type_name, NativeFunction fn, int depth) {
  Value v;
  v.depth_ = depth;
  check_depth(depth);
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

bool append_string_repr(std::string& out, std::string_view s, size_t max_bytes) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    if (out.size() > max_bytes) return false;
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
  return out.size() <= max_bytes;
}

void append_string_repr(std::string& out, std::string_view s) { append_string_repr(out, s, SIZE_MAX); }

namespace {

// Writes str() or repr() into `out`, up to `limit` bytes in all: shared structure (a list
// that holds one list twice, nested) prints exponentially long, so the printer stops
// there. With a budget, passing the limit is the string budget's error; without one (for
// messages), the text is cut and ends in "...".
class Printer {
 public:
  Printer(std::string& out, size_t limit, RenderBudget* budget) : out_(out), limit_(limit), budget_(budget) {}

  bool cut() const { return cut_; }

  void print(const Value& v, bool as_repr, int depth) {
    if (cut_) return;
    if (depth > kMaxValueDepth + 2) fail("value nested too deeply to print");
    switch (v.kind()) {
      case Value::Kind::Undefined:
        if (as_repr) text("Undefined");
        return;
      case Value::Kind::None: text("None"); return;
      case Value::Kind::Bool: text(v.as_bool() ? "True" : "False"); return;
      case Value::Kind::Int: text(std::to_string(v.as_int())); return;
      case Value::Kind::Float: text(python_float_repr(v.as_float())); return;
      case Value::Kind::String: string(v.as_string(), as_repr); return;
      case Value::Kind::List: {
        const ListData& l = v.as_list();
        if (l.kind == ListKind::Iterator) {
          text("<" + l.iterator_type + " object>");
          return;
        }
        const bool tuple = l.kind == ListKind::Tuple;
        // dict_items([('a', 1)])
        if (l.kind == ListKind::View) text(l.iterator_type + "([");
        else text(tuple ? "(" : "[");
        for (size_t i = 0; i < l.items.size() && !cut_; ++i) {
          if (i > 0) text(", ");
          print(l.items[i], true, depth + 1);
        }
        if (l.kind == ListKind::View) {
          text("])");
          return;
        }
        if (tuple && l.items.size() == 1) text(",");
        text(tuple ? ")" : "]");
        return;
      }
      case Value::Kind::Dict: dict(v.as_dict(), depth); return;
      case Value::Kind::Object: {
        const ObjectData& o = v.as_object();
        if (o.kind == ObjectKind::Loop) {
          text("<LoopContext>");
          return;
        }
        text("<Namespace ");
        dict(o.attributes, depth + 1);
        text(">");
        return;
      }
      case Value::Kind::Callable: {
        const Callable& c = v.as_callable();
        if (c.type_name == "Macro") {
          text("<Macro ");
          string(c.name, true);
          text(">");
        } else {
          text("<built-in method " + c.name + ">");
        }
        return;
      }
    }
  }

 private:
  void dict(const Dict& d, int depth) {
    text("{");
    bool first = true;
    for (const auto& [key, value] : d.entries()) {
      if (cut_) return;
      if (!first) text(", ");
      first = false;
      print(key, true, depth + 1);
      text(": ");
      print(value, true, depth + 1);
    }
    text("}");
  }

  // The longest prefix of `t` of at most `n` bytes that ends at a character boundary.
  static size_t boundary(std::string_view t, size_t n) {
    if (n >= t.size()) return t.size();
    while (n > 0 && (static_cast<unsigned char>(t[n]) & 0xC0) == 0x80) --n;
    return n;
  }

  size_t room() const { return limit_ > out_.size() ? limit_ - out_.size() : 0; }

  // Past the limit: the string budget's error, or, for a message, what fits and "...".
  void overflow(std::string_view t) {
    if (budget_ != nullptr) budget_->check_string_size(uint64_t{out_.size()} + t.size());
    out_.append(t.substr(0, boundary(t, room())));
    out_ += "...";
    cut_ = true;
  }

  void text(std::string_view t) {
    if (cut_) return;
    if (t.size() <= room()) out_.append(t);
    else overflow(t);
  }

  void string(const std::string& s, bool as_repr) {
    if (!as_repr) {
      text(s);
      return;
    }
    // Escapes only lengthen the text, and a repr stops once past the limit, so a long
    // string costs no more than the room left.
    const size_t before = out_.size(), fits = room();
    if (append_string_repr(out_, s, limit_)) return;
    const size_t reached = out_.size();
    out_.resize(before + boundary(std::string_view(out_).substr(before), fits));
    if (budget_ != nullptr) budget_->check_string_size(reached);
    out_ += "...";
    cut_ = true;
  }

  std::string& out_;
  const size_t limit_;
  RenderBudget* const budget_;
  bool cut_ = false;
};

bool list_equals(const ListData& a, const ListData& b, int depth, RenderBudget* budget);

// `budget` null: only for keys whose hash (which walked them as far) was charged.
bool equals_at(const Value& a, const Value& b, int depth, RenderBudget* budget) {
  if (depth > kMaxValueDepth + 2) fail("values nested too deeply to compare");
  if (budget != nullptr) budget->charge_work(1);
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
    case Value::Kind::String:
      if (a.as_string().size() != b.as_string().size()) return false;
      if (budget != nullptr) budget->charge_scan(a.as_string().size());
      return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const ListData& la = a.as_list();
      const ListData& lb = b.as_list();
      if (la.kind != lb.kind) return false;
      if (la.kind == ListKind::Iterator || la.kind == ListKind::View) return &la == &lb;
      return list_equals(la, lb, depth, budget);
    }
    case Value::Kind::Dict: {
      const Dict& da = a.as_dict();
      const Dict& db = b.as_dict();
      if (da.size() != db.size()) return false;
      for (size_t i = 0; i < da.size(); ++i) {
        const Value* other = db.find(da.entries()[i].first, da.hash_at(i));
        if (other == nullptr || !equals_at(da.entries()[i].second, *other, depth + 1, budget)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool list_equals(const ListData& a, const ListData& b, int depth, RenderBudget* budget) {
  if (a.items.size() != b.items.size()) return false;
  for (size_t i = 0; i < a.items.size(); ++i)
    if (!equals_at(a.items[i], b.items[i], depth + 1, budget)) return false;
  return true;
}

bool same_key(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  return equals_at(a, b, 0, nullptr);
}

// 2 means unordered (a NaN is involved): every ordering comparison is false.
int compare_at(const Value& a, const Value& b, std::string_view op, int depth, RenderBudget& budget) {
  if (depth > kMaxValueDepth + 2) fail("values nested too deeply to compare");
  budget.charge_work(1);
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
    budget.charge_scan(std::min(a.as_string().size(), b.as_string().size()));
    // UTF-8 byte order is code point order.
    const int r = a.as_string().compare(b.as_string());
    return r < 0 ? -1 : r > 0 ? 1 : 0;
  }
  if (a.is_sequence_list() && b.is_sequence_list() && a.as_list().kind == b.as_list().kind) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals_at(x[i], y[i], depth + 1, &budget)) return compare_at(x[i], y[i], op, depth + 1, budget);
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("'", op, "' not supported between instances of '", type_name(a), "' and '", type_name(b), "'");
}

// splitmix64's finalizer: spreads the bits of an integer over the whole hash.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hash_at(const Value& v, int depth, RenderBudget& budget) {
  if (depth > kMaxValueDepth + 2) fail("value nested too deeply to hash");
  budget.charge_work(1);
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0x5bd1e995;
    case Value::Kind::None: return 0x27d4eb2f;
    case Value::Kind::Bool:
    case Value::Kind::Int: return mix(static_cast<uint64_t>(v.to_int()));
    case Value::Kind::Float: {
      // Floats equal to an int hash as that int (1.0 == 1).
      const double f = v.as_float();
      if (std::isfinite(f) && f == std::trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0)
        return mix(static_cast<uint64_t>(static_cast<int64_t>(f)));
      uint64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return mix(bits ^ 0x9e3779b97f4a7c15ULL);
    }
    case Value::Kind::String:
      budget.charge_scan(v.as_string().size());
      return hash_string(v.as_string());
    case Value::Kind::List: {
      const ListData& l = v.as_list();
      if (l.kind == ListKind::List) break;
      if (l.kind != ListKind::Tuple) return mix(reinterpret_cast<uintptr_t>(&l));
      uint64_t h = mix(l.items.size() + 0x345678);
      for (const Value& item : l.items) h = mix(h ^ hash_at(item, depth + 1, budget));
      return h;
    }
    case Value::Kind::Dict: break;
    default: return mix(reinterpret_cast<uintptr_t>(v.identity()));
  }
  fail("unhashable type: '", type_name(v), "'");
}

}  // namespace

std::string to_str(const Value& v, RenderBudget& budget) {
  if (v.is_string()) {
    budget.charge_string(v.as_string().size());
    return v.as_string();
  }
  std::string out;
  append_str(out, v, budget);
  return out;
}

void append_str(std::string& out, const Value& v, RenderBudget& budget) {
  const size_t before = out.size();
  Printer(out, budget.limits().max_string_bytes, &budget).print(v, false, 0);
  budget.charge_append(out.size(), out.size() - before);
}

std::string repr(const Value& v, RenderBudget& budget) {
  std::string out;
  Printer(out, budget.limits().max_string_bytes, &budget).print(v, true, 0);
  budget.charge_string(out.size());
  return out;
}

std::string repr_for_message(const Value& v, size_t max_bytes) {
  std::string out;
  Printer(out, max_bytes, nullptr).print(v, true, 0);
  return out;
}

bool equals(const Value& a, const Value& b, RenderBudget& budget) { return equals_at(a, b, 0, &budget); }

int compare(const Value& a, const Value& b, std::string_view op, RenderBudget& budget) {
  return compare_at(a, b, op, 0, budget);
}

int64_t length(const Value& v, RenderBudget& budget) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String:
      budget.charge_scan(v.as_string().size());
      return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Kind::List:
      if (v.as_list().kind == ListKind::Iterator) break;
      return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().size());
    default: break;
  }
  fail("object of type '", type_name(v), "' has no len()");
}

std::vector<Value> iterate(const Value& v, RenderBudget& budget) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List:
      budget.charge_list(v.as_list().items.size());
      return v.as_list().items;
    case Value::Kind::Dict: {
      budget.charge_list(v.as_dict().size());
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::String: {
      const std::string& s = v.as_string();
      budget.charge_scan(s.size());
      budget.charge_list(code_point_count(s));
      std::vector<Value> chars;
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        next_code_point(s, i);
        budget.charge_string(i - start);
        chars.push_back(Value::string(s.substr(start, i - start)));
      }
      return chars;
    }
    default: break;
  }
  fail("'", type_name(v), "' object is not iterable");
}

uint64_t hash_value(const Value& key, RenderBudget& budget) { return hash_at(key, 0, budget); }

uint64_t hash_string(std::string_view s) { return mix(std::hash<std::string_view>{}(s)); }

}  // namespace glass::jinja
