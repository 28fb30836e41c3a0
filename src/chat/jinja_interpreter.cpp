#include "chat/jinja_interpreter.h"

#include <cmath>
#include <limits>

#include "chat/jinja_builtins.h"
#include "chat/jinja_format.h"
#include "chat/jinja_text.h"

namespace glass::jinja {

namespace {

// An error that already names its template location; outer nodes pass it on unchanged.
class LocatedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '", type_name(b), "'");
}

[[noreturn]] void overflow() { fail("integer overflow: results beyond 64 bits are not supported"); }

bool integral(const Value& v) { return v.is_int() || v.is_bool(); }

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

Value int_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = checked_mul(result, base);
    exponent >>= 1;
    if (exponent > 0) base = checked_mul(base, base);
  }
  return Value::integer(result);
}

// Python's float divmod: the floor quotient and a remainder with the divisor's sign.
std::pair<double, double> float_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

// `size` * `n`, saturated (the budgets then refuse it).
uint64_t repeated_size(size_t size, int64_t n) {
  uint64_t total;
  if (__builtin_mul_overflow(static_cast<uint64_t>(size), static_cast<uint64_t>(n), &total)) return UINT64_MAX;
  return total;
}

Value repeat(const Value& seq, int64_t n, RenderBudget& budget) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    budget.charge_string(repeated_size(s.size(), n));
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const ListData& l = seq.as_list();
  budget.charge_list(repeated_size(l.items.size(), n));
  std::vector<Value> out;
  out.reserve(l.items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), l.items.begin(), l.items.end());
  return Value::list(std::move(out), l.kind);
}

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Subtract: return "-";
    case BinaryOp::Multiply: return "*";
    case BinaryOp::Divide: return "/";
    case BinaryOp::FloorDivide: return "//";
    case BinaryOp::Modulo: return "%";
    case BinaryOp::Power: return "** or pow()";
    case BinaryOp::Concat: return "~";
  }
  return "?";
}

}  // namespace

Value binary_operation(BinaryOp op, const Value& a, const Value& b, RenderBudget& budget) {
  if (op == BinaryOp::Concat) {
    std::string s = to_str(a, budget);
    append_str(s, b, budget);
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool numbers = a.is_number() && b.is_number();
  const bool ints = integral(a) && integral(b);
  switch (op) {
    case BinaryOp::Add:
      if (ints) return Value::integer(checked_add(a.to_int(), b.to_int()));
      if (numbers) return Value::number(a.to_double() + b.to_double());
      if (a.is_string() && b.is_string()) {
        budget.charge_string(uint64_t{a.as_string().size()} + b.as_string().size());
        return Value::string(a.as_string() + b.as_string());
      }
      if (a.is_sequence_list() && b.is_sequence_list() && a.as_list().kind == b.as_list().kind) {
        budget.charge_list(uint64_t{a.as_list().items.size()} + b.as_list().items.size());
        std::vector<Value> items;
        items.reserve(a.as_list().items.size() + b.as_list().items.size());
        items.insert(items.end(), a.as_list().items.begin(), a.as_list().items.end());
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::list(std::move(items), a.as_list().kind);
      }
      if (a.is_string() || a.is_sequence_list())
        fail("can only concatenate ", type_name(a), " (not \"", type_name(b), "\") to ", type_name(a));
      break;
    case BinaryOp::Subtract:
      if (ints) return Value::integer(checked_sub(a.to_int(), b.to_int()));
      if (numbers) return Value::number(a.to_double() - b.to_double());
      break;
    case BinaryOp::Multiply:
      if (ints) return Value::integer(checked_mul(a.to_int(), b.to_int()));
      if (numbers) return Value::number(a.to_double() * b.to_double());
      if ((a.is_string() || a.is_sequence_list()) && integral(b)) return repeat(a, b.to_int(), budget);
      if (integral(a) && (b.is_string() || b.is_sequence_list())) return repeat(b, a.to_int(), budget);
      if (a.is_string() || b.is_string()) fail("can't multiply sequence by non-int of type '", type_name(a.is_string() ? b : a), "'");
      break;
    case BinaryOp::Divide:
      if (numbers) {
        if (b.to_double() == 0) fail("division by zero");
        return Value::number(a.to_double() / b.to_double());
      }
      break;
    case BinaryOp::FloorDivide:
      if (ints) {
        const int64_t x = a.to_int(), y = b.to_int();
        if (y == 0) fail("integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::integer(q);
      }
      if (numbers) {
        if (b.to_double() == 0) fail("float floor division by zero");
        return Value::number(float_divmod(a.to_double(), b.to_double()).first);
      }
      break;
    case BinaryOp::Modulo:
      if (a.is_string()) return Value::string(python_percent_format(a.as_string(), b, budget));
      if (ints) {
        const int64_t x = a.to_int(), y = b.to_int();
        if (y == 0) fail("integer division or modulo by zero");
        if (y == -1) return Value::integer(0);
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::integer(r);
      }
      if (numbers) {
        if (b.to_double() == 0) fail("float modulo");
        return Value::number(float_divmod(a.to_double(), b.to_double()).second);
      }
      break;
    case BinaryOp::Power:
      if (ints && b.to_int() >= 0) return int_power(a.to_int(), b.to_int());
      if (numbers) {
        const double x = a.to_double(), y = b.to_double();
        if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
        return Value::number(std::pow(x, y));
      }
      break;
    case BinaryOp::Concat: break;
  }
  unsupported(op_symbol(op), a, b);
}

bool contains(const Value& container, const Value& item, RenderBudget& budget) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (item.is_undefined()) fail_undefined(item);
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not ", type_name(item));
      budget.charge_scan(container.as_string().size());
      return find_text(container.as_string(), item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list().items)
        if (equals(v, item, budget)) return true;
      return false;
    case Value::Kind::Dict: return container.as_dict().find(item, hash_value(item, budget)) != nullptr;
    default: fail("argument of type '", type_name(container), "' is not iterable");
  }
}

