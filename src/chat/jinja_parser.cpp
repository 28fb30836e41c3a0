#include "chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

#include "base/error.h"
#include "chat/jinja_builtins.h"

namespace glass::jinja {

namespace {

int height_of(const ExprPtr& e) { return e ? e->height : 0; }

int height_of(const CallArguments& args) {
  int h = std::max(height_of(args.star_args), height_of(args.star_kwargs));
  for (const auto& a : args.positional) h = std::max(h, height_of(a));
  for (const auto& [name, a] : args.keyword) h = std::max(h, height_of(a));
  return h;
}

struct OpenBlock {
  std::string tag;
  size_t offset;
  std::vector<std::string> ends;
};

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens) : src_(source), toks_(std::move(tokens)) {}

  Body parse() {
    Body body = parse_body({});
    return body;
  }

 private:
  // ---- token stream ------------------------------------------------------------
  const Token& cur() const { return toks_[i_]; }
  const Token& peek() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  static bool is_op(const Token& t, std::string_view op) { return t.kind == TokenKind::Operator && t.text == op; }
  static bool is_name(const Token& t, std::string_view name) { return t.kind == TokenKind::Name && t.text == name; }
  bool is_op(std::string_view op) const { return is_op(cur(), op); }
  bool is_name(std::string_view name) const { return is_name(cur(), name); }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::Text: return "template text";
      case TokenKind::VariableBegin: return "'{{'";
      case TokenKind::VariableEnd: return "'}}'";
      case TokenKind::BlockBegin: return "'{%'";
      case TokenKind::BlockEnd: return "'%}'";
      case TokenKind::Name:
      case TokenKind::Operator:
      case TokenKind::Integer:
      case TokenKind::Float: return "'" + t.text + "'";
      case TokenKind::String: return "a string";
      case TokenKind::End: return "the end of the template";
    }
    return "a token";
  }

  [[noreturn]] void error(size_t offset, const std::string& message) const { fail_at(src_, offset, message); }
  [[noreturn]] void unexpected(const std::string& expected) const {
    error(cur().offset, "expected " + expected + ", got " + describe(cur()));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name(const char* what = "a name") {
    if (cur().kind != TokenKind::Name) unexpected(what);
    std::string name = cur().text;
    advance();
    return name;
  }
  void expect_kind(TokenKind kind, const char* what) {
    if (cur().kind != kind) unexpected(what);
    advance();
  }

  // Bounds the parser's own recursion (brackets in brackets, blocks in blocks).
  class Nesting {
   public:
    Nesting(Parser& p, size_t offset) : p_(p) {
      if (++p_.nesting_ > kMaxNesting) p_.error(offset, str_cat("nested more than ", kMaxNesting, " levels deep"));
    }
    ~Nesting() { --p_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& p_;
  };

  template <class Node>
  ExprPtr make(size_t offset, int child_height, Node node) {
    auto e = std::make_unique<Expr>();
    e->offset = offset;
    e->height = child_height + 1;
    if (e->height > kMaxExpressionHeight)
      error(offset, str_cat("expression nested more than ", kMaxExpressionHeight, " levels deep"));
    e->node = std::move(node);
    return e;
  }

  // ---- statements --------------------------------------------------------------
  bool at_end_tag(const std::vector<std::string>& ends) const {
    if (cur().kind != TokenKind::Name) return false;
    return std::find(ends.begin(), ends.end(), cur().text) != ends.end();
  }

  // Parses until `{% <one of ends>`, leaving the stream at that name.
  Body parse_body(const std::vector<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.kind) {
        case TokenKind::End:
          if (!open_.empty()) {
            const OpenBlock& b = open_.back();
            const std::string closer = "end" + b.tag;
            error(b.offset, "'" + b.tag + "' is never closed: the template ends before '{% " + closer + " %}'");
          }
          return body;
        case TokenKind::Text: {
          Stmt s;
          s.offset = t.offset;
          s.node = TextStmt{t.text};
          body.push_back(std::move(s));
          advance();
          break;
        }
        case TokenKind::VariableBegin: {
          Stmt s;
          s.offset = t.offset;
          advance();
          s.node = OutputStmt{parse_tuple(false, true, {}, false)};
          expect_kind(TokenKind::VariableEnd, "'}}'");
          body.push_back(std::move(s));
          break;
        }
        case TokenKind::BlockBegin: {
          const size_t tag_offset = t.offset;
          advance();
          if (at_end_tag(ends)) return body;
          parse_statement(body, tag_offset);
          expect_kind(TokenKind::BlockEnd, "'%}'");
          break;
        }
        default: unexpected("template text or a tag");
      }
    }
  }

  // Parses the body of a block tag up to one of `ends`; returns which end it found, having
  // consumed that name.
  std::string parse_block_body(Body& body, const std::string& tag, size_t offset, std::vector<std::string> ends) {
    Nesting nest(*this, offset);
    skip_op(":");  // Jinja2 allows a colon, for Python's sake
    expect_kind(TokenKind::BlockEnd, "'%}'");
    open_.push_back(OpenBlock{tag, offset, ends});
    body = parse_body(ends);
    open_.pop_back();
    std::string found = cur().text;
    advance();
    return found;
  }

  void parse_statement(Body& body, size_t offset) {
    if (cur().kind != TokenKind::Name) unexpected("a tag name");
    const std::string tag = cur().text;
    Stmt s;
    s.offset = offset;
    if (tag == "if") s.node = parse_if(offset);
    else if (tag == "for") s.node = parse_for(offset);
    else if (tag == "set") parse_set(s, offset);
    else if (tag == "macro") s.node = parse_macro(offset);
    else if (tag == "call") s.node = parse_call_block(offset);
    else if (tag == "filter") s.node = parse_filter_block(offset);
    else if (tag == "with") s.node = parse_with(offset);
    else if (tag == "generation") s.node = parse_generation(offset);
    else if (tag == "print") {
      advance();
      s.node = OutputStmt{parse_tuple(false, true, {}, false)};
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) error(offset, "'" + tag + "' outside a loop");
      advance();
      s.node = LoopControlStmt{tag == "break"};
    } else if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" || tag == "block") {
      error(cur().offset, "'" + tag + "' is not supported: a chat template renders on its own");
    } else {
      unknown_tag(tag);
    }
    body.push_back(std::move(s));
  }

  [[noreturn]] void unknown_tag(const std::string& tag) const {
    if (!open_.empty()) {
      const OpenBlock& b = open_.back();
      std::string expected;
      for (size_t k = 0; k < b.ends.size(); ++k) expected += (k > 0 ? " or '" : "'") + b.ends[k] + "'";
      error(cur().offset, "unexpected '" + tag + "': the '" + b.tag + "' at " + src_.location(b.offset) +
                              " is still open and expects " + expected);
    }
    const bool closer = tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else";
    error(cur().offset, closer ? "unexpected '" + tag + "': no block is open" : "unknown tag '" + tag + "'");
  }

  IfStmt parse_if(size_t offset) {
    IfStmt node;
    advance();  // if
    ++soft_;
    while (true) {
      IfBranch branch;
      branch.condition = parse_tuple(false, false, {}, false);
      const std::string end = parse_block_body(branch.body, "if", offset, {"elif", "else", "endif"});
      node.branches.push_back(std::move(branch));
      if (end == "elif") continue;
      if (end == "else") parse_block_body(node.otherwise, "if", offset, {"endif"});
      break;
    }
    --soft_;
    return node;
  }

  ForStmt parse_for(size_t offset) {
    ForStmt node;
    advance();  // for
    node.target = parse_assign_target(true, false, {"in"});
    if (!skip_name("in")) unexpected("'in'");
    node.iterable = parse_tuple(false, false, {"recursive"}, false);
    const int saved_soft = soft_;
    soft_ = 0;
    ++loop_depth_;
    if (skip_name("if")) node.filter = parse_expression(true);
    node.recursive = skip_name("recursive");
    const std::string end = parse_block_body(node.body, "for", offset, {"endfor", "else"});
    --loop_depth_;
    soft_ = saved_soft;
    if (end == "else") parse_block_body(node.otherwise, "for", offset, {"endfor"});
    return node;
  }

  void parse_set(Stmt& s, size_t offset) {
    advance();  // set
    Target target = parse_assign_target(true, true, {});
    if (skip_op("=")) {
      s.node = SetStmt{std::move(target), parse_tuple(false, true, {}, false)};
      return;
    }
    SetBlockStmt node;
    node.target = std::move(target);
    const int saved_soft = soft_;
    soft_ = 0;
    if (is_op("|")) node.filter = parse_filter(nullptr);
    parse_block_body(node.body, "set", offset, {"endset"});
    soft_ = saved_soft;
    s.node = std::move(node);
  }

  std::vector<MacroParam> parse_signature() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name("a parameter name");
      if (skip_op("=")) p.default_value = parse_expression(true);
      else if (!params.empty() && params.back().default_value)
        error(cur().offset, "a parameter without a default follows one with a default");
      params.push_back(std::move(p));
    }
    expect_op(")");
    return params;
  }

  // Parses a macro (or a call block's caller) body with its own loop and soft context.
  void parse_macro_body(MacroDefinition& macro, const std::string& tag, size_t offset, const std::string& end) {
    const int saved_soft = soft_, saved_loops = loop_depth_;
    soft_ = 0;
    loop_depth_ = 0;
    open_macros_.push_back(&macro);
    parse_block_body(macro.body, tag, offset, {end});
    open_macros_.pop_back();
    soft_ = saved_soft;
    loop_depth_ = saved_loops;
  }

  MacroStmt parse_macro(size_t offset) {
    advance();  // macro
    auto macro = std::make_shared<MacroDefinition>();
    macro->name = expect_name("a macro name");
    const int saved_soft = soft_;
    soft_ = 0;
    macro->params = parse_signature();
    soft_ = saved_soft;
    parse_macro_body(*macro, "macro", offset, "endmacro");
    return MacroStmt{std::move(macro)};
  }

  CallBlockStmt parse_call_block(size_t offset) {
    advance();  // call
    auto caller = std::make_shared<MacroDefinition>();
    caller->name = "caller";
    if (is_op("(")) caller->params = parse_signature();
    CallBlockStmt node;
    node.call = parse_expression(true);
    if (!std::holds_alternative<CallExpr>(node.call->node)) error(node.call->offset, "'call' needs a call expression");
    parse_macro_body(*caller, "call", offset, "endcall");
    node.caller = std::move(caller);
    return node;
  }

  FilterBlockStmt parse_filter_block(size_t offset) {
    advance();  // filter
    FilterBlockStmt node;
    const int saved_soft = soft_;
    soft_ = 0;
    node.filter = parse_filter_chain(nullptr);
    parse_block_body(node.body, "filter", offset, {"endfilter"});
    soft_ = saved_soft;
    return node;
  }

  WithStmt parse_with(size_t offset) {
    advance();  // with
    WithStmt node;
    while (cur().kind != TokenKind::BlockEnd) {
      if (!node.assignments.empty()) expect_op(",");
      Target target = parse_assign_target(true, false, {});
      expect_op("=");
      node.assignments.emplace_back(std::move(target), parse_expression(true));
    }
    const int saved_soft = soft_;
    soft_ = 0;
    parse_block_body(node.body, "with", offset, {"endwith"});
    soft_ = saved_soft;
    return node;
  }

  // transformers' `{% generation %}` marks assistant text; it renders its body as is.
  WithStmt parse_generation(size_t offset) {
    advance();  // generation
    WithStmt node;
    const int saved_soft = soft_;
    soft_ = 0;
    parse_block_body(node.body, "generation", offset, {"endgeneration"});
    soft_ = saved_soft;
    return node;
  }

  Target parse_assign_target(bool with_tuple, bool with_namespace, const std::vector<std::string>& extra_ends) {
    Target t;
    t.offset = cur().offset;
    if (with_namespace && cur().kind == TokenKind::Name && is_op(peek(), ".")) {
      t.kind = Target::Kind::NamespaceAttribute;
      t.name = cur().text;
      advance();
      advance();
      t.attribute = expect_name("an attribute name");
      return t;
    }
    if (!with_tuple) {
      t.name = expect_name("a variable name");
      return t;
    }
    // A name, or names separated by commas, possibly in parentheses.
    std::vector<Target> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_ends)) break;
      items.push_back(parse_target_primary());
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (items.empty()) unexpected("a variable name");
    if (!is_tuple) return std::move(items[0]);
    t.kind = Target::Kind::Tuple;
    t.items = std::move(items);
    return t;
  }

  Target parse_target_primary() {
    Nesting nest(*this, cur().offset);
    if (is_op("(")) {
      const size_t offset = cur().offset;
      advance();
      Target t;
      t.offset = offset;
      t.kind = Target::Kind::Tuple;
      while (!is_op(")")) {
        if (!t.items.empty()) expect_op(",");
        if (is_op(")")) break;
        t.items.push_back(parse_target_primary());
      }
      expect_op(")");
      if (t.items.size() == 1) return std::move(t.items[0]);
      return t;
    }
    Target t;
    t.offset = cur().offset;
    if (cur().kind != TokenKind::Name) unexpected("a variable name");
    t.name = cur().text;
    if (t.name == "true" || t.name == "false" || t.name == "none" || t.name == "True" || t.name == "False" ||
        t.name == "None")
      error(t.offset, "cannot assign to '" + t.name + "'");
    advance();
    return t;
  }

  // ---- expressions -------------------------------------------------------------
  bool is_tuple_end(const std::vector<std::string>& extra_ends) const {
    const Token& t = cur();
    if (t.kind == TokenKind::VariableEnd || t.kind == TokenKind::BlockEnd || t.kind == TokenKind::End) return true;
    if (is_op(t, ")")) return true;
    return t.kind == TokenKind::Name && std::find(extra_ends.begin(), extra_ends.end(), t.text) != extra_ends.end();
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_ends,
                      bool explicit_parentheses) {
    const size_t offset = cur().offset;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_ends)) break;
      items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) unexpected("an expression");
    }
    int h = 0;
    for (const auto& e : items) h = std::max(h, height_of(e));
    return make(offset, h, ListExpr{std::move(items), true});
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Nesting nest(*this, cur().offset);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const size_t offset = cur().offset;
    // Jinja2 defers unknown filters in conditional expressions to run time, the value
    // before `if` included: the whole expression is soft if an `if` follows.
    const size_t start_unknown = pending_unknown_.size();
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      advance();
      ++soft_;
      resolve_unknown(start_unknown, true);
      ExprPtr condition = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      --soft_;
      const int h = std::max({height_of(expr), height_of(condition), height_of(otherwise)});
      expr = make(offset, h, ConditionalExpr{std::move(condition), std::move(expr), std::move(otherwise)});
    }
    return expr;
  }

  ExprPtr parse_or() {
    const size_t offset = cur().offset;
    ExprPtr first = parse_and();
    if (!is_name("or")) return first;
    std::vector<ExprPtr> operands;
    int h = first->height;
    operands.push_back(std::move(first));
    while (skip_name("or")) {
      operands.push_back(parse_and());
      h = std::max(h, operands.back()->height);
    }
    return make(offset, h, LogicalExpr{false, std::move(operands)});
  }

  ExprPtr parse_and() {
    const size_t offset = cur().offset;
    ExprPtr first = parse_not();
    if (!is_name("and")) return first;
    std::vector<ExprPtr> operands;
    int h = first->height;
    operands.push_back(std::move(first));
    while (skip_name("and")) {
      operands.push_back(parse_not());
      h = std::max(h, operands.back()->height);
    }
    return make(offset, h, LogicalExpr{true, std::move(operands)});
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const size_t offset = cur().offset;
      Nesting nest(*this, offset);
      advance();
      ExprPtr operand = parse_not();
      const int h = operand->height;
      return make(offset, h, UnaryExpr{UnaryOp::Not, std::move(operand)});
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const size_t offset = cur().offset;
    ExprPtr first = parse_math1();
    std::vector<CompareOperand> rest;
    int h = first->height;
    while (true) {
      const Token& t = cur();
      const size_t op_offset = t.offset;
      CompareOp op;
      if (is_op(t, "==")) op = CompareOp::Equal;
      else if (is_op(t, "!=")) op = CompareOp::NotEqual;
      else if (is_op(t, "<")) op = CompareOp::Less;
      else if (is_op(t, "<=")) op = CompareOp::LessEqual;
      else if (is_op(t, ">")) op = CompareOp::Greater;
      else if (is_op(t, ">=")) op = CompareOp::GreaterEqual;
      else if (is_name(t, "in")) op = CompareOp::In;
      else if (is_name(t, "not") && is_name(peek(), "in")) {
        op = CompareOp::NotIn;
        advance();
      } else break;
      advance();
      rest.push_back(CompareOperand{op, op_offset, parse_math1()});
      h = std::max(h, rest.back().value->height);
    }
    if (rest.empty()) return first;
    return make(offset, h, CompareExpr{std::move(first), std::move(rest)});
  }

  using LevelParser = ExprPtr (Parser::*)();

  ExprPtr parse_binary_level(LevelParser next, std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
    const size_t offset = cur().offset;
    ExprPtr first = (this->*next)();
    std::vector<BinaryOperand> rest;
    int h = first->height;
    while (true) {
      const BinaryOp* found = nullptr;
      for (const auto& [symbol, op] : ops)
        if (is_op(symbol)) found = &op;
      if (found == nullptr) break;
      const size_t op_offset = cur().offset;
      advance();
      rest.push_back(BinaryOperand{*found, op_offset, (this->*next)()});
      h = std::max(h, rest.back().value->height);
    }
    if (rest.empty()) return first;
    return make(offset, h, BinaryChainExpr{std::move(first), std::move(rest)});
  }

  // Jinja2's precedence, loosest first: + -, then ~, then * / // %, then **.
  ExprPtr parse_math1() {
    return parse_binary_level(&Parser::parse_concat, {{"+", BinaryOp::Add}, {"-", BinaryOp::Subtract}});
  }
  ExprPtr parse_concat() { return parse_binary_level(&Parser::parse_math2, {{"~", BinaryOp::Concat}}); }
  ExprPtr parse_math2() {
    return parse_binary_level(&Parser::parse_pow, {{"*", BinaryOp::Multiply},
                                                   {"/", BinaryOp::Divide},
                                                   {"//", BinaryOp::FloorDivide},
                                                   {"%", BinaryOp::Modulo}});
  }
  ExprPtr parse_pow() { return parse_binary_level(&Parser::parse_unary_filtered, {{"**", BinaryOp::Power}}); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    const size_t offset = cur().offset;
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      Nesting nest(*this, offset);
      const UnaryOp op = is_op("-") ? UnaryOp::Negate : UnaryOp::Plus;
      advance();
      ExprPtr operand = parse_unary(false);
      const int h = operand->height;
      node = make(offset, h, UnaryExpr{op, std::move(operand)});
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const size_t offset = t.offset;
    switch (t.kind) {
      case TokenKind::Name: {
        ExprPtr e;
        if (t.text == "true" || t.text == "True") e = make(offset, 0, ConstExpr{Value::boolean(true)});
        else if (t.text == "false" || t.text == "False") e = make(offset, 0, ConstExpr{Value::boolean(false)});
        else if (t.text == "none" || t.text == "None") e = make(offset, 0, ConstExpr{Value::none()});
        else {
          note_special_name(t.text);
          e = make(offset, 0, NameExpr{t.text});
        }
        advance();
        return e;
      }
      case TokenKind::String: {
        // Adjacent string literals concatenate, as in Python.
        std::string s = t.text;
        advance();
        while (cur().kind == TokenKind::String) {
          s += cur().text;
          advance();
        }
        return make(offset, 0, ConstExpr{Value::string(std::move(s))});
      }
      case TokenKind::Integer: {
        auto e = make(offset, 0, ConstExpr{Value::integer(t.integer)});
        advance();
        return e;
      }
      case TokenKind::Float: {
        auto e = make(offset, 0, ConstExpr{Value::number(t.number)});
        advance();
        return e;
      }
      case TokenKind::Operator:
        if (t.text == "(") {
          advance();
          ExprPtr e = parse_tuple(false, true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_list() {
    const size_t offset = cur().offset;
    expect_op("[");
    std::vector<ExprPtr> items;
    int h = 0;
    while (!is_op("]")) {
      if (!items.empty()) expect_op(",");
      if (is_op("]")) break;
      items.push_back(parse_expression(true));
      h = std::max(h, items.back()->height);
    }
    expect_op("]");
    return make(offset, h, ListExpr{std::move(items), false});
  }

  ExprPtr parse_dict() {
    const size_t offset = cur().offset;
    expect_op("{");
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
    int h = 0;
    while (!is_op("}")) {
      if (!items.empty()) expect_op(",");
      if (is_op("}")) break;
      ExprPtr key = parse_expression(true);
      expect_op(":");
      ExprPtr value = parse_expression(true);
      h = std::max({h, key->height, value->height});
      items.emplace_back(std::move(key), std::move(value));
    }
    expect_op("}");
    return make(offset, h, DictExpr{std::move(items)});
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) node = parse_filter(std::move(node));
      else if (is_name("is")) node = parse_test(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const size_t offset = cur().offset;
    if (skip_op(".")) {
      const Token& t = cur();
      if (t.kind == TokenKind::Name) {
        std::string attribute = t.text;
        advance();
        const int h = node->height;
        return make(offset, h, AttributeExpr{std::move(node), std::move(attribute)});
      }
      if (t.kind != TokenKind::Integer) unexpected("an attribute name or number");
      ExprPtr key = make(t.offset, 0, ConstExpr{Value::integer(t.integer)});
      advance();
      const int h = node->height;
      return make(offset, h, ItemExpr{std::move(node), std::move(key)});
    }
    expect_op("[");
    std::vector<ExprPtr> keys;
    ExprPtr start, stop, step;
    bool is_slice = false;
    while (!is_op("]")) {
      if (!keys.empty() || is_slice) expect_op(",");
      if (is_slice) error(cur().offset, "a slice cannot be part of a tuple subscript");
      // start[:stop[:step]]
      ExprPtr first;
      if (!is_op(":")) first = parse_expression(true);
      if (!is_op(":")) {
        keys.push_back(std::move(first));
        continue;
      }
      if (!keys.empty()) error(cur().offset, "a slice cannot be part of a tuple subscript");
      is_slice = true;
      start = std::move(first);
      advance();  // :
      if (!is_op(":") && !is_op("]") && !is_op(",")) stop = parse_expression(true);
      if (skip_op(":")) {
        if (!is_op("]") && !is_op(",")) step = parse_expression(true);
      }
    }
    expect_op("]");
    if (is_slice) {
      const int h = std::max({node->height, height_of(start), height_of(stop), height_of(step)});
      return make(offset, h, SliceExpr{std::move(node), std::move(start), std::move(stop), std::move(step)});
    }
    if (keys.empty()) error(offset, "expected a subscript inside '[]'");
    ExprPtr key;
    if (keys.size() == 1) {
      key = std::move(keys[0]);
    } else {
      int kh = 0;
      for (const auto& k : keys) kh = std::max(kh, k->height);
      key = make(offset, kh, ListExpr{std::move(keys), true});
    }
    const int h = std::max(node->height, key->height);
    return make(offset, h, ItemExpr{std::move(node), std::move(key)});
  }

  CallArguments parse_call_args() {
    expect_op("(");
    CallArguments args;
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) error(cur().offset, "invalid order of arguments in a call");
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!args.star_args && !args.star_kwargs);
        advance();
        args.star_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!args.star_kwargs);
        advance();
        args.star_kwargs = parse_expression(true);
      } else if (cur().kind == TokenKind::Name && is_op(peek(), "=")) {
        ensure(!args.star_kwargs);
        std::string key = cur().text;
        advance();
        advance();
        args.keyword.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!args.star_args && !args.star_kwargs && args.keyword.empty());
        args.positional.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
    return args;
  }

  ExprPtr parse_call(ExprPtr callee) {
    const size_t offset = cur().offset;
    CallArguments args = parse_call_args();
    const int h = std::max(callee->height, height_of(args));
    return make(offset, h, CallExpr{std::move(callee), std::move(args)});
  }

  // `name(args) | name ...` applied to `node` (null inside filter blocks).
  ExprPtr parse_filter_chain(ExprPtr node) {
    node = parse_one_filter(std::move(node));
    while (is_op("|")) {
      advance();
      node = parse_one_filter(std::move(node));
    }
    return node;
  }

  ExprPtr parse_filter(ExprPtr node) {
    expect_op("|");
    return parse_filter_chain(std::move(node));
  }

  ExprPtr parse_one_filter(ExprPtr node) {
    const size_t name_offset = cur().offset;
    std::string name = expect_name("a filter name");
    while (is_op(".")) {
      advance();
      name += "." + expect_name("a filter name");
    }
    CallArguments args;
    if (is_op("(")) args = parse_call_args();
    const bool known = find_filter(name) != nullptr;
    if (!known) note_unknown(name_offset, "no filter named '" + name + "'");
    const int h = std::max(height_of(node), height_of(args));
    return make(name_offset, h, FilterExpr{std::move(node), std::move(name), std::move(args), known});
  }

  ExprPtr parse_test(ExprPtr node) {
    advance();  // is
    const bool negated = skip_name("not");
    const size_t name_offset = cur().offset;
    std::string name = expect_name("a test name");
    while (is_op(".")) {
      advance();
      name += "." + expect_name("a test name");
    }
    CallArguments args;
    const Token& t = cur();
    if (is_op(t, "(")) {
      args = parse_call_args();
    } else if ((t.kind == TokenKind::Name || t.kind == TokenKind::String || t.kind == TokenKind::Integer ||
                t.kind == TokenKind::Float || is_op(t, "[") || is_op(t, "{")) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
      if (is_name(t, "is")) error(t.offset, "tests cannot be chained with 'is'");
      // One argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
      args.positional.push_back(parse_postfix(parse_primary()));
    }
    const bool known = find_test(name) != nullptr;
    if (!known) note_unknown(name_offset, "no test named '" + name + "'");
    const int h = std::max(node->height, height_of(args));
    return make(name_offset, h, TestExpr{std::move(node), std::move(name), std::move(args), negated, known});
  }

  // ---- unknown filters and tests -----------------------------------------------
  struct UnknownName {
    size_t offset;
    std::string message;
    bool soft;
  };

  void note_unknown(size_t offset, std::string message) {
    pending_unknown_.push_back(UnknownName{offset, std::move(message), soft_ > 0});
  }

  // An `if` after an expression makes the names it used soft after the fact.
  void resolve_unknown(size_t from, bool soft) {
    for (size_t k = from; k < pending_unknown_.size(); ++k) pending_unknown_[k].soft |= soft;
  }

 public:
  // Unknown names outside soft contexts are errors now; the others fail when evaluated.
  void check_unknown() const {
    for (const UnknownName& u : pending_unknown_)
      if (!u.soft) error(u.offset, u.message);
  }

 private:
  void note_special_name(const std::string& name) {
    for (MacroDefinition* m : open_macros_) {
      if (name == "varargs") m->uses_varargs = true;
      else if (name == "kwargs") m->uses_kwargs = true;
      else if (name == "caller") m->uses_caller = true;
    }
  }

  const Source& src_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int nesting_ = 0;
  int soft_ = 0;
  int loop_depth_ = 0;
  std::vector<OpenBlock> open_;
  std::vector<MacroDefinition*> open_macros_;
  std::vector<UnknownName> pending_unknown_;
};

}  // namespace

Body parse_template(const Source& source, std::vector<Token> tokens) {
  Parser parser(source, std::move(tokens));
  Body body = parser.parse();
  parser.check_unknown();
  return body;
}

}  // namespace glass::jinja
