// Templates tried as an attacker would: every way found to make one render take unbounded
// memory or time now stops at a budget, with a glass::Error that names the template line
// and column and the budget, quickly and in little memory.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/error.h"
#include "chat/jinja_json.h"
#include "chat/jinja_template.h"
#include "support/test_support.h"

namespace glass::jinja {
namespace {

using test::thrown_error;

std::string render(const std::string& source, const Variables& vars = {}) {
  return Template::parse(source).render(vars);
}

// The error a render raises; it must name `location` ("line L, column C") and contain
// `budget` (what ran out).
void expect_budget_error(const std::string& source, const char* location, const char* budget,
                         const Variables& vars = {}) {
  SCOPED_TRACE(source.substr(0, 200));
  const auto start = std::chrono::steady_clock::now();
  const std::string error = thrown_error([&] { render(source, vars); });
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
  expect_budget_error("{% set x = 'a\nb'|indent(10**9) %}", "line 2, column 4", "string budget of 67,108,864 bytes");
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

TEST(JinjaBudget, CyclingOverAHugeArgumentListStopsAtABudget) {
  expect_budget_error("{% for i in range(100000) %}{{ loop.cycle(*range(100000)) }}{% endfor %}", "line 1, column 49",
                      "allocation budget of 1,073,741,824 bytes");
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

}  // namespace
}  // namespace glass::jinja
