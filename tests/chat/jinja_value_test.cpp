// Values and their Python semantics, below the template level.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "chat/jinja_json.h"
#include "chat/jinja_text.h"
#include "chat/jinja_value.h"

namespace glass::jinja {
namespace {

// What the functions below charge their work to, as a render's budget.
struct JinjaValue : ::testing::Test {
  RenderLimits limits;
  RenderBudget budget{limits};
};

TEST_F(JinjaValue, FloatReprMatchesPython) {
  const std::pair<double, const char*> cases[] = {
      {1.0, "1.0"},       {0.1, "0.1"},          {-2.5, "-2.5"},       {1e16, "1e+16"},
      {1e15, "1000000000000000.0"}, {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"},
      {123456789.125, "123456789.125"}, {1e100, "1e+100"}, {5e-324, "5e-324"}, {-0.0, "-0.0"},
      {std::numeric_limits<double>::infinity(), "inf"}, {std::nan(""), "nan"}, {0.30000000000000004, "0.30000000000000004"},
  };
  for (const auto& [d, text] : cases) EXPECT_EQ(python_float_repr(d), text) << d;
}

TEST_F(JinjaValue, StrAndReprMatchPython) {
  const Value list = Value::list({Value::integer(1), Value::string("it's"), Value::none(), Value::boolean(true),
                                  Value::number(2.0), Value::tuple({Value::string("x")})});
  EXPECT_EQ(to_str(list, budget), "[1, \"it's\", None, True, 2.0, ('x',)]");
  Dict d;
  d.set("b", Value::string("q\"'\n"));
  d.set("a", Value::dict({}));
  EXPECT_EQ(to_str(Value::dict(d), budget), "{'b': 'q\"\\'\\n', 'a': {}}");
  EXPECT_EQ(to_str(Value(), budget), "");
  EXPECT_EQ(repr(Value(), budget), "Undefined");
}

TEST_F(JinjaValue, EqualityAndOrderingFollowPython) {
  EXPECT_TRUE(equals(Value::integer(1), Value::number(1.0), budget));
  EXPECT_TRUE(equals(Value::integer(1), Value::boolean(true), budget));
  EXPECT_FALSE(equals(Value::list({Value::integer(1)}), Value::tuple({Value::integer(1)}), budget));
  EXPECT_FALSE(equals(Value::integer(9007199254740993), Value::number(9007199254740992.0), budget));
  EXPECT_EQ(compare(Value::string("a"), Value::string("b"), "<", budget), -1);
  EXPECT_EQ(compare(Value::string("é"), Value::string("z"), "<", budget), 1);  // code point order
  EXPECT_THROW(compare(Value::string("a"), Value::integer(1), "<", budget), Error);
}

TEST_F(JinjaValue, JsonDumpsLikePython) {
  const Value v = value_from_json(OrderedJson::parse(R"({"z": [1, 2.0, "é\n\u0001"], "a": {}, "n": null, "t": true})"));
  EXPECT_EQ(python_json_dumps(v, {}, budget), R"({"z": [1, 2.0, "é\n\u0001"], "a": {}, "n": null, "t": true})");
  JsonDumpOptions o;
  o.indent = "  ";
  o.sort_keys = true;
  EXPECT_EQ(python_json_dumps(v, o, budget), "{\n  \"a\": {},\n  \"n\": null,\n  \"t\": true,\n  \"z\": [\n    1,\n    2.0,\n"
                                     "    \"é\\n\\u0001\"\n  ]\n}");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(python_json_dumps(Value::string("é😀"), ascii, budget), R"("\u00e9\ud83d\ude00")");
  EXPECT_THROW(python_json_dumps(Value(), {}, budget), Error);
  // Integers past int64 arrive as floats, as there are no big integers here.
  EXPECT_TRUE(value_from_json(OrderedJson::parse("18446744073709551615")).is_float());
}

TEST(JinjaText, PythonStringSemantics) {
  EXPECT_TRUE(is_valid_utf8("héllo ☃ 😀"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));        // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));    // surrogate
  EXPECT_FALSE(is_valid_utf8("\xe2\x98"));        // truncated
  EXPECT_EQ(code_point_count("héllo"), 5u);
  EXPECT_EQ(python_strip("\u3000 x\xc2\xa0\n", true, true), "x");
  EXPECT_EQ(python_split("  a  b  c  ", std::nullopt, 1, false), (std::vector<std::string>{"a", "b  c  "}));
  EXPECT_EQ(python_split("  a  b  c  ", std::nullopt, 1, true), (std::vector<std::string>{"  a  b", "c"}));
  EXPECT_EQ(python_split("aaa", std::string_view("aa"), -1, true), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(python_replace("ab", "", "-", -1), "-a-b-");
  EXPECT_EQ(python_upper("straße"), "STRASSE");
  EXPECT_EQ(python_title("hello wORLD ǆ"), "Hello World ǅ");
}

}  // namespace
}  // namespace glass::jinja
