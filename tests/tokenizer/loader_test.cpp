// Loading tokenizer.json and the vocab.json + merges.txt fallback; bad input gives a
// glass::Error naming the file and the field, never a crash.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"
#include "support/test_support.h"
#include "tiny_tokenizer.h"

namespace glass {
namespace {

using test::thrown_error;

std::string load_error(const Json& j) {
  return thrown_error([&] { test::tokenizer_of(j); });
}

void expect_error(const Json& j, const std::string& needle) {
  const std::string e = load_error(j);
  EXPECT_NE(e.find("test tokenizer.json"), std::string::npos) << e;
  EXPECT_NE(e.find(needle), std::string::npos) << "expected \"" << needle << "\" in: " << e;
}

Json with_merges() { return test::tiny_tokenizer_json({{"a", "b"}, {"ab", "c"}}); }

TEST(TokenizerLoader, BothMergeFormsGiveTheSameModel) {
  Json strings = with_merges();
  Json pairs = strings;
  for (Json& m : pairs["model"]["merges"]) {
    const std::string s = m;
    m = Json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  const Tokenizer a = test::tokenizer_of(strings), b = test::tokenizer_of(pairs);
  EXPECT_EQ(a.encode("abcab"), b.encode("abcab"));
  EXPECT_EQ(a.encode("abcab"), (std::vector<int32_t>{257, 256}));
}

TEST(TokenizerLoader, RejectsTextThatIsNotJson) {
  const std::string whole = with_merges().dump();
  for (const std::string& text : {std::string(""), std::string("not json"), std::string("{\"model\": {\"vocab\": {"),
                                  std::string("\x89PNG\r\n\x1a\n\0\0", 10), whole.substr(0, whole.size() / 2),
                                  whole.substr(0, whole.size() - 1), whole + "}"}) {
    const std::string e = thrown_error([&] { Tokenizer::from_json(text, "test tokenizer.json"); });
    EXPECT_NE(e.find("test tokenizer.json: not valid JSON"), std::string::npos) << e;
  }
  EXPECT_NE(thrown_error([] { Tokenizer::from_json("[1, 2]", "test tokenizer.json"); }).find("not an object"),
            std::string::npos);
}

TEST(TokenizerLoader, RejectsAMissingOrBrokenModel) {
  Json j = with_merges();
  j.erase("model");
  expect_error(j, "model: missing");
  j["model"] = "BPE";
  expect_error(j, "model: must be an object");
  j = with_merges();
  j["model"].erase("vocab");
  expect_error(j, "model.vocab: missing");
  j = with_merges();
  j["model"]["vocab"] = Json::array();
  expect_error(j, "model.vocab: must be an object");
  j = with_merges();
  j["model"].erase("merges");
  expect_error(j, "model.merges: missing");
  j = with_merges();
  j["model"]["merges"] = "a b";
  expect_error(j, "model.merges: must be an array");
}

TEST(TokenizerLoader, RejectsUnsupportedModelTypes) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    Json j = with_merges();
    j["model"]["type"] = type;
    expect_error(j, str_cat("model.type: \"", type, "\" is not supported"));
  }
  Json j = with_merges();
  j["model"]["type"] = "Magic";
  expect_error(j, "unknown model type \"Magic\"");
  // WordPiece as transformers writes it: no merges, no type is also refused.
  j = Json{{"model", {{"vocab", {{"[UNK]", 0}}}, {"unk_token", "[UNK]"}}}};
  expect_error(j, "not a BPE model");
}

TEST(TokenizerLoader, RejectsBadVocabularyEntries) {
  auto bad = [](const Json& value) {
    Json j = with_merges();
    j["model"]["vocab"]["zz"] = value;
    return j;
  };
  expect_error(bad("12"), "model.vocab[\"zz\"]: a token id must be an integer, got string");
  expect_error(bad(1.5), "a token id must be an integer, got number");
  expect_error(bad(-1), "token id -1 is out of range");
  expect_error(bad(1ll << 40), "token id 1099511627776 is out of range");
  expect_error(bad(Json::object()), "a token id must be an integer, got an object");
  expect_error(bad(7), "id 7 is used by both");
  const std::string dup_key = R"({"model": {"type": "BPE", "vocab": {"a": 0, "a": 1}, "merges": []}})";
  EXPECT_NE(thrown_error([&] { Tokenizer::from_json(dup_key, "x.json"); }).find("model.vocab[\"a\"]: the token appears twice"),
            std::string::npos);
}

TEST(TokenizerLoader, RejectsMergesNamingUnknownTokens) {
  Json j = with_merges();
  j["model"]["merges"].push_back("q xyz");
  expect_error(j, "model.merges[2]: merge \"q xyz\": token \"xyz\" is not in the vocabulary");
  j = with_merges();
  j["model"]["merges"].push_back("x y");  // both known, "xy" is not
  expect_error(j, "the merged token \"xy\" is not in the vocabulary");
  j = with_merges();
  j["model"]["merges"].push_back(Json::array({"nope", "a"}));
  expect_error(j, "model.merges[2]: merge \"nope a\": token \"nope\" is not in the vocabulary");
  for (const Json& bad : {Json("ab"), Json("a b c"), Json(" a"), Json(Json::array({"a"})),
                          Json(Json::array({"a", "b", "c"})), Json(Json::array({"a", 1})), Json(3),
                          Json(Json::array({Json::array({"a"})}))}) {
    j = with_merges();
    j["model"]["merges"].push_back(bad);
    expect_error(j, "model.merges[2]");
  }
}

TEST(TokenizerLoader, RejectsUnsupportedPipelineParts) {
  Json j = with_merges();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error(j, "normalizer.type: normalizer \"Lowercase\" is not supported");
  j = with_merges();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(j, "pre-tokenizer \"Whitespace\" is not supported");
  j = with_merges();
  j["pre_tokenizer"]["pretokenizers"].erase(1);  // the ByteLevel step
  expect_error(j, "has no ByteLevel step");
  j = with_merges();
  j["pre_tokenizer"] = nullptr;
  expect_error(j, "pre_tokenizer: missing");
  j = with_merges();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j, "decoder \"WordPiece\" is not supported");
  j = with_merges();
  j.erase("decoder");
  expect_error(j, "decoder: missing");
  j = with_merges();
  j["post_processor"] = {{"type", "BertProcessing"}};
  expect_error(j, "post-processor \"BertProcessing\" is not supported");
  j = with_merges();
  j["truncation"] = {{"max_length", 512}};
  expect_error(j, "truncation: is set");
  j = with_merges();
  j["model"]["dropout"] = 0.1;
  expect_error(j, "model.dropout: BPE dropout");
  j = with_merges();
  j["model"]["byte_fallback"] = true;
  expect_error(j, "model.byte_fallback");
  j = with_merges();
  j["model"]["continuing_subword_prefix"] = "##";
  expect_error(j, "model.continuing_subword_prefix");
  j = with_merges();
  j["model"]["unk_token"] = "<unk>";
  expect_error(j, "model.unk_token: \"<unk>\" is not in the vocabulary");
  j = with_merges();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(?<"}};
  expect_error(j, "pre_tokenizer.pretokenizers[0].pattern: the pattern does not compile");
  j = with_merges();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  expect_error(j, "unknown split behavior \"Sideways\"");
  j = with_merges();
  j["added_tokens"] = {{{"content", "<x>"}}};
  expect_error(j, "added_tokens[0].id: missing");
  j = with_merges();
  j["added_tokens"] = {{{"id", 300}, {"content", 5}}};
  expect_error(j, "added_tokens[0].content: must be a string");
  j = with_merges();
  j["added_tokens"] = {{{"id", 300}, {"content", "<x>"}, {"special", "yes"}}};
  expect_error(j, "added_tokens[0].special: must be true or false");
}

// The same kind of file with another split regex: GPT-2's, through ByteLevel's use_regex,
// with add_prefix_space.
TEST(TokenizerLoader, Gpt2StyleByteLevelWithPrefixSpace) {
  Json j = test::tiny_tokenizer_json({{" ", "a"}, {" a", "b"}});
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  const Tokenizer t = test::tokenizer_of(j);
  EXPECT_FALSE(t.has_fast_split());
  // " ab" after the prefix space; GPT-2 keeps digits together.
  EXPECT_EQ(t.encode("ab 123"), (std::vector<int32_t>{test::id_of(t, " ab"), ' ', '1', '2', '3'}));
  EXPECT_EQ(t.pre_tokenize("ab 123"), (std::vector<std::string>{" ab", " 123"}));
  // No normalizer: the mark stays a piece of its own (" e", then U+0301's two bytes).
  EXPECT_EQ(t.encode("e\u0301"), (std::vector<int32_t>{' ', 'e', 0xCC, 0x81}));
}

TEST(TokenizerLoader, Cl100kPatternUsesTheFastPathWithThreeDigits) {
  const Tokenizer t = test::tokenizer_of(test::tiny_tokenizer_json({}, kCl100kSplitPattern));
  EXPECT_TRUE(t.has_fast_split());
  EXPECT_EQ(t.pre_tokenize("12345"), (std::vector<std::string>{"123", "45"}));
  EXPECT_EQ(t.pre_tokenize("12345", false), (std::vector<std::string>{"123", "45"}));
}

TEST(TokenizerLoader, TemplateProcessingAddsItsTokens) {
  Json j = test::tiny_tokenizer_json({});
  j["added_tokens"] = {test::added_token(300, "<bos>", true), test::added_token(301, "<eos>", true)};
  j["post_processor"] = Json::parse(R"({
    "type": "Sequence",
    "processors": [
      {"type": "ByteLevel"},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
       "pair": [],
       "special_tokens": {"<bos>": {"id": "<bos>", "ids": [300], "tokens": ["<bos>"]},
                          "<eos>": {"id": "<eos>", "ids": [301], "tokens": ["<eos>"]}}}]})");
  const Tokenizer t = test::tokenizer_of(j);
  EXPECT_EQ(t.encode("x"), (std::vector<int32_t>{300, 'x', 301}));
  EXPECT_EQ(t.encode("x", {.add_special_tokens = false}), (std::vector<int32_t>{'x'}));
  j["post_processor"]["processors"][1]["special_tokens"].erase("<eos>");
  expect_error(j, "no entry for \"<eos>\"");
}

