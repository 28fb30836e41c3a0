// Templates tried as an attacker would: every way found to make one render take unbounded
// memory or time now stops at a budget, with a glass::Error that names the template line
// and column and the budget, quickly and in little memory.
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

// The error a render raises; it must name `location` ("line L, column C") and contain
// `budget` (what ran out).
void expect_budget_error(const std::string& source, const char* location, const char* budget,
                         const Variables& vars = {}, const RenderOptions& options = {}) {
  SCOPED_TRACE(source.substr(0, 200));
  const auto start = std::chrono::steady_clock::now();
  const std::string error = thrown_error([&] { render(source, vars, options); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(error.find(std::string("template: ") + location + ": "), std::string::npos) << error;
  EXPECT_NE(error.find(budget), std::string::npos) << error;
  EXPECT_LT(seconds, 2.0) << error;
}

double seconds_to_render(const std::string& source, const std::string& expected, const Variables& vars = {}) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render(source, vars), expected);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(JinjaBudget, ListDoublingStopsAtTheListBudget) {
  expect_budget_error("{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                      "line 1, column 75", "list budget of 1,048,576 items");
  expect_budget_error("{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l * 2 %}{% endfor %}",
                      "line 1, column 75", "list budget of 1,048,576 items");
}

TEST(JinjaBudget, ListOfAHugeStringIsRefusedBeforeItIsBuilt) {
  const Variables vars = {{"s", Value::string(std::string(60'000'000, 'x'))}};
  expect_budget_error("{{ s|list|length }}", "line 1, column 6", "list budget", vars);
  expect_budget_error("{% for c in s %}{% endfor %}", "line 1, column 1", "list budget", vars);
}

TEST(JinjaBudget, WideIndentAndCenterAreRefusedBeforeTheyAllocate) {
  expect_budget_error("{% set x = 'a\nb'|indent(10**9) %}", "line 2, column 4", "string budget of 16,777,216 bytes");
  expect_budget_error("{% set x = 'ab'|indent(10**9, true) %}", "line 1, column 17", "string budget");
  expect_budget_error("{{ 'x'|center(10**12) }}", "line 1, column 8", "string budget");
  expect_budget_error("{{ 'x'.center(10**12) }}", "line 1, column 14", "string budget");
  expect_budget_error("{{ 'x'.ljust(10**12, '\u00e9') }}", "line 1, column 13", "string budget");
  expect_budget_error("{{ '1'.zfill(10**12) }}", "line 1, column 13", "string budget");
}

TEST(JinjaBudget, UniqueIsLinear) {
  EXPECT_LT(seconds_to_render("{{ range(100000)|unique|list|length }}", "100000"), 2.0);
  EXPECT_LT(seconds_to_render("{{ (range(100000)|map('string')|list + ['1', '2'])|unique|list|length }}", "100000"),
            2.0);
  // Python's equality decides what is a duplicate: 1, 1.0 and True are one value.
  EXPECT_EQ(render("{{ [1, 1.0, true, 2, 'a', 'A', (1, 2), (1.0, 2)]|unique|list }}"), "[1, 2, 'a', (1, 2)]");
}

// Searching and stripping cost time linear in the text whatever the needle or the
// characters (a naive search here compares 64 billion bytes, a naive strip 32 billion
// characters).
TEST(JinjaBudget, SearchesAndStripsAreLinear) {
  const std::string setup = "{% set hay = 'a' * 8000000 %}{% set needle = 'a' * 8000 ~ 'b' %}";
  EXPECT_LT(seconds_to_render(setup + "{{ needle in hay }} {{ hay.rfind(needle) }} {{ hay.count(needle) }} "
                                      "{{ hay.split(needle)|length }}",
                              "False -1 0 1"),
            2.0);
  EXPECT_LT(seconds_to_render(setup + "{% set chars = 'b' * 4000 ~ 'a' %}{{ hay.strip(chars)|length }}", "0"), 2.0);
  // Python's results where the needle (longer than 16 bytes) is found.
  EXPECT_EQ(render("{% set n = 'ab' * 10 %}{% set h = 'x' ~ n ~ n ~ 'ab' ~ n %}"
                   "{{ n in h }} {{ h.find(n) }} {{ h.rfind(n) }} {{ h.index(n, 2) }} {{ h.count(n) }} {{ h.split(n) }} "
                   "{{ h.rsplit(n, 1)[0]|length }} {{ h.replace(n, '-') }} {{ h.partition(n)[2]|length }} "
                   "{{ h.rpartition(n)[0]|length }} {{ ('ba' ~ h)|trim('ab')|length }}"),
            "True 1 43 3 3 ['x', '', '', 'ab'] 43 x---ab 42 43 1");
}

TEST(JinjaBudget, CyclingOverAHugeArgumentListStopsAtABudget) {
  expect_budget_error("{% for i in range(100000) %}{{ loop.cycle(*range(100000)) }}{% endfor %}", "line 1, column 49",
                      "allocation budget of 268,435,456 bytes");
}

TEST(JinjaBudget, HugeFormatWidthsAreRefusedWithoutOverflow) {
  expect_budget_error("{{ '%999999999999d'|format(1) }}", "line 1, column 21", "string budget");
  expect_budget_error("{{ '%99999999999999999999999d'|format(1) }}", "line 1, column 32", "string budget");
  expect_budget_error("{{ '%.999999999999f'|format(1.5) }}", "line 1, column 22", "string budget");
  expect_budget_error("{{ '%*d' % (10**12, 1) }}", "line 1, column 10", "string budget");
  expect_budget_error("{{ '{:999999999999}'.format(1) }}", "line 1, column 28", "string budget");
  expect_budget_error("{{ '{:.999999999999}'.format(1.5) }}", "line 1, column 29", "string budget");
  // Python's values for widths and precisions that fit.
  EXPECT_EQ(render("{{ '%5d|%-5d|%*d|%.*f' % (1, 2, -4, 3, -1, 1.5) }}"), "    1|2    |3   |2");
  EXPECT_EQ(render("{{ ('%.600f' % 1e300)|length }}"), "902");
  EXPECT_EQ(render("{{ ('{:.600f}'.format(1e300))|length }}"), "902");
}

// With small budgets, every built-in that builds something checks first: each of these
// stops at the budget named, at the operator, filter or call that would have built it.
TEST(JinjaBudget, EveryAllocatingBuiltinChecksFirst) {
  RenderOptions small;
  small.limits.max_string_bytes = 1000;
  small.limits.max_items = 100;
  struct Case {
    const char* source;
    const char* location;
    const char* budget;
  };
  const Case cases[] = {
      {"{{ ('x' * 600) ~ ('y' * 600) }}", "line 1, column 16", "string budget of 1,000 bytes"},
      {"{{ 'x' * 600 + 'y' * 600 }}", "line 1, column 14", "string budget"},
      {"{{ ['x' * 600, 'y' * 600]|join }}", "line 1, column 27", "string budget"},
      {"{{ ['x' * 600, 'y' * 600]|string }}", "line 1, column 27", "string budget"},
      {"{{ ('a' * 100)|replace('a', 'bbbbbbbbbbbbbbbb') }}", "line 1, column 16", "string budget"},
      {"{{ ('a' * 100).replace('a', 'bbbbbbbbbbbbbbbb') }}", "line 1, column 23", "string budget"},
      {"{{ ('<' * 300)|escape }}", "line 1, column 16", "string budget"},
      {"{{ ('x\n' * 10)|indent(200, true) }}", "line 2, column 9", "string budget"},
      {"{{ ('x' * 600)|center(1200) }}", "line 1, column 16", "string budget"},
      {"{{ ('x' * 999)|tojson }}", "line 1, column 16", "string budget"},
      {"{{ range(50)|list|tojson(indent=30) }}", "line 1, column 19", "string budget"},
      {"{{ '%.2000f'|format(1.5) }}", "line 1, column 14", "string budget"},
      {"{{ '{:>2000}'.format(1) }}", "line 1, column 21", "string budget"},
      {"{% macro m() %}{{ 'x' * 600 }}{{ 'y' * 600 }}{% endmacro %}{{ m() }}", "line 1, column 31",
       "string budget"},
      {"{% set x %}{% for i in range(100) %}xxxxxxxxxxxx{% endfor %}{% endset %}", "line 1, column 37",
       "string budget"},
      {"{{ range(200) }}", "line 1, column 9", "list budget of 100 items"},
      {"{{ range(60)|list * 2 }}", "line 1, column 19", "list budget"},
      {"{{ range(60)|list + range(60)|list }}", "line 1, column 19", "list budget"},
      {"{{ [1]|batch(1000, 0)|list }}", "line 1, column 8", "list budget"},
      {"{{ [1, 2]|slice(1000)|list }}", "line 1, column 11", "list budget"},
      {"{{ ('a ' * 150).split() }}", "line 1, column 22", "list budget"},
      {"{{ ('a\n' * 150).splitlines() }}", "line 2, column 20", "list budget"},
      {"{{ ('x' * 150)|list }}", "line 1, column 16", "list budget"},
  };
  for (const Case& c : cases) expect_budget_error(c.source, c.location, c.budget, {}, small);
}

TEST(JinjaBudget, WorkAllocationAndRecursionStopAtTheirBudgets) {
  RenderOptions small;
  small.limits.max_work = 100'000;
  expect_budget_error("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                      "line 1, column 27", "work budget of 100,000 steps", {}, small);
  // Searching, comparing and counting long strings is work too.
  expect_budget_error("{% set s = 'x' * 100000 %}{% for i in range(1000) %}{{ s.count('y') }}{% endfor %}",
                      "line 1, column 63", "work budget", {}, small);
  RenderOptions little_memory;
  little_memory.limits.max_allocated_bytes = 100'000;
  expect_budget_error("{% for i in range(1000) %}{% set x = 'x' * 900 %}{% endfor %}", "line 1, column 42",
                      "allocation budget of 100,000 bytes", {}, little_memory);
  RenderOptions shallow;
  shallow.limits.max_recursion_depth = 50;
  expect_budget_error("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "line 1, column 20",
                      "recursion budget", {}, shallow);
}

// Chains of namespaces (or loops) as long as the budgets allow are released one by one,
// not recursively: releasing one never unwinds the whole chain on the stack.
TEST(JinjaBudget, LongChainsOfObjectsAreReleasedWithoutRecursion) {
  EXPECT_EQ(render("{% set h = namespace(cur=none) %}{% for i in range(100000) %}"
                   "{% set h.cur = namespace(next=h.cur) %}{% endfor %}{% set h.cur = none %}done"),
            "done");
  EXPECT_EQ(render("{% set h = namespace(cur=none) %}{% for i in range(100000) %}{% for x in [h.cur] %}"
                   "{% set h.cur = loop %}{% endfor %}{% endfor %}{% set h.cur = none %}done"),
            "done");
}

// Every budget is reported against what real templates spend (RenderUsage).
TEST(JinjaBudget, UsageIsReported) {
  RenderUsage usage;
  RenderOptions options;
  options.usage = &usage;
  EXPECT_EQ(render("{% macro m(x) %}{{ x ~ 'b' }}{% endmacro %}{% for i in range(3) %}{{ m('a' * 10) }}{% endfor %}",
                   {}, options),
            "aaaaaaaaaabaaaaaaaaaabaaaaaaaaaab");
  EXPECT_EQ(usage.output_bytes, 33u);
  EXPECT_EQ(usage.largest_string_bytes, 11u);
  EXPECT_EQ(usage.largest_list_items, 3u);
  EXPECT_EQ(usage.call_depth, 1);
  EXPECT_GT(usage.work, 10u);
  EXPECT_GT(usage.allocated_bytes, 33u);
  EXPECT_GT(usage.recursion_depth, 3);
}

}  // namespace
}  // namespace glass::jinja
