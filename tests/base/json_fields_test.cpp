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

}  // namespace
}  // namespace glass