// Found by fuzz_tokenizer_json: a template whose special token names an id that is no
// token made encode return that id.
TEST(TokenizerLoader, RejectsATemplateIdThatIsNoToken) {
  Json j = test::tiny_tokenizer_json({});
  j["added_tokens"] = {test::added_token(300, "<bos>", true)};
  j["post_processor"] = Json::parse(R"({"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [], "special_tokens": {"<bos>": {"id": "<bos>", "ids": [372], "tokens": ["<bos>"]}}})");
  expect_error(j, "post_processor.special_tokens: the template adds id 372, which is not in the vocabulary or added_tokens");
  j["post_processor"]["special_tokens"]["<bos>"]["ids"] = {300};
  EXPECT_EQ(test::tokenizer_of(j).encode("x"), (std::vector<int32_t>{300, 'x'}));
}

TEST(TokenizerLoader, LoadsFromAFileOrAFolderAndNamesMissingOnes) {
  test::TempDir dir;
  test::write_string(dir.file("tokenizer.json"), with_merges().dump());
  EXPECT_EQ(Tokenizer::load(dir.path()).encode("abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(Tokenizer::load(dir.file("tokenizer.json")).source(), dir.file("tokenizer.json"));
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.file("none")); }).find("no such file or folder"), std::string::npos);
  test::TempDir empty;
  EXPECT_NE(thrown_error([&] { Tokenizer::load(empty.path()); }).find("no tokenizer.json, and no vocab.json + merges.txt"),
            std::string::npos);
  test::write_string(dir.file("tokenizer.json"), "{\"model\": 1");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find(dir.file("tokenizer.json") + ": not valid JSON"),
            std::string::npos);
}