// ---- scopes ---------------------------------------------------------------------

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get())
    for (auto it = s->vars_.rbegin(); it != s->vars_.rend(); ++it)
      if (it->first == name) return &it->second;
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [n, v] : vars_) {
    if (n == name) {
      v = std::move(value);
      return;
    }
  }
  vars_.emplace_back(name, std::move(value));
}

// ---- interpreter ----------------------------------------------------------------

Interpreter::Interpreter(const Source& source, const RenderOptions& options)
    : source_(source), options_(options), budget_(options.limits) {}

Interpreter::~Interpreter() {
  // Macros hold the scope they were defined in, and that scope holds them; namespaces can
  // hold themselves. Emptying both breaks every such cycle. The objects are emptied in the
  // order they were made, so what one releases was made before it and is empty already.
  for (auto& weak : closure_scopes_)
    if (auto scope = weak.lock()) scope->clear();
  for (auto& object : objects_) {
    object->attributes = Dict();
    if (object->loop) {
      object->loop->items.clear();
      object->loop->last_changed.reset();
      object->loop->recurse = nullptr;
    }
  }
  objects_.clear();
}

std::string Interpreter::render(const Body& body, const ScopePtr& scope) {
  std::string out;
  out_ = rendered_ = &out;
  exec_body(body, scope);
  out_ = rendered_ = nullptr;
  if (options_.usage != nullptr) *options_.usage = budget_.usage();
  return out;
}

std::tm Interpreter::now() const {
  if (options_.now) return options_.now();
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  return local;
}

Value Interpreter::keep_object(std::shared_ptr<ObjectData> object) {
  budget_.charge_object();
  objects_.push_back(object);
  return Value::object(std::move(object));
}

Value Interpreter::make_namespace(Dict attributes) {
  return keep_object(std::make_shared<ObjectData>(ObjectData{ObjectKind::Namespace, std::move(attributes), nullptr}));
}

void Interpreter::fail_located(size_t offset, const std::string& message) const {
  try {
    fail_at(source_, offset, message);
  } catch (const Error& e) {
    throw LocatedError(e.what());
  }
}

void Interpreter::emit(std::string_view text) {
  const uint64_t total = uint64_t{out_->size()} + text.size();
  // The output, or a string being captured (a macro's, a block's).
  if (out_ == rendered_) budget_.check_output(total);
  else budget_.charge_append(total, text.size());
  out_->append(text);
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  struct Restore {
    std::string*& slot;
    std::string* value;
    ~Restore() { slot = value; }
  } restore{out_, saved};
  exec_body(body, scope);
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const Stmt& stmt : body) {
    const Flow flow = exec(stmt, scope);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, const ScopePtr& scope) {
  try {
    RecursionGuard guard(budget_);
    budget_.charge_work(1);
    return std::visit([&](const auto& node) { return exec_node(node, stmt, scope); }, stmt.node);
  } catch (const LocatedError&) {
    throw;
  } catch (const Error& e) {
    fail_located(stmt.offset, e.what());
  }
}

