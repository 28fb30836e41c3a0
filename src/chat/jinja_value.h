// The values a Jinja template computes with, and the Python semantics templates rely on:
// truthiness, str() and repr(), equality and ordering, iteration and len().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.h"
#include "chat/jinja_budget.h"

namespace glass::jinja {

class Value;
class Interpreter;

// Deeper values are refused when built, so every recursive walk over a value (and its
// destruction) is bounded. Mutable objects (namespaces, loops) count as one level: the
// render keeps them until it ends and then empties them one by one, so releasing what they
// hold never recurses into another of them.
inline constexpr int kMaxValueDepth = 200;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

// A list, a tuple, what Python would hand back as a one-shot iterator (the results of
// `select`, `map`, `reverse`, the `items` filter: always true, no len(), not
// subscriptable), or a dict view (dict.items(), .keys(), .values(): len() and truth by
// size, not subscriptable).
enum class ListKind : uint8_t { List, Tuple, Iterator, View };

struct ListData {
  std::vector<Value> items;
  ListKind kind = ListKind::List;
  std::string iterator_type;  // Python's type name for iterators and views, e.g. "generator"
};

// An insertion-ordered dict with Python key equality (1 == 1.0 == True), found by hash:
// building one of n entries costs O(n), not O(n^2). `hash` arguments are hash_value(key).
class Dict {
 public:
  const Value* find(const Value& key, uint64_t hash) const;
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place (keeping its position), else appends.
  void set(Value key, uint64_t hash, Value value);
  void set(std::string_view key, Value value);
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  uint64_t hash_at(size_t i) const { return hashes_[i]; }
  size_t size() const;  // defined below Value: clang needs the complete type here

 private:
  struct Prehashed {
    size_t operator()(uint64_t h) const { return static_cast<size_t>(h); }
  };
  std::optional<size_t> position(const Value& key, uint64_t hash) const;
  std::optional<size_t> position(std::string_view key, uint64_t hash) const;

  std::vector<std::pair<Value, Value>> entries_;
  std::vector<uint64_t> hashes_;
  // Hash -> position in entries_, once the dict is too large to scan.
  std::unordered_multimap<uint64_t, size_t, Prehashed> index_;
};

// Objects with attributes only: namespace() (assignable with `set ns.x = ...`) and the
// `loop` variable of a for loop.
enum class ObjectKind : uint8_t { Namespace, Loop };

// One per run of a for loop, advanced as it iterates, as Jinja2's LoopContext is.
struct LoopState {
  std::vector<Value> items;
  size_t index = 0;
  int depth0 = 0;
  std::shared_ptr<std::vector<Value>> last_changed;  // what loop.changed() saw last
  NativeFunction recurse;  // `loop(items)` in a recursive loop; empty otherwise
};

struct ObjectData {
  ObjectKind kind;
  Dict attributes;                  // Namespace
  std::shared_ptr<LoopState> loop;  // Loop
};

struct Callable {
  std::string name;
  std::string type_name;  // Python's type name: "function", "Macro", "builtin_function_or_method"
  NativeFunction invoke;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object, Callable };

  Value() = default;  // undefined
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(std::vector<Value> items, ListKind kind = ListKind::List, std::string iterator_type = {});
  static Value tuple(std::vector<Value> items) { return list(std::move(items), ListKind::Tuple); }
  static Value dict(Dict d);
  static Value object(std::shared_ptr<ObjectData> o);
  // `depth`: 1 + the depth of a value the function holds (a bound method's object), so
  // that chains of them are bounded like nested lists; 0 for one that holds none.
  static Value callable(std::string name, std::string type_name, NativeFunction fn, int depth = 0);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  // int, float or bool: Python's numbers.Number.
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_object() const { return kind() == Kind::Object; }
  bool is_callable() const { return kind() == Kind::Callable; }
  bool is_namespace() const { return is_object() && as_object().kind == ObjectKind::Namespace; }
  // A list or a tuple (not an iterator or view).
  bool is_sequence_list() const {
    return is_list() && (as_list().kind == ListKind::List || as_list().kind == ListKind::Tuple);
  }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  const std::string& as_string() const { return *std::get<StringPtr>(data_); }
  const ListData& as_list() const { return *std::get<ListPtr>(data_); }
  const Dict& as_dict() const { return *std::get<DictPtr>(data_); }
  ObjectData& as_object() const { return *std::get<ObjectPtr>(data_); }
  const Callable& as_callable() const { return *std::get<CallablePtr>(data_); }
  // An int, float or bool as a double / an int or bool as an int.
  double to_double() const;
  int64_t to_int() const;

  // What using this undefined value reports, e.g. "'foo' is undefined".
  const std::string& undefined_hint() const;
  // Nesting depth: 0 for scalars, 1 + the deepest item for lists and dicts.
  int depth() const;
  // Same object (Python `is`) for lists, dicts, objects and callables.
  const void* identity() const;

 private:
  struct UndefinedData {
    std::shared_ptr<const std::string> hint;
  };
  struct NoneData {};
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const Dict>;
  using ObjectPtr = std::shared_ptr<ObjectData>;
  using CallablePtr = std::shared_ptr<const Callable>;

  std::variant<UndefinedData, NoneData, bool, int64_t, double, StringPtr, ListPtr, DictPtr, ObjectPtr, CallablePtr>
      data_;
  int depth_ = 0;
};

inline size_t Dict::size() const { return entries_.size(); }

// Python's type name, for error messages: "str", "int", "list", "dict", "NoneType"...
std::string type_name(const Value& v);

// The error raised by using an undefined value where a defined one is needed.
[[noreturn]] void fail_undefined(const Value& v);

bool truthy(const Value& v);

// str(v) as Python prints it (undefined prints as nothing); repr(v). The text is a new
// string, charged to `budget`; building one longer than the string budget fails part way.
std::string to_str(const Value& v, RenderBudget& budget);
void append_str(std::string& out, const Value& v, RenderBudget& budget);
std::string repr(const Value& v, RenderBudget& budget);
// repr(v) cut after about `max_bytes` bytes (ending in "..."), for error messages and the
// hints of undefined values: it costs O(max_bytes) whatever the value.
std::string repr_for_message(const Value& v, size_t max_bytes = 200);

// repr(float): the shortest round-tripping digits, exponent form below 1e-4 and from 1e16.
std::string python_float_repr(double d);
// repr(str): single quotes unless the text has ' and no ".
void append_string_repr(std::string& out, std::string_view s);
// The same, stopping once `out` is longer than `max_bytes`: false if it stopped.
bool append_string_repr(std::string& out, std::string_view s, size_t max_bytes);

// Python ==. Undefined equals undefined only. Charges a step per item compared.
bool equals(const Value& a, const Value& b, RenderBudget& budget);
// Python <, <=, >, >= between numbers, strings, or lists/tuples; otherwise TypeError
// naming `op`. Returns <0, 0 or >0.
int compare(const Value& a, const Value& b, std::string_view op, RenderBudget& budget);

// len(v) for strings (code points), lists, tuples, dicts; undefined has length 0.
int64_t length(const Value& v, RenderBudget& budget);
// The items iterating over `v` yields: list items, dict keys, string characters;
// undefined yields nothing. The copy is charged to `budget` before it is made.
std::vector<Value> iterate(const Value& v, RenderBudget& budget);

// Python's hash, consistent with equals(): what may be a dict key (unhashable types fail
// as in Python). Tuples are walked, charging `budget`.
uint64_t hash_value(const Value& key, RenderBudget& budget);
uint64_t hash_string(std::string_view s);

}  // namespace glass::jinja
