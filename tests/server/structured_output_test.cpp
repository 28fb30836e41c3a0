// Structured outputs over HTTP on the demo model (random weights: left alone it never
// writes JSON): response_format json_object / json_schema and llama.cpp's `grammar`
// constrain every reply, streamed or not, on both endpoints; bad constraints are 400s
// naming the parameter.
#include <gtest/gtest.h>

#include <string>

#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

const std::string kSchemaFormat = R"("response_format": {"type": "json_schema", "json_schema": {"name": "person",
    "strict": true, "schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
    "age": {"type": "integer", "minimum": 0, "maximum": 150}, "tags": {"type": "array",
    "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}}, "required": ["name", "age", "tags"],
    "additionalProperties": false}}})";

// The person schema, checked by hand.
void expect_person(const std::string& content) {
  OJson j;
  ASSERT_NO_THROW(j = OJson::parse(content)) << content;
  ASSERT_TRUE(j.is_object()) << content;
  EXPECT_EQ(j.size(), 3u) << content;
  ASSERT_TRUE(j["name"].is_string()) << content;
  ASSERT_TRUE(j["age"].is_number_integer()) << content;
  EXPECT_GE(j["age"].get<int64_t>(), 0);
  EXPECT_LE(j["age"].get<int64_t>(), 150);
  ASSERT_TRUE(j["tags"].is_array()) << content;
  EXPECT_LE(j["tags"].size(), 3u);
  for (const OJson& t : j["tags"]) EXPECT_TRUE(t == "a" || t == "b" || t == "c") << content;
}

TEST(StructuredOutput, JsonSchemaRepliesAlwaysValidate) {
  TestServer s(demo_model_dir());
  int stopped = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    const HttpReply r = post_json(s, "/v1/chat/completions",
                                  chat_body("Who?", kSchemaFormat + str_cat(R"(, "max_tokens": 200, "temperature": 1, "seed": )", seed)));
    ASSERT_EQ(r.status, 200) << r.body;
    const OJson choice = r.json()["choices"][0];
    if (choice["finish_reason"] != "stop") continue;
    ++stopped;
    expect_person(choice["message"]["content"].get<std::string>());
  }
  EXPECT_GE(stopped, 6);
}

// The demo model cannot close a JSON string of its own: its replies are chains of words
// that end only with <|im_end|>, which the grammar holds back inside a string, so a
// json_object reply runs to max_tokens. The streamed json_object reply is checked on a
// purpose-built model instead: after the prompt's "\n" it writes "Sure" or "{" (equally
// likely), after "{" a "}", then <|im_end|>. Left alone it starts with "Sure" for some
// seeds; under json_object, "Sure" is masked and the reply is {}.
TEST(StructuredOutput, StreamedJsonObjectIsJson) {
  constexpr int32_t kNewline = 198, kSure = 39814, kOpen = 90, kClose = 92, kImEnd = 151645;
  TempDir dir;
  write_successor_model(dir.path(), {{kNewline, kSure}, {kNewline, kOpen}, {kOpen, kClose}, {kClose, kImEnd}},
                        demo_model_dir());
  TestServer s(dir.path());
  int sure = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    const HttpReply r = post_json(s, "/v1/chat/completions",
                                  chat_body("JSON please", str_cat(R"("max_tokens": 3, "temperature": 1, "seed": )", seed)));
    ASSERT_EQ(r.status, 200) << r.body;
    if (r.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("Sure")) ++sure;
  }
  EXPECT_GT(sure, 0);  // unconstrained, the model does not always write JSON
  for (int seed = 1; seed <= 8; ++seed) {
    const HttpReply r = post_json(s, "/v1/chat/completions",
                                  chat_body("JSON please", str_cat(R"("response_format": {"type": "json_object"}, "stream": true,
                                            "max_tokens": 200, "temperature": 1, "seed": )", seed)));
    ASSERT_EQ(r.status, 200) << r.body;
    std::string content, finish;
    for (const std::string& data : sse_data(r.body)) {
      if (data == "[DONE]") continue;
      const OJson chunk = OJson::parse(data);
      if (chunk["choices"].empty()) continue;
      const OJson& c = chunk["choices"][0];
      if (c["delta"].contains("content") && c["delta"]["content"].is_string()) content += c["delta"]["content"].get<std::string>();
      if (c["finish_reason"].is_string()) finish = c["finish_reason"];
    }
    ASSERT_EQ(finish, "stop") << content;
    OJson j;
    ASSERT_NO_THROW(j = OJson::parse(content)) << content;
    EXPECT_TRUE(j.is_object()) << content;
    EXPECT_EQ(content, "{}");
  }
}

TEST(StructuredOutput, GbnfGrammarOnCompletions) {
  TestServer s(demo_model_dir());
  const HttpReply r = post_json(s, "/v1/completions", R"({"prompt": "Answer:", "max_tokens": 20, "seed": 2,
      "grammar": "root ::= (\"yes\" | \"no\") \", \" [0-9]{1,2}"})");
  ASSERT_EQ(r.status, 200) << r.body;
  const OJson choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");
  const std::string text = choice["text"];
  EXPECT_TRUE(text.starts_with("yes, ") || text.starts_with("no, ")) << text;
  const std::string digits = text.substr(text.find(", ") + 2);
  EXPECT_TRUE(!digits.empty() && digits.size() <= 2 && digits.find_first_not_of("0123456789") == std::string::npos) << text;
}

TEST(StructuredOutput, BadConstraintsAre400sNamingTheParameter) {
  TestServer s(demo_model_dir());
  const std::pair<std::string, std::string> cases[] = {
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}})",
       "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "contentMediaType": "text/html"}}})",
       "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}}})",
       "response_format.json_schema.schema"},
      {R"("response_format": {"type": "json_schema"})", "response_format.json_schema"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})", "response_format.json_schema.schema"},
      {R"("grammar": "root ::= [a-z")", "grammar"},
      {R"("grammar": "root ::= other")", "grammar"},
      {R"("grammar": "root ::= root \"a\"")", "grammar"},
      {R"("grammar": 5)", "grammar"},
      {R"("grammar": "root ::= \"a\"", "response_format": {"type": "json_object"})", "grammar"},
      {R"("response_format": {"type": "json_object"}, "ignore_eos": true)", ""},
  };
  for (const auto& [fields, param] : cases) {
    const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("x", fields));
    EXPECT_EQ(r.status, 400) << fields << "\n" << r.body;
    const OJson error = r.json()["error"];
    if (!param.empty()) {
      EXPECT_EQ(error["param"], param) << fields << "\n" << r.body;
    }
    EXPECT_FALSE(error["message"].get<std::string>().empty());
  }
  // A syntax error says where.
  const HttpReply r = post_json(s, "/v1/chat/completions", chat_body("x", R"("grammar": "root ::= \"a\"\nitem ::= [b-")"));
  ASSERT_EQ(r.status, 400) << r.body;
  const std::string message = r.json()["error"]["message"];
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  EXPECT_NE(message.find("column"), std::string::npos) << message;
  // The unsupported keyword is named.
  const HttpReply k = post_json(s, "/v1/chat/completions", chat_body("x", R"("response_format": {"type": "json_schema",
      "json_schema": {"name": "x", "schema": {"type": "string", "contentMediaType": "text/html"}}})"));
  EXPECT_NE(k.json()["error"]["message"].get<std::string>().find("contentMediaType"), std::string::npos) << k.body;
}

}  // namespace
}  // namespace glass::test