Interpreter::Flow Interpreter::exec_node(const TextStmt& s, const Stmt&, const ScopePtr&) {
  emit(s.text);
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const OutputStmt& s, const Stmt&, const ScopePtr& scope) {
  const Value v = eval(*s.expr, scope);
  if (v.is_string()) emit(v.as_string());
  else emit(to_str(v, budget_));
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const IfStmt& s, const Stmt&, const ScopePtr& scope) {
  for (const IfBranch& branch : s.branches)
    if (truthy(eval(*branch.condition, scope))) return exec_body(branch.body, scope);
  return exec_body(s.otherwise, scope);
}

Interpreter::Flow Interpreter::exec_node(const ForStmt& s, const Stmt&, const ScopePtr& scope) {
  const Value iterable = eval(*s.iterable, scope);
  std::vector<Value> items = iterate(iterable, budget_);
  if (s.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      budget_.charge_work(1);
      auto test_scope = std::make_shared<Scope>(scope);
      assign(s.target, item, test_scope);
      if (truthy(eval(*s.filter, test_scope))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.otherwise, scope);
  run_loop(s, std::move(items), scope, 0);
  return Flow::Normal;
}

void Interpreter::run_loop(const ForStmt& s, std::vector<Value> items, const ScopePtr& scope, int depth0) {
  auto state = std::make_shared<LoopState>();
  state->items = std::move(items);
  state->depth0 = depth0;
  if (s.recursive) {
    // loop(children) renders this loop's body over the children, one level deeper.
    const ForStmt* stmt = &s;
    ScopePtr outer = scope;
    state->recurse = [stmt, outer, depth0](Interpreter& interp, CallArgs& args) {
      if (args.positional.size() != 1 || !args.keyword.empty()) fail("loop() takes exactly one argument");
      const int max_depth = interp.budget_.limits().max_call_depth;
      if (++interp.call_depth_ > max_depth) {
        --interp.call_depth_;
        fail("recursive loop nested more than ", max_depth, " levels deep (the call depth budget)");
      }
      interp.budget_.note_call_depth(interp.call_depth_);
      std::string buffer;
      std::string* saved = interp.out_;
      interp.out_ = &buffer;
      try {
        std::vector<Value> children = iterate(args.positional[0], interp.budget_);
        if (!children.empty()) interp.run_loop(*stmt, std::move(children), outer, depth0 + 1);
      } catch (...) {
        interp.out_ = saved;
        --interp.call_depth_;
        throw;
      }
      interp.out_ = saved;
      --interp.call_depth_;
      return Value::string(std::move(buffer));
    };
  }
  const Value loop = keep_object(std::make_shared<ObjectData>(ObjectData{ObjectKind::Loop, Dict(), state}));
  for (size_t i = 0; i < state->items.size(); ++i) {
    budget_.charge_work(1);
    state->index = i;
    auto iteration = std::make_shared<Scope>(scope);
    assign(s.target, state->items[i], iteration);
    iteration->set("loop", loop);
    if (exec_body(s.body, iteration) == Flow::Break) break;
  }
}

void Interpreter::assign(const Target& target, const Value& value, const ScopePtr& scope) {
  switch (target.kind) {
    case Target::Kind::Name: scope->set(target.name, value); return;
    case Target::Kind::Tuple: {
      const std::vector<Value> items = iterate(value, budget_);
      if (items.size() > target.items.size())
        fail("too many values to unpack (expected ", target.items.size(), ")");
      if (items.size() < target.items.size())
        fail("not enough values to unpack (expected ", target.items.size(), ", got ", items.size(), ")");
      for (size_t i = 0; i < items.size(); ++i) assign(target.items[i], items[i], scope);
      return;
    }
    case Target::Kind::NamespaceAttribute: {
      const Value* ns = scope->find(target.name);
      if (ns == nullptr || !ns->is_namespace()) fail("cannot assign attribute on non-namespace object");
      ns->as_object().attributes.set(std::string_view(target.attribute), value);
      return;
    }
  }
}

Interpreter::Flow Interpreter::exec_node(const SetStmt& s, const Stmt&, const ScopePtr& scope) {
  assign(s.target, eval(*s.value, scope), scope);
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const SetBlockStmt& s, const Stmt&, const ScopePtr& scope) {
  Value value = Value::string(capture(s.body, std::make_shared<Scope>(scope)));
  if (s.filter) value = filter_with_input(*s.filter, value, scope);
  assign(s.target, value, scope);
  return Flow::Normal;
}

Value Interpreter::make_macro(const std::shared_ptr<const MacroDefinition>& macro, const ScopePtr& scope) {
  closure_scopes_.push_back(scope);
  return Value::callable(macro->name, "Macro", [macro, scope](Interpreter& interp, CallArgs& args) {
    return interp.call_macro(*macro, scope, args);
  });
}

Interpreter::Flow Interpreter::exec_node(const MacroStmt& s, const Stmt&, const ScopePtr& scope) {
  scope->set(s.macro->name, make_macro(s.macro, scope));
  return Flow::Normal;
}

Value Interpreter::call_macro(const MacroDefinition& macro, const ScopePtr& closure, CallArgs& args) {
  budget_.charge_work(1);
  const int max_depth = budget_.limits().max_call_depth;
  if (call_depth_ >= max_depth)
    fail("macro '", macro.name, "' nested more than ", max_depth, " calls deep (the call depth budget)");
  auto scope = std::make_shared<Scope>(closure);
  const size_t n = macro.params.size();
  std::vector<bool> bound(n, false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n) {
      scope->set(macro.params[i].name, std::move(args.positional[i]));
      bound[i] = true;
    } else if (macro.uses_varargs) {
      extra.push_back(std::move(args.positional[i]));
    } else {
      fail("macro '", macro.name, "' takes not more than ", n, " argument(s)");
    }
  }
  Dict kwargs;
  bool caller_given = false;
  for (auto& [name, value] : args.keyword) {
    size_t p = 0;
    while (p < n && macro.params[p].name != name) ++p;
    if (p < n) {
      if (bound[p]) fail("macro '", macro.name, "' got multiple values for argument '", name, "'");
      scope->set(name, std::move(value));
      bound[p] = true;
    } else if (name == "caller" && macro.uses_caller) {
      scope->set("caller", std::move(value));
      caller_given = true;
    } else if (macro.uses_kwargs) {
      budget_.charge_dict(1);
      kwargs.set(std::string_view(name), std::move(value));
    } else {
      fail("macro '", macro.name, "' takes no keyword argument '", name, "'");
    }
  }
  // Defaults are evaluated in the macro's scope, so they can use earlier parameters.
  for (size_t p = 0; p < n; ++p) {
    if (bound[p]) continue;
    const MacroParam& param = macro.params[p];
    scope->set(param.name, param.default_value ? eval(*param.default_value, scope)
                                               : Value::undefined("parameter '" + param.name + "' was not provided"));
  }
  if (macro.uses_varargs) scope->set("varargs", Value::tuple(std::move(extra)));
  if (macro.uses_kwargs) scope->set("kwargs", Value::dict(std::move(kwargs)));
  if (macro.uses_caller && !caller_given) scope->set("caller", Value::undefined("'caller' is undefined"));
  budget_.note_call_depth(++call_depth_);
  struct Depth {
    int& depth;
    ~Depth() { --depth; }
  } depth{call_depth_};
  return Value::string(capture(macro.body, scope));
}

