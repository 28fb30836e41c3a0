#include "base/json_fields.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::thrown_error;

TEST(JsonFields, ReadsTypedFields) {
  Json j = parse_json(R"({"a": 3, "b": 2.5, "c": true, "d": "x", "e": null, "f": 4.0})", "t.json");
  EXPECT_EQ(json_int(j, "a", "t.json"), 3);
  EXPECT_EQ(json_int(j, "f", "t.json"), 4);
  EXPECT_DOUBLE_EQ(json_number(j, "b", "t.json"), 2.5);
  EXPECT_TRUE(json_bool_or(j, "c", false, "t.json"));
  EXPECT_EQ(json_string(j, "d", "t.json"), "x");
  EXPECT_FALSE(json_int_opt(j, "e", "t.json").has_value());
  EXPECT_FALSE(json_int_opt(j, "missing", "t.json").has_value());
  EXPECT_TRUE(json_bool_or(j, "missing", true, "t.json"));
}

TEST(JsonFields, ErrorsNameFileAndField) {
  Json j = parse_json(R"({"a": "three", "b": 2.5})", "cfg.json");
  std::string e = thrown_error([&] { json_int(j, "a", "cfg.json"); });
  EXPECT_NE(e.find("cfg.json"), std::string::npos) << e;
  EXPECT_NE(e.find("\"a\""), std::string::npos) << e;
  EXPECT_NE(e.find("integer"), std::string::npos) << e;
  e = thrown_error([&] { json_int(j, "b", "cfg.json"); });
  EXPECT_NE(e.find("\"b\""), std::string::npos) << e;
  e = thrown_error([&] { json_int(j, "nope", "cfg.json"); });
  EXPECT_NE(e.find("missing required field \"nope\""), std::string::npos) << e;
}

TEST(JsonFields, ParseErrorNamesSource) {
  std::string e = thrown_error([] { parse_json("{\"a\": ", "broken.json"); });
  EXPECT_NE(e.find("broken.json"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
}


// Syntax errors in glass's words: where (line, column) and what was expected, never the
// library's exception text.
TEST(JsonFields, SyntaxErrorsSayWhereAndWhatWasExpected) {
  const std::pair<const char*, const char*> cases[] = {
      {"{nope", "at line 1, column 2: expected an object key (a string in double quotes), found no"},
      {"[{\"role\": \"user\" \"content\": 1}]", "at line 1, column 18: expected ',' or '}' after an object member, found \"content\""},
      {"[1,]", "at line 1, column 4: expected a value (an object, array, string, number, true, false or null), found ']'"},
      {"[1 2]", "at line 1, column 4: expected ',' or ']' after an array item, found '2'"},
      {"{\"a\" 1}", "at line 1, column 6: expected ':' after an object key, found '1'"},
      {"{\"a\": 1} x", "at line 1, column 10: more text follows the JSON value, found 'x'"},
      {"{\"a\":\n  [1,\n   2", "at line 3, column 5: the text ends before the JSON value is complete"},
      {"[\"a\tb\"]", "at line 1, column 4: a control character inside a string must be escaped"},
      {"[\"abc", "at line 1, column 6: a string has no closing quote"},
      {"[-x]", "at line 1, column 2: a number is malformed, found -x"},
      {"\n\nHello", "at line 3, column 1: expected a value"},
      {"[\"\\u12\"]", "at line 1, column 7: a \\u escape needs four hex digits"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = thrown_error([&] { parse_json(text, "t.json"); });
    EXPECT_NE(e.find(std::string("t.json: not valid JSON ") + expected), std::string::npos) << text << "\n" << e;
    EXPECT_EQ(e.find("json.exception"), std::string::npos) << e;
    EXPECT_EQ(e.find("syntax error while parsing"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace glass
