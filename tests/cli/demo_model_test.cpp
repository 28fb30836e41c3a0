// The built-in demo model talks (issue 18): random weights shaped by
// `random-model --shape-replies 151645` so that a reply is a chain of common words that
// ends with <|im_end|> after 20 to 80 tokens (random_checkpoint.h). Before, a constant
// chance of <|im_end|> at every step ended the Quick Start's reply before its first word
// for 13 of 20 seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "base/json_fields.h"
#include "model/random_checkpoint.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_glass;
using test::shell_quote;

bool has_letter(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
}

size_t word_count(const std::string& text) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string word; in >> word;) ++n;
  return n;
}

// The README's Quick Start command, as a new user types it (no -n, no --chat): the raw
// prompt's last token (" is") is no chain word, so the reply starts at the first stage and
// fills run's default limit of 20 tokens with words.
TEST(DemoModel, QuickStartPrintsTextForEverySeed) {
  for (int seed = 1; seed <= 20; ++seed) {
    const auto r = run_glass("run -p 'Hello, my name is' --seed " + std::to_string(seed));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has_letter(r.out)) << "seed " << seed << ": stdout \"" << r.out << "\"\n" << r.err;
    EXPECT_GE(word_count(r.out), 20u) << "seed " << seed << ": " << r.out;
  }
}

// Replies to "Hello", one glass chat process per seed (chat seeds each turn's sampler
// afresh, so one process would give the same reply again).
std::vector<Json> fresh_replies(const std::string& args, int seeds) {
  std::vector<Json> replies;
  for (int seed = 1; seed <= seeds; ++seed) {
    const auto r = run_glass("chat --format jsonl -n 200 --seed " + std::to_string(seed) + " " + args, "Hello\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::vector<Json> lines = test::json_lines(r.out);
    EXPECT_EQ(lines.size(), 1u) << r.out;
    replies.insert(replies.end(), lines.begin(), lines.end());
  }
  return replies;
}

// Each reply ended with <|im_end|> (eos; the -n limit, 200, is well above 80) after 20 to
// 80 tokens, and is words.
void expect_talks(const std::vector<Json>& replies) {
  for (const Json& j : replies) {
    EXPECT_EQ(j["finish_reason"], "eos") << j.dump();
    const int64_t tokens = j["completion_tokens"].get<int64_t>();  // <|im_end|> included
    EXPECT_GE(tokens, 20) << j.dump();
    EXPECT_LE(tokens, 80) << j.dump();
    const std::string reply = j["reply"].get<std::string>();
    EXPECT_TRUE(has_letter(reply) &&
                std::all_of(reply.begin(), reply.end(), [](char c) { return c == ' ' || (c >= 'a' && c <= 'z'); }))
        << reply;
  }
}

// Through the chat template, with the demo's own sampling settings (generation_config.json:
// temperature 0.7, top_k 20, top_p 0.8, repetition_penalty 1.05).
TEST(DemoModel, ChatRepliesEndWithImEndAfterTwentyToEightyTokens) { expect_talks(fresh_replies("", 20)); }

// Also at temperature 1 with nothing cut (no top_k, top_p or repetition penalty), where
// only the weights keep the ~150k other tokens out.
TEST(DemoModel, ChatRepliesEndWithImEndAtTemperatureOne) {
  expect_talks(fresh_replies("--temp 1 --top-k 0 --top-p 1 --repetition-penalty 1", 10));
}

// Greedy decoding walks the chain one stage a token (advancing is a little likelier than
// staying): one word per stage, then <|im_end|>.
TEST(DemoModel, GreedyReplyIsOneWordPerStage) {
  const std::vector<Json> replies = fresh_replies("--greedy", 1);  // the seed changes nothing
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0]["finish_reason"], "eos") << replies[0].dump();
  EXPECT_EQ(replies[0]["completion_tokens"], kReplyStages + 1) << replies[0].dump();
}

// Another seed gives another chain of words that behaves the same; the same seed, the same
// bytes.
TEST(DemoModel, RandomModelShapesRepliesForAnySeed) {
  test::TempDir a, b;
  const std::string args = "random-model --like demo --shape-replies 151645 --seed 7 --quiet --out ";
  ASSERT_EQ(run_glass(args + shell_quote(a.path())).exit_code, 0);
  ASSERT_EQ(run_glass(args + shell_quote(b.path())).exit_code, 0);
  EXPECT_EQ(test::read_string(a.file("model.safetensors")), test::read_string(b.file("model.safetensors")));
  EXPECT_NE(test::read_string(a.file("model.safetensors")),
            test::read_string(test::demo_model_dir() + "/model.safetensors"));  // the demo's seed is 1
  expect_talks(fresh_replies("-m " + shell_quote(a.path()), 5));
}

TEST(DemoModel, ShapingRefusesTiedEmbeddingsAndUnknownEndTokens) {
  test::TempDir tmp;
  auto r = run_glass("random-model --like qwen2.5-0.5b --shape-replies 151645 --out " + shell_quote(tmp.file("tied")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("reply shaping needs untied embeddings"), std::string::npos) << r.err;
  r = run_glass("random-model --like demo --shape-replies 151936 --out " + shell_quote(tmp.file("past")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("the reply end token 151936 is not below the vocabulary size 151936"), std::string::npos)
      << r.err;
  r = run_glass("random-model --like demo --end-token 151645 --out " + shell_quote(tmp.file("old")));
  EXPECT_NE(r.exit_code, 0);  // the old flag is gone: --shape-replies replaces it
}

}  // namespace
}  // namespace glass