Interpreter::Flow Interpreter::exec_node(const CallBlockStmt& s, const Stmt&, const ScopePtr& scope) {
  const auto& call = std::get<CallExpr>(s.call->node);
  Value callee = eval(*call.callee, scope);
  CallArgs args = eval_args(call.args, scope);
  args.keyword.emplace_back("caller", make_macro(s.caller, scope));
  try {
    const Value result = this->call(callee, args);
    emit(to_str(result, budget_));
  } catch (const LocatedError&) {
    throw;
  } catch (const Error& e) {
    fail_located(s.call->offset, e.what());
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const FilterBlockStmt& s, const Stmt&, const ScopePtr& scope) {
  const Value body = Value::string(capture(s.body, std::make_shared<Scope>(scope)));
  emit(to_str(filter_with_input(*s.filter, body, scope), budget_));
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const WithStmt& s, const Stmt&, const ScopePtr& scope) {
  std::vector<Value> values;
  for (const auto& [target, expr] : s.assignments) values.push_back(eval(*expr, scope));
  auto inner = std::make_shared<Scope>(scope);
  for (size_t i = 0; i < values.size(); ++i) assign(s.assignments[i].first, values[i], inner);
  return exec_body(s.body, inner);
}

Interpreter::Flow Interpreter::exec_node(const LoopControlStmt& s, const Stmt&, const ScopePtr&) {
  return s.is_break ? Flow::Break : Flow::Continue;
}

// ---- expressions ----------------------------------------------------------------

Value Interpreter::eval(const Expr& expr, const ScopePtr& scope) {
  try {
    RecursionGuard guard(budget_);
    budget_.charge_work(1);
    return std::visit([&](const auto& node) { return eval_node(node, expr, scope); }, expr.node);
  } catch (const LocatedError&) {
    throw;
  } catch (const Error& e) {
    fail_located(expr.offset, e.what());
  }
}

Value Interpreter::eval_node(const ConstExpr& e, const Expr&, const ScopePtr&) { return e.value; }

Value Interpreter::eval_node(const NameExpr& e, const Expr&, const ScopePtr& scope) {
  if (const Value* v = scope->find(e.name)) return *v;
  return Value::undefined("'" + e.name + "' is undefined");
}

Value Interpreter::eval_node(const ListExpr& e, const Expr&, const ScopePtr& scope) {
  budget_.charge_list(e.items.size());
  std::vector<Value> items;
  items.reserve(e.items.size());
  for (const auto& item : e.items) items.push_back(eval(*item, scope));
  return Value::list(std::move(items), e.tuple ? ListKind::Tuple : ListKind::List);
}

Value Interpreter::eval_node(const DictExpr& e, const Expr&, const ScopePtr& scope) {
  budget_.charge_dict(e.items.size());
  Dict d;
  for (const auto& [key_expr, value_expr] : e.items) {
    Value key = eval(*key_expr, scope);
    const uint64_t hash = hash_value(key, budget_);
    d.set(std::move(key), hash, eval(*value_expr, scope));
  }
  return Value::dict(std::move(d));
}

Value Interpreter::eval_node(const AttributeExpr& e, const Expr&, const ScopePtr& scope) {
  const Value object = eval(*e.object, scope);
  if (object.is_undefined()) fail_undefined(object);
  return get_attribute(object, e.attribute, budget_);
}

Value Interpreter::eval_node(const ItemExpr& e, const Expr&, const ScopePtr& scope) {
  const Value object = eval(*e.object, scope);
  const Value key = eval(*e.key, scope);
  if (object.is_undefined()) fail_undefined(object);
  return get_item(object, key, budget_);
}

Value Interpreter::eval_node(const SliceExpr& e, const Expr&, const ScopePtr& scope) {
  const Value object = eval(*e.object, scope);
  const Value start = e.start ? eval(*e.start, scope) : Value::none();
  const Value stop = e.stop ? eval(*e.stop, scope) : Value::none();
  const Value step = e.step ? eval(*e.step, scope) : Value::none();
  if (object.is_undefined()) fail_undefined(object);
  return get_slice(object, start, stop, step, budget_);
}

CallArgs Interpreter::eval_args(const CallArguments& args, const ScopePtr& scope) {
  CallArgs out;
  for (const auto& a : args.positional) out.positional.push_back(eval(*a, scope));
  for (const auto& [name, a] : args.keyword) out.keyword.emplace_back(name, eval(*a, scope));
  if (args.star_args) {
    std::vector<Value> star = iterate(eval(*args.star_args, scope), budget_);
    budget_.charge_list(out.positional.size() + star.size());
    for (Value& v : star) out.positional.push_back(std::move(v));
  }
  if (args.star_kwargs) {
    const Value kw = eval(*args.star_kwargs, scope);
    if (!kw.is_dict()) fail("argument after ** must be a mapping, not ", type_name(kw));
    budget_.charge_list(out.keyword.size() + kw.as_dict().size());
    for (const auto& [key, value] : kw.as_dict().entries()) {
      if (!key.is_string()) fail("keywords must be strings");
      out.keyword.emplace_back(key.as_string(), value);
    }
  }
  return out;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.as_callable().invoke(*this, args);
  if (callee.is_object() && callee.as_object().loop && callee.as_object().loop->recurse)
    return callee.as_object().loop->recurse(*this, args);
  if (callee.is_undefined()) fail_undefined(callee);
  fail("'", type_name(callee), "' object is not callable");
}

Value Interpreter::eval_node(const CallExpr& e, const Expr&, const ScopePtr& scope) {
  const Value callee = eval(*e.callee, scope);
  CallArgs args = eval_args(e.args, scope);
  return call(callee, args);
}

Value Interpreter::filter_with_input(const Expr& filter, const Value& input, const ScopePtr& scope) {
  const Value* saved = filter_input_;
  filter_input_ = &input;
  struct Restore {
    const Value*& slot;
    const Value* value;
    ~Restore() { slot = value; }
  } restore{filter_input_, saved};
  return eval(filter, scope);
}

Value Interpreter::eval_node(const FilterExpr& e, const Expr&, const ScopePtr& scope) {
  Value operand;
  if (e.operand) {
    operand = eval(*e.operand, scope);
  } else {
    if (filter_input_ == nullptr) fail("filter '", e.name, "' has nothing to apply to");
    operand = *filter_input_;
  }
  const FilterFunction f = e.known ? find_filter(e.name) : nullptr;
  if (f == nullptr) fail("no filter named '", e.name, "'");
  const CallArgs args = eval_args(e.args, scope);
  return f(*this, operand, args);
}

Value Interpreter::eval_node(const TestExpr& e, const Expr&, const ScopePtr& scope) {
  const Value operand = eval(*e.operand, scope);
  const TestFunction t = e.known ? find_test(e.name) : nullptr;
  if (t == nullptr) fail("no test named '", e.name, "'");
  const CallArgs args = eval_args(e.args, scope);
  return Value::boolean(t(*this, operand, args) != e.negated);
}

Value Interpreter::eval_node(const UnaryExpr& e, const Expr&, const ScopePtr& scope) {
  const Value v = eval(*e.operand, scope);
  if (e.op == UnaryOp::Not) return Value::boolean(!truthy(v));
  if (v.is_undefined()) fail_undefined(v);
  const bool negate = e.op == UnaryOp::Negate;
  if (integral(v)) {
    const int64_t i = v.to_int();
    if (negate && i == std::numeric_limits<int64_t>::min()) overflow();
    return Value::integer(negate ? -i : i);
  }
  if (v.is_float()) return Value::number(negate ? -v.as_float() : v.as_float());
  fail("bad operand type for unary ", negate ? "-" : "+", ": '", type_name(v), "'");
}

Value Interpreter::eval_node(const BinaryChainExpr& e, const Expr&, const ScopePtr& scope) {
  Value acc = eval(*e.first, scope);
  for (const BinaryOperand& operand : e.rest) {
    const Value rhs = eval(*operand.value, scope);
    try {
      acc = binary_operation(operand.op, acc, rhs, budget_);
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& err) {
      fail_located(operand.offset, err.what());
    }
  }
  return acc;
}

Value Interpreter::eval_node(const LogicalExpr& e, const Expr&, const ScopePtr& scope) {
  Value v;
  for (const auto& operand : e.operands) {
    v = eval(*operand, scope);
    if (truthy(v) != e.is_and) return v;
  }
  return v;
}

Value Interpreter::eval_node(const CompareExpr& e, const Expr&, const ScopePtr& scope) {
  Value left = eval(*e.first, scope);
  for (const CompareOperand& operand : e.rest) {
    Value right = eval(*operand.value, scope);
    bool ok;
    try {
      switch (operand.op) {
        case CompareOp::Equal: ok = equals(left, right, budget_); break;
        case CompareOp::NotEqual: ok = !equals(left, right, budget_); break;
        case CompareOp::In: ok = contains(right, left, budget_); break;
        case CompareOp::NotIn: ok = !contains(right, left, budget_); break;
        case CompareOp::Less: ok = compare(left, right, "<", budget_) == -1; break;
        case CompareOp::LessEqual: {
          const int c = compare(left, right, "<=", budget_);
          ok = c == -1 || c == 0;
          break;
        }
        case CompareOp::Greater: ok = compare(left, right, ">", budget_) == 1; break;
        case CompareOp::GreaterEqual: {
          const int c = compare(left, right, ">=", budget_);
          ok = c == 1 || c == 0;
          break;
        }
        default: ok = false;
      }
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& err) {
      fail_located(operand.offset, err.what());
    }
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval_node(const ConditionalExpr& e, const Expr&, const ScopePtr& scope) {
  if (truthy(eval(*e.condition, scope))) return eval(*e.then_value, scope);
  if (e.else_value) return eval(*e.else_value, scope);
  return Value::undefined("the inline if-expression evaluated to false and has no else section");
}

}  // namespace glass::jinja
