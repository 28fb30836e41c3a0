// The parsed form of a template: expressions and statements, each with the byte offset
// of its source so that errors can name a line and column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "chat/jinja_value.h"

namespace glass::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using Body = std::vector<Stmt>;

struct CallArguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // *args
  ExprPtr star_kwargs;  // **kwargs
};

struct ConstExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;
  bool tuple = false;
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct AttributeExpr {
  ExprPtr object;
  std::string attribute;
};
struct ItemExpr {
  ExprPtr object;
  ExprPtr key;
};
struct SliceExpr {
  ExprPtr object;
  ExprPtr start, stop, step;  // null when omitted
};
struct CallExpr {
  ExprPtr callee;
  CallArguments args;
};
// `operand | name(args)`. Inside `{% filter %}` and `{% set x | f %}` the innermost
// operand is null and stands for the block's output.
struct FilterExpr {
  ExprPtr operand;
  std::string name;
  CallArguments args;
  bool known = true;  // false: no such filter; an error when evaluated (see the parser)
};
struct TestExpr {
  ExprPtr operand;
  std::string name;
  CallArguments args;
  bool negated = false;
  bool known = true;
};
enum class UnaryOp : uint8_t { Negate, Plus, Not };
struct UnaryExpr {
  UnaryOp op;
  ExprPtr operand;
};
enum class BinaryOp : uint8_t { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power, Concat };
struct BinaryOperand {
  BinaryOp op;
  size_t offset;
  ExprPtr value;
};
// first op1 v1 op2 v2 ..., left-associative; a chain, so long sums do not nest.
struct BinaryChainExpr {
  ExprPtr first;
  std::vector<BinaryOperand> rest;
};
struct LogicalExpr {
  bool is_and;
  std::vector<ExprPtr> operands;
};
enum class CompareOp : uint8_t { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, In, NotIn };
struct CompareOperand {
  CompareOp op;
  size_t offset;
  ExprPtr value;
};
// Python's chained comparison: a < b < c means a < b and b < c.
struct CompareExpr {
  ExprPtr first;
  std::vector<CompareOperand> rest;
};
struct ConditionalExpr {
  ExprPtr condition, then_value, else_value;  // else_value null: undefined
};

struct Expr {
  size_t offset = 0;
  int height = 1;  // 1 + the tallest operand; bounded so evaluation cannot recurse too deep
  std::variant<ConstExpr, NameExpr, ListExpr, DictExpr, AttributeExpr, ItemExpr, SliceExpr, CallExpr, FilterExpr,
               TestExpr, UnaryExpr, BinaryChainExpr, LogicalExpr, CompareExpr, ConditionalExpr>
      node;
};

// What `set`, `for` and `with` assign to: a name, a tuple of targets, or `ns.attr`.
struct Target {
  enum class Kind : uint8_t { Name, Tuple, NamespaceAttribute } kind = Kind::Name;
  size_t offset = 0;
  std::string name;       // Name; the namespace variable for NamespaceAttribute
  std::string attribute;  // NamespaceAttribute
  std::vector<Target> items;  // Tuple
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct MacroDefinition {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  // Whether the body refers to these, which decides what extra arguments it accepts.
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr expr;
};
struct IfBranch {
  ExprPtr condition;
  Body body;
};
struct IfStmt {
  std::vector<IfBranch> branches;
  Body otherwise;
};
struct ForStmt {
  Target target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`, may be null
  Body body;
  Body otherwise;  // {% else %}: runs when nothing was iterated
  bool recursive = false;
};
struct SetStmt {
  Target target;
  ExprPtr value;
};
struct SetBlockStmt {
  Target target;
  ExprPtr filter;  // may be null
  Body body;
};
struct MacroStmt {
  std::shared_ptr<const MacroDefinition> macro;
};
struct CallBlockStmt {
  ExprPtr call;  // a CallExpr
  std::shared_ptr<const MacroDefinition> caller;
};
struct FilterBlockStmt {
  ExprPtr filter;
  Body body;
};
struct WithStmt {
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};
struct LoopControlStmt {
  bool is_break;
};

struct Stmt {
  size_t offset = 0;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, SetBlockStmt, MacroStmt, CallBlockStmt, FilterBlockStmt,
               WithStmt, LoopControlStmt>
      node;
};

}  // namespace glass::jinja
