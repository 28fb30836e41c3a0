// Renders parsed templates: scopes, statements, expressions, macros and loops, with
// Jinja2's semantics (per-iteration loop scopes, macros that see their defining scope).
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"

namespace glass::jinja {

struct RenderOptions {
  // What strftime_now() formats; local time when empty.
  std::function<std::tm()> now;
  // What one render may spend (jinja_budget.h); exceeding a budget is an error that
  // names the template line and the budget.
  RenderLimits limits;
  // When set, receives what a render that succeeds spent against each budget.
  RenderUsage* usage = nullptr;
};

class Scope;
using ScopePtr = std::shared_ptr<Scope>;

// Variables of one frame; lookups continue in the parent.
class Scope {
 public:
  explicit Scope(ScopePtr parent) : parent_(std::move(parent)) {}
  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value value);
  void clear() { vars_.clear(); }

 private:
  ScopePtr parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

class Interpreter {
 public:
  Interpreter(const Source& source, const RenderOptions& options);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const Body& body, const ScopePtr& scope);

  // Calls a callable value (builtins use this for macros passed to them).
  Value call(const Value& callee, CallArgs& args);
  std::tm now() const;
  // Namespaces can hold values that hold them; they are emptied when rendering ends.
  Value make_namespace(Dict attributes);
  // What this render may still spend; every built-in charges it.
  RenderBudget& budget() { return budget_; }

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, const ScopePtr& scope);
  Flow exec(const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const TextStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const OutputStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const IfStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const ForStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const SetStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const SetBlockStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const MacroStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const CallBlockStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const FilterBlockStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const WithStmt& s, const Stmt& stmt, const ScopePtr& scope);
  Flow exec_node(const LoopControlStmt& s, const Stmt& stmt, const ScopePtr& scope);

  void run_loop(const ForStmt& s, std::vector<Value> items, const ScopePtr& scope, int depth0);
  std::string capture(const Body& body, const ScopePtr& scope);
  void emit(std::string_view text);
  // Keeps a mutable object (namespace, loop) until the render ends, then empties it.
  Value keep_object(std::shared_ptr<ObjectData> object);
  void assign(const Target& target, const Value& value, const ScopePtr& scope);
  Value make_macro(const std::shared_ptr<const MacroDefinition>& macro, const ScopePtr& scope);
  Value call_macro(const MacroDefinition& macro, const ScopePtr& closure, CallArgs& args);

  Value eval(const Expr& expr, const ScopePtr& scope);
  Value eval_node(const ConstExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const NameExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const ListExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const DictExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const AttributeExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const ItemExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const SliceExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const CallExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const FilterExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const TestExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const UnaryExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const BinaryChainExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const LogicalExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const CompareExpr& e, const Expr& expr, const ScopePtr& scope);
  Value eval_node(const ConditionalExpr& e, const Expr& expr, const ScopePtr& scope);

  CallArgs eval_args(const CallArguments& args, const ScopePtr& scope);
  Value filter_with_input(const Expr& filter, const Value& input, const ScopePtr& scope);
  [[noreturn]] void fail_located(size_t offset, const std::string& message) const;

  const Source& source_;
  const RenderOptions& options_;
  RenderBudget budget_;
  std::string* out_ = nullptr;
  std::string* rendered_ = nullptr;     // the render's output (out_ may be a capture)
  const Value* filter_input_ = nullptr;  // what a filter without operand applies to
  int call_depth_ = 0;
  std::vector<std::weak_ptr<Scope>> closure_scopes_;
  // Namespaces and loops, held until the render ends: released one by one then, a chain
  // of them never unwinds recursively.
  std::vector<std::shared_ptr<ObjectData>> objects_;
};

// Binary operators with Python's semantics (+ on strings and lists, floor division,
// modulo with the divisor's sign, str % args, ...), the result charged to `budget`.
Value binary_operation(BinaryOp op, const Value& a, const Value& b, RenderBudget& budget);

// `item in container`.
bool contains(const Value& container, const Value& item, RenderBudget& budget);

}  // namespace glass::jinja