TEST(TokenizerLoader, RefusesAnOversizedFileBeforeReadingIt) {
  test::TempDir dir;
  const std::string path = dir.file("tokenizer.json");
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, (1ll << 30) + 1), 0);  // sparse: no disk used
  ::close(fd);
  EXPECT_NE(thrown_error([&] { Tokenizer::load(path); }).find("is too large for a tokenizer file"), std::string::npos);
}

// vocab.json + merges.txt + tokenizer_config.json, as older checkpoints ship them.
class LegacyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    Json vocab = test::tiny_tokenizer_json({{"a", "b"}, {"ab", "c"}})["model"]["vocab"];
    test::write_string(dir.file("vocab.json"), vocab.dump());
    test::write_string(dir.file("merges.txt"), "#version: 0.2\na b\r\nab c\n\n");
    test::write_string(dir.file("tokenizer_config.json"),
                       Json{{"tokenizer_class", "Qwen2Tokenizer"},
                            {"added_tokens_decoder", {{"300", {{"content", "<|end|>"}, {"special", true},
                                                               {"lstrip", false}, {"rstrip", false},
                                                               {"normalized", false}, {"single_word", false}}}}}}
                           .dump());
  }
  test::TempDir dir;
};

TEST_F(LegacyFiles, LoadLikeTheirTokenizerJson) {
  const Tokenizer t = Tokenizer::load(dir.path());
  EXPECT_TRUE(t.has_fast_split());
  EXPECT_EQ(t.encode("abc<|end|>e\u0301"), (std::vector<int32_t>{257, 300, 0xC3, 0xA9}));  // NFC: é
  EXPECT_TRUE(t.is_special(300));
}

TEST_F(LegacyFiles, NameTheBadLineOrField) {
  test::write_string(dir.file("merges.txt"), "#version: 0.2\na b\nab  c\n");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find("merges.txt: line 3: \"ab  c\" is not two tokens"),
            std::string::npos);
  test::write_string(dir.file("merges.txt"), "a b\nq zz\n");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find("merges.txt: line 2: merge \"q zz\": token \"zz\""),
            std::string::npos);
  test::write_string(dir.file("merges.txt"), "a b\n");
  test::write_string(dir.file("tokenizer_config.json"), R"({"tokenizer_class": "BertTokenizer"})");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find("tokenizer_class: \"BertTokenizer\" is not supported"),
            std::string::npos);
  test::write_string(dir.file("tokenizer_config.json"), R"({"added_tokens_decoder": {"x": {"content": "<y>"}}})");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find("added_tokens_decoder.x: the key must be a token id"),
            std::string::npos);
  test::write_string(dir.file("vocab.json"), "[]");
  EXPECT_NE(thrown_error([&] { Tokenizer::load(dir.path()); }).find("vocab.json: the top level must be an object"),
            std::string::npos);
}

TEST(Tokenizer, CopiesShareOneModelAndWorkAcrossThreadsEncodeDeterministically) {
  const Tokenizer a = test::tokenizer_of(with_merges());
  const Tokenizer b = a;  // cheap: shares the loaded data
  EXPECT_EQ(a.encode("abcabc"), b.encode("abcabc"));
}

}  // namespace
}  // namespace glass
