// A GGUF file's tokenizer (tokenizer.ggml.*) gives the ids of the tokenizer.json it was
// converted from, and refuses what it cannot run with the key named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "support/test_support.h"
#include "tiny_tokenizer.h"

namespace glass {
namespace {

// What llama.cpp's converter writes for a tokenizer.json: every id's string, normal for the
// model's vocabulary, control / user-defined for added tokens, unused padding up to `rows`.
struct Converted {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  GgmlVocabulary view() const {
    GgmlVocabulary v;
    v.model = "gpt2";
    v.pre = "qwen2";
    for (const std::string& t : tokens) v.tokens.push_back(t);
    for (const std::string& m : merges) v.merges.push_back(m);
    v.token_types = types;
    return v;
  }
};

Converted convert(const Json& j, size_t rows) {
  Converted c;
  c.tokens.resize(rows);
  c.types.assign(rows, static_cast<int32_t>(GgmlTokenType::kUnused));
  for (size_t i = 0; i < rows; ++i) c.tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [piece, id] : j["model"]["vocab"].items()) {
    c.tokens[id.get<size_t>()] = piece;
    c.types[id.get<size_t>()] = static_cast<int32_t>(GgmlTokenType::kNormal);
  }
  for (const Json& a : j["added_tokens"]) {
    c.tokens[a["id"].get<size_t>()] = a["content"].get<std::string>();
    c.types[a["id"].get<size_t>()] =
        static_cast<int32_t>(a["special"].get<bool>() ? GgmlTokenType::kControl : GgmlTokenType::kUserDefined);
  }
  for (const Json& m : j["model"]["merges"]) c.merges.push_back(m.get<std::string>());
  return c;
}

Json tiny_with_added_tokens() {
  Json j = test::tiny_tokenizer_json({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {"o", "r"}});
  j["added_tokens"] = {test::added_token(300, "<|im_start|>", true), test::added_token(301, "<|im_end|>", true),
                       test::added_token(302, "<tool_call>", false)};
  return j;
}

std::string error_of(const GgmlVocabulary& v) {
  return test::thrown_error([&] { Tokenizer::from_ggml_vocabulary(v, "m.gguf"); });
}

TEST(GgmlVocabulary, GivesTheIdsOfItsTokenizerJson) {
  const Json j = tiny_with_added_tokens();
  const Tokenizer reference = test::tokenizer_of(j);
  const Converted c = convert(j, 320);
  const Tokenizer t = Tokenizer::from_ggml_vocabulary(c.view(), "m.gguf");
  for (const char* text : {"hello world", "<|im_start|>user\nhello<|im_end|>", "a <tool_call> b", "caf\xC3\xA9 e\xCC\x81",
                           "  spaces\t\ttabs\r\n", "1234567 numbers", ""}) {
    EXPECT_EQ(t.encode(text), reference.encode(text)) << text;
    EXPECT_EQ(t.encode(text, {.parse_special = false}), reference.encode(text, {.parse_special = false})) << text;
  }
  EXPECT_EQ(t.vocab_size(), reference.vocab_size());  // the padding rows are no tokens
  EXPECT_FALSE(t.has_token(310));
  EXPECT_TRUE(t.is_special(301));
  EXPECT_FALSE(t.is_special(302));
  const std::vector<int32_t> ids = t.encode("<|im_start|>hello<tool_call>");
  EXPECT_EQ(t.decode(ids, true), reference.decode(ids, true));
  EXPECT_EQ(t.token_id("<|im_end|>"), 301);
}

TEST(GgmlVocabulary, AddsBosOnlyWhenAsked) {
  const Converted c = convert(tiny_with_added_tokens(), 303);
  GgmlVocabulary v = c.view();
  v.bos_id = 300;
  EXPECT_EQ(Tokenizer::from_ggml_vocabulary(v, "m.gguf").encode("he").front(), 256);
  v.add_bos = true;
  EXPECT_EQ(Tokenizer::from_ggml_vocabulary(v, "m.gguf").encode("he"), (std::vector<int32_t>{300, 256}));
  v.bos_id = 303;
  EXPECT_NE(error_of(v).find("m.gguf: tokenizer.ggml.bos_token_id: add_bos_token is true but the BOS id 303"),
            std::string::npos);
}

TEST(GgmlVocabulary, RefusesWhatItCannotRunNamingTheKey) {
  const Converted c = convert(tiny_with_added_tokens(), 305);
  auto expect_error = [](const GgmlVocabulary& v, const std::string& want) {
    const std::string e = error_of(v);
    EXPECT_NE(e.find(want), std::string::npos) << e;
  };
  GgmlVocabulary v = c.view();
  v.model = "llama";
  expect_error(v, "m.gguf: tokenizer.ggml.model is \"llama\"");
  EXPECT_THROW(Tokenizer::from_ggml_vocabulary(v, "m.gguf"), Unsupported);
  v = c.view();
  v.pre = "llama3";
  expect_error(v, "tokenizer.ggml.pre is \"llama3\"");
  v = c.view();
  v.token_types[7] = 6;
  expect_error(v, "tokenizer.ggml.token_type[7] is a byte token");
  v.token_types[7] = 9;
  expect_error(v, "m.gguf: tokenizer.ggml.token_type[7]: unknown token type 9");
  v = c.view();
  v.token_types.pop_back();
  expect_error(v, "tokenizer.ggml.token_type: has 304 entries for 305 tokens");
  v = c.view();
  v.merges[2] = "he zz";
  expect_error(v, "m.gguf: tokenizer.ggml.merges[2]: merge \"he zz\": token \"zz\" is not in the vocabulary");
  v.merges[2] = "hell";
  expect_error(v, "tokenizer.ggml.merges[2]: \"hell\" is not two tokens separated by one space");
  v = c.view();
  v.tokens[5] = v.tokens[6];
  expect_error(v, "m.gguf: tokenizer.ggml.tokens[6]: \"");
  v = c.view();
  v.tokens.clear();
  v.token_types.clear();
  expect_error(v, "tokenizer.ggml.tokens: missing or empty");
}

}  // namespace
}  // namespace glass
