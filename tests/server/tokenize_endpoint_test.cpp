// POST /tokenize and /detokenize in llama.cpp's and vLLM's shapes: the ids are glass
// tokenize's, the text round-trips, bad input is 400 naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/chat_prompt.h"
#include "server_harness.h"
#include "support/test_support.h"
#include "tokenizer/utf8.h"

namespace glass::test {
namespace {

std::vector<int32_t> ids_of(const OJson& tokenize_reply) {
  std::vector<int32_t> ids;
  for (const OJson& t : tokenize_reply["tokens"]) ids.push_back(t.is_object() ? t["id"].get<int32_t>() : t.get<int32_t>());
  return ids;
}

void expect_400(const HttpReply& r, const std::string& param, const std::string& in_message) {
  EXPECT_EQ(r.status, 400) << r.body;
  const OJson j = OJson::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_EQ(j["error"]["param"], param) << r.body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(in_message), std::string::npos) << r.body;
}

const std::vector<std::string> kTexts = {"Hello world", "  leading spaces and\ttabs\n\nnew lines", "数字 123 and 中文 text",
                                         "emoji 🦜 and 𒀀 cuneiform", "<|im_start|>user\nHi<|im_end|>", ""};

TEST(TokenizeEndpoint, IdsAreTheCommandLinesAndDetokenizeRoundTrips) {
  TestServer s(demo_model_dir());
  // glass tokenize --jsonl: one JSON array of ids per line, same model.
  std::string input;
  for (const std::string& t : kTexts) input += OJson(t).dump() + "\n";
  const CommandResult cli = run_glass("tokenize -m " + shell_quote(demo_model_dir()) + " --jsonl", input);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::vector<std::vector<int32_t>> expected;
  for (size_t pos = 0; pos < cli.out.size();) {
    const size_t end = cli.out.find('\n', pos);
    expected.push_back(OJson::parse(cli.out.substr(pos, end - pos)).get<std::vector<int32_t>>());
    pos = end + 1;
  }
  ASSERT_EQ(expected.size(), kTexts.size());

  for (size_t i = 0; i < kTexts.size(); ++i) {
    SCOPED_TRACE(kTexts[i]);
    for (const char* field : {"content", "prompt"}) {
      const HttpReply r = post_json(s, "/tokenize", OJson{{field, kTexts[i]}}.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const OJson j = r.json();
      EXPECT_EQ(ids_of(j), expected[i]) << field;
      EXPECT_EQ(j["count"], expected[i].size());
      EXPECT_EQ(j["max_model_len"], s.context_length());
    }
    const HttpReply d = post_json(s, "/detokenize", OJson{{"tokens", expected[i]}}.dump());
    ASSERT_EQ(d.status, 200) << d.body;
    EXPECT_EQ(d.json()["content"], kTexts[i]);
    EXPECT_EQ(d.json()["prompt"], kTexts[i]);
  }
}

TEST(TokenizeEndpoint, PiecesAreTextOrBytes) {
  TestServer s(demo_model_dir());
  const std::string text = "Hi 𒀀 🦜";
  const OJson j = post_json(s, "/tokenize", OJson{{"content", text}, {"with_pieces", true}}.dump()).json();
  std::string joined;
  size_t byte_pieces = 0;
  for (const OJson& t : j["tokens"]) {
    ASSERT_TRUE(t.is_object()) << t;
    const std::string bytes(s.tokenizer().token_bytes(t["id"].get<int32_t>()));
    if (utf8::is_valid(bytes)) {
      EXPECT_EQ(t["piece"], bytes);
    } else {
      ++byte_pieces;
      ASSERT_TRUE(t["piece"].is_array()) << t;
      std::string from_array;
      for (const OJson& b : t["piece"]) from_array += static_cast<char>(b.get<int>());
      EXPECT_EQ(from_array, bytes);
    }
    joined += bytes;
  }
  EXPECT_EQ(joined, text);
  EXPECT_GT(byte_pieces, 0u) << "these characters span tokens, whose pieces are bytes";
}

TEST(TokenizeEndpoint, SpecialTokensAndMessages) {
  TestServer s(demo_model_dir());
  const std::string special = "<|im_end|>";
  EXPECT_EQ(ids_of(post_json(s, "/tokenize", OJson{{"content", special}}.dump()).json()), std::vector<int32_t>{151645});
  EXPECT_GT(post_json(s, "/tokenize", OJson{{"content", special}, {"parse_special", false}}.dump()).json()["count"], 1)
      << "parse_special false: written as text";
  // Qwen's tokenizer adds no special tokens: the switch is accepted, the ids the same.
  EXPECT_EQ(ids_of(post_json(s, "/tokenize", R"({"prompt": "Hi", "add_special_tokens": false})").json()),
            ids_of(post_json(s, "/tokenize", R"({"content": "Hi", "add_special": true})").json()));

  const OJson messages = OJson::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
  const auto with_prompt = encode_chat(s.chat_template(), s.tokenizer(), messages).ids;
  const auto without_prompt = encode_chat(s.chat_template(), s.tokenizer(), messages, nullptr, false).ids;
  ASSERT_NE(with_prompt, without_prompt);
  HttpReply r = post_json(s, "/tokenize", OJson{{"messages", messages}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ids_of(r.json()), with_prompt) << "add_generation_prompt defaults to true";
  r = post_json(s, "/tokenize", OJson{{"messages", messages}, {"add_generation_prompt", false}, {"model", "test-model"}}.dump());
  EXPECT_EQ(ids_of(r.json()), without_prompt);
  // The same ids a chat completion's prompt has.
  const OJson chat = post_json(s, "/v1/chat/completions",
                               OJson{{"messages", messages}, {"max_tokens", 1}, {"return_token_ids", true}}.dump())
                         .json();
  EXPECT_EQ(chat["prompt_token_ids"].get<std::vector<int32_t>>(), with_prompt);
}

TEST(TokenizeEndpoint, BadInputIs400NamingTheField) {
  TestServer s(demo_model_dir());
  expect_400(post_json(s, "/tokenize", R"({"content": "a", "messages": [{"role": "user", "content": "b"}]})"), "messages",
             "give one of 'content', 'prompt' and 'messages'");
  expect_400(post_json(s, "/tokenize", R"({"content": "a", "prompt": "b"})"), "prompt", "'content' and 'prompt'");
  expect_400(post_json(s, "/tokenize", R"({})"), "content", "give the text");
  expect_400(post_json(s, "/tokenize", R"({"content": 5})"), "content", "'content' must be a string, got an integer");
  expect_400(post_json(s, "/tokenize", R"({"prompt": [1, 2]})"), "prompt", "'prompt' must be a string");
  expect_400(post_json(s, "/tokenize", R"({"content": "a", "with_pieces": "yes"})"), "with_pieces", "a boolean");
  expect_400(post_json(s, "/tokenize", R"({"content": "a", "add_special": true, "add_special_tokens": false})"),
             "add_special_tokens", "disagree");
  expect_400(post_json(s, "/tokenize", R"({"messages": [{"content": "b"}]})"), "messages[0].role", "required");
  expect_400(post_json(s, "/tokenize", R"({"messages": "Hi"})"), "messages", "an array");
  expect_400(post_json(s, "/tokenize", R"({"messages": [{"role": "user", "content": "b"}], "add_generation_prompt": 1})"),
             "add_generation_prompt", "a boolean");
  EXPECT_EQ(post_json(s, "/tokenize", R"({"content": "a", "model": "other"})").status, 404);
  EXPECT_EQ(post_json(s, "/tokenize", R"({"content": "a")").status, 400) << "malformed JSON";

  const std::string vocab = std::to_string(s.tokenizer().vocab_size());
  expect_400(post_json(s, "/detokenize", R"({"tokens": [9707, )" + vocab + "]}"), "tokens", "'tokens[1]' = " + vocab);
  expect_400(post_json(s, "/detokenize", R"({"tokens": [-1]})"), "tokens", "not a token id");
  expect_400(post_json(s, "/detokenize", R"({"tokens": [99999999999]})"), "tokens", "not a token id");
  expect_400(post_json(s, "/detokenize", R"({"tokens": ["9707"]})"), "tokens[0]", "an integer");
  expect_400(post_json(s, "/detokenize", R"({"tokens": 9707})"), "tokens", "an array of token ids");
  expect_400(post_json(s, "/detokenize", R"({})"), "tokens", "required");
  // Only the bare paths, as llama.cpp and vLLM serve them.
  EXPECT_EQ(post_json(s, "/v1/tokenize", R"({"content": "a"})").status, 404);
}

}  // namespace
}  // namespace glass::test
