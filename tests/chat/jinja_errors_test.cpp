// Malformed templates and runaway renders: every failure is a glass::Error that names the
// template line and column, never a crash, a hang or a blown stack.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/error.h"
#include "chat/jinja_json.h"
#include "chat/jinja_template.h"
#include "render_template.h"
#include "support/test_support.h"

namespace glass::jinja {
namespace {

using test::thrown_error;

using test::render;

struct ErrorCase {
  const char* source;
  const char* location;  // "line L, column C"
  const char* message;   // a part of the message
};

void expect_errors(std::initializer_list<ErrorCase> cases, const RenderOptions& options = {}) {
  const Variables vars = {{"xs", Value::list({Value::integer(1), Value::integer(2)})}};
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.source);
    const std::string error = thrown_error([&] { render(c.source, vars, options); });
    EXPECT_NE(error.find(std::string("template: ") + c.location + ": "), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

TEST(JinjaErrors, UnclosedTags) {
  expect_errors({
      {"{% if x %}never closed", "line 1, column 1", "'if' is never closed: the template ends before '{% endif %}'"},
      {"line one\n{% for m in xs %}\n  {{ m }}", "line 2, column 1", "'for' is never closed"},
      {"{% macro f() %}body", "line 1, column 1", "'macro' is never closed"},
      {"a\n  {{ x", "line 2, column 3", "'{{' is never closed with '}}'"},
      {"{% if x", "line 1, column 1", "'{%' is never closed with '%}'"},
      {"text {{ x }", "line 1, column 11", "unexpected '}'"},
      {"{# never closed", "line 1, column 1", "comment '{#' is never closed"},
      {"{% raw %} never closed", "line 1, column 1", "'{% raw %}' is never closed"},
  });
}

TEST(JinjaErrors, MismatchedEndTags) {
  expect_errors({
      {"{% if x %}a{% endfor %}", "line 1, column 15", "unexpected 'endfor': the 'if' at line 1, column 1 is still open"},
      {"{% for x in y %}a{% endif %}", "line 1, column 21", "expects 'endfor' or 'else'"},
      {"{% endif %}", "line 1, column 4", "unexpected 'endif': no block is open"},
      {"{% if a %}{% else %}{% else %}{% endif %}", "line 1, column 24", "unexpected 'else'"},
  });
}

TEST(JinjaErrors, UnknownFiltersTestsAndTags) {
  expect_errors({
      {"{{ x|nosuchfilter }}", "line 1, column 6", "no filter named 'nosuchfilter'"},
      {"hello\n  {{ x is nosuchtest }}", "line 2, column 11", "no test named 'nosuchtest'"},
      {"{% for x in xs %}{{ x|nosuch }}{% endfor %}", "line 1, column 23", "no filter named 'nosuch'"},
      {"{% foo %}", "line 1, column 4", "unknown tag 'foo'"},
      {"{% include 'other.html' %}", "line 1, column 4", "'include' is not supported"},
  });
  // Jinja2 defers unknown filters inside `if` to when they run, so a dead branch renders.
  EXPECT_EQ(render("{% if false %}{{ x|nosuch }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{{ 'a' if true else x|nosuch }}"), "a");
  expect_errors({{"{% if true %}{{ x|nosuch }}{% endif %}", "line 1, column 19", "no filter named 'nosuch'"}});
}

TEST(JinjaErrors, BadSyntax) {
  expect_errors({
      {"{{ 'unterminated }}", "line 1, column 4", "unterminated string literal"},
      {"{{ \"also\nunterminated }}", "line 1, column 4", "unterminated string literal"},
      {"{{ 1 + }}", "line 1, column 8", "expected an expression, got '}}'"},
      {"{{ (1 + 2 }}", "line 1, column 11", "unexpected '}', expected ')'"},
      {"{{ [1, 2) }}", "line 1, column 9", "unexpected ')', expected ']'"},
      {"{{ a b }}", "line 1, column 6", "expected '}}', got 'b'"},
      {"{{ }}", "line 1, column 4", "expected an expression"},
      {"{% set = 1 %}", "line 1, column 8", "expected a variable name"},
      {"{% for in xs %}{% endfor %}", "line 1, column 8", "expected a variable name"},
      {"{% macro f(a=1, b) %}{% endmacro %}", "line 1, column 18", "without a default follows one with a default"},
      {"{% break %}", "line 1, column 1", "'break' outside a loop"},
      {"{% macro m() %}{% break %}{% endmacro %}", "line 1, column 16", "'break' outside a loop"},
      {"{{ x ! y }}", "line 1, column 6", "unexpected character '!'"},
      {"{% set true = 1 %}", "line 1, column 8", "cannot assign to 'true'"},
      {"{{ 99999999999999999999 }}", "line 1, column 4", "integer literal 99999999999999999999 is too large"},
      {"{{ '\\x4' }}", "line 1, column 5", "truncated \\x escape"},
      {"{{ x is defined is defined }}", "line 1, column 17", "tests cannot be chained with 'is'"},
  });
  // Columns count characters, not bytes.
  expect_errors({{"é☃ {{ 1 + }}", "line 1, column 11", "expected an expression"}});
}

TEST(JinjaErrors, RuntimeErrorsNameTheExpression) {
  expect_errors({
      {"ok\n{{ undefined_thing.attr }}", "line 2, column 19", "'undefined_thing' is undefined"},
      {"{{ xs[0].role.name }}", "line 1, column 14", "'int object' has no attribute 'role'"},
      {"{{ xs + 'a' }}", "line 1, column 7", "can only concatenate list"},
      {"{{ 1 + 'a' }}", "line 1, column 6", "unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ 'a' < 1 }}", "line 1, column 8", "'<' not supported between instances of 'str' and 'int'"},
      {"{{ raise_exception('custom message') }}", "line 1, column 19", "custom message"},
      {"{% set ns = 1 %}{% set ns.a = 2 %}", "line 1, column 17", "cannot assign attribute on non-namespace object"},
      {"{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", "line 1, column 35", "macro 'f' takes not more than 1 argument(s)"},
      {"{% macro f(a) %}{% endmacro %}{{ f(b=2) }}", "line 1, column 35", "macro 'f' takes no keyword argument 'b'"},
      {"{{ 1 / 0 }}", "line 1, column 6", "division by zero"},
      {"{{ xs|join(1, 2, 3) }}", "line 1, column 7", "join() takes at most 2 argument(s)"},
      {"{{ xs|tojson(bad=1) }}", "line 1, column 7", "unexpected keyword argument 'bad'"},
      {"{{ 'abc'.nosuchmethod() }}", "line 1, column 22", "'str object' has no attribute 'nosuchmethod'"},
      {"{% for a, b in [1] %}{% endfor %}", "line 1, column 1", "'int' object is not iterable"},
      {"{% for a, b in [[1, 2, 3]] %}{% endfor %}", "line 1, column 1", "too many values to unpack (expected 2)"},
      {"{{ xs.append(3) }}", "line 1, column 13", "access to attribute 'append' of 'list' object is unsafe"},
      {"{{ undefined_thing|tojson }}", "line 1, column 20", "Object of type Undefined is not JSON serializable"},
      {"{{ 9223372036854775807 + 1 }}", "line 1, column 24", "integer overflow"},
      {"{{ xs[::0] }}", "line 1, column 6", "slice step cannot be zero"},
  });
}

TEST(JinjaErrors, InvalidUtf8AndJson) {
  EXPECT_NE(thrown_error([] { Template::parse("ok \xff\xfe"); }).find("not valid UTF-8"), std::string::npos);
  std::string deep(300, '[');
  deep += std::string(300, ']');
  EXPECT_NE(thrown_error([&] { value_from_json(OrderedJson::parse(deep)); }).find("nested more than"), std::string::npos);
}

// ---- limits: deep nesting and long templates never blow the stack or hang ----------------

TEST(JinjaLimits, DeepNestingIsAnErrorNotACrash) {
  for (int depth : {99, 150, 5000}) {
    SCOPED_TRACE(depth);
    const std::string parens = "{{ " + std::string(depth, '(') + "1" + std::string(depth, ')') + " }}";
    const std::string lists = "{{ " + std::string(depth, '[') + std::string(depth, ']') + " }}";
    std::string ifs, unary = "{{ ";
    for (int i = 0; i < depth; ++i) ifs += "{% if true %}", unary += "not ";
    ifs += "x";
    for (int i = 0; i < depth; ++i) ifs += "{% endif %}";
    unary += "false }}";
    std::string attrs = "{{ a";
    for (int i = 0; i < depth * 3; ++i) attrs += ".b";
    attrs += " }}";
    for (const std::string& t : {parens, lists, ifs, unary, attrs}) {
      try {
        const std::string out = render(t);
        EXPECT_LT(depth, 100) << "rendered " << out.size() << " bytes";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("levels deep"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(", column "), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_EQ(render("{{ " + std::string(99, '(') + "1" + std::string(99, ')') + " }}"), "1");
}

TEST(JinjaLimits, LongTemplatesRenderInLinearTime) {
  std::string t, expected;
  for (int i = 0; i < 20000; ++i) {
    t += "line {{ " + std::to_string(i) + " + 1 }}\n{% if true %}\n  {# c #}x\n{% endif %}\n";
    expected += "line " + std::to_string(i + 1) + "\nx\n";
  }
  std::string sum = "{{ 0";
  for (int i = 0; i < 100000; ++i) sum += " + 1";
  sum += " }}";
  std::string elifs = "{% if false %}";
  for (int i = 0; i < 5000; ++i) elifs += "{% elif false %}" + std::to_string(i);
  elifs += "{% else %}last{% endif %}";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render(t), expected);
  EXPECT_EQ(render(sum), "100000");
  EXPECT_EQ(render(elifs), "last");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
}

TEST(JinjaLimits, RunawayRendersStop) {
  RenderOptions limits;  // smaller than the defaults, to keep the test quick
  limits.limits.max_work = 1'000'000;
  limits.limits.max_output_bytes = size_t{1} << 20;
  expect_errors({
      {"{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "line 1, column 21", "nested more than 64 calls deep"},
      {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "line 1, column 29",
       "work budget of 1,000,000 steps"},
      {"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
       "line 1, column 75", "string budget"},
      {"{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}",
       "line 1, column 71", "nested more than 200 levels deep"},
      {"{{ range(1000000)|length }}", "line 1, column 9", "Range too big"},
      {"{{ 'x' * 10000000000 }}", "line 1, column 8", "over the string budget of 16,777,216 bytes"},
  }, limits);
  RenderOptions small;
  small.limits.max_output_bytes = 1000;
  EXPECT_NE(thrown_error([&] { Template::parse("{% for i in range(2000) %}x{% endfor %}").render({}, small); })
                .find("exceeds the output budget of 1,000 bytes"),
            std::string::npos);
}

TEST(JinjaLimits, CyclesThroughNamespacesAndMacrosAreReleased) {
  // Leak checkers would flag these if the interpreter did not break the cycles.
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"), "True");
  EXPECT_EQ(render("{% macro m() %}m{% endmacro %}{% set ns = namespace(f=m) %}{{ ns.f() }}"), "m");
  EXPECT_NE(thrown_error([] { render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"); }).find("too deeply"),
            std::string::npos);
}

}  // namespace
}  // namespace glass::jinja
