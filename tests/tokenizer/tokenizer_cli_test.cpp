// glass tokenize / detokenize / bench-tokenizer end to end, on the demo model's tokenizer
// (the real Qwen2.5 tokenizer.json, bundled with the build).
#include <gtest/gtest.h>

#include <sstream>

#include "base/json_fields.h"
#include "support/test_support.h"
#include "tiny_tokenizer.h"

namespace glass {
namespace {

using test::run_glass;
using test::shell_quote;

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(TokenizeCli, TextPrintsIdsAndTokens) {
  const auto r = run_glass("tokenize --text 'Hello, 世界' --show-pieces");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = lines(r.out);
  ASSERT_GE(out.size(), 3u);
  EXPECT_EQ(out[0], "9707 11 220 99489");
  EXPECT_EQ(out[1], "4 tokens");
  EXPECT_NE(r.out.find("\"Ġ\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"世界\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\" 世界\""), std::string::npos) << r.out;  // a pre-tokenizer piece
  EXPECT_NE(r.err.find("demo model's tokenizer"), std::string::npos) << r.err;
}

TEST(TokenizeCli, JsonlRoundTripsThroughDetokenize) {
  const std::string model = "-m " + shell_quote(test::demo_model_dir() + "/tokenizer.json");
  const std::vector<std::string> texts = {"Hello", "你好，世界 🤗", "<|im_start|>user\nhi<|im_end|>", "  spaced  out  ", ""};
  std::string in;
  for (const auto& t : texts) in += Json(t).dump() + "\n";
  auto r = run_glass("tokenize --jsonl " + model, in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto id_lines = lines(r.out);
  ASSERT_EQ(id_lines.size(), texts.size()) << r.out;
  EXPECT_EQ(id_lines[0], "[9707]");
  EXPECT_EQ(Json::parse(id_lines[2])[0], 151644);
  EXPECT_EQ(id_lines[4], "[]");
  r = run_glass("detokenize --jsonl " + model, r.out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto text_lines = lines(r.out);
  ASSERT_EQ(text_lines.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(Json::parse(text_lines[i]), texts[i]);
}

TEST(TokenizeCli, SpecialTokensAsTextAndSkipped) {
  auto r = run_glass("tokenize --jsonl --special-as-text", "\"<|im_end|>\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("151645"), std::string::npos) << r.out;
  r = run_glass("detokenize --skip-special --ids '9707 151645 11'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello,\n");
}

TEST(TokenizeCli, BenchReportsThroughput) {
  test::TempDir tmp;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "The quick brown fox 跳过了懒狗. ";
  test::write_string(tmp.file("text.txt"), text);
  test::write_string(tmp.file("tiny.json"), test::tiny_tokenizer_json({{"T", "h"}}).dump());  // Qwen2's split regex
  const auto r = run_glass("bench-tokenizer --repeat 2 -m " + shell_quote(tmp.file("tiny.json")) + " " +
                           shell_quote(tmp.file("text.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("MB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Mtok/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hand-written split"), std::string::npos) << r.out;
}

TEST(TokenizeCli, BadInputGivesClearErrors) {
  test::TempDir tmp;
  test::write_string(tmp.file("tokenizer.json"), "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
  // A small tokenizer.json loads in no time, so most cases use it.
  test::write_string(tmp.file("tiny.json"), test::tiny_tokenizer_json({}).dump());
  const std::string tiny = " -m " + shell_quote(tmp.file("tiny.json"));
  struct Case {
    std::string args, stdin_text, expect;
  };
  const std::vector<Case> cases = {
      {"tokenize --text x -m " + shell_quote(tmp.file("none")), "", "no such file or folder"},
      {"tokenize --text x -m " + shell_quote(tmp.path()), "", "model.type: \"WordPiece\" is not supported"},
      {"tokenize --jsonl" + tiny, "\"ok\"\nnot json\n", "stdin line 2: not valid JSON"},
      {"tokenize --jsonl" + tiny, "[1]\n", "stdin line 1: expected a JSON string"},
      {"detokenize --jsonl" + tiny, "[97, -1]\n", "stdin line 1: -1 is not a token id"},
      {"detokenize --ids '97 256'" + tiny, "", "token id 256 is not in the vocabulary"},
      {"tokenize", "", "exactly one of --text and --jsonl"},
      {"detokenize --ids 1 --jsonl", "", "exactly one of --ids and --jsonl"},
      {"bench-tokenizer " + shell_quote(tmp.file("missing.txt")) + tiny, "", "missing.txt"},
  };
  for (const auto& c : cases) {
    const auto r = run_glass(c.args, c.stdin_text);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_LT(r.exit_code, 128) << c.args << ": crashed\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace glass
